// The small models the contract runs on every device, in ONNX's text syntax,
// each with inputs. Shapes are static (OPENCL and LEVEL_ZERO compile static
// shapes only) and values are small multiples of 1/8, exact in float32.
#pragma once

#include <string>
#include <vector>

#include "tests/driver_contract/contract.h"

namespace hetero::contract {

struct TestModel {
  std::string name;
  std::string text;
  Tensors inputs;
};

// MatMul by a constant, Relu, Neg: two outputs, y and z.
const TestModel& two_outputs_model();
// y = Relu(x - b) * c, z = y + (x - b), x_again = Identity(x): an input
// broadcast against another, a value two nodes read, an input nothing reads
// ("unused"), an output that is an input.
const TestModel& three_inputs_model();
// Conv + bias, Relu, MaxPool, GlobalAveragePool, Flatten, Softmax.
const TestModel& small_cnn_model();
// All three.
std::vector<const TestModel*> test_models();

// two_outputs_model()'s y for its inputs, worked out by hand.
std::vector<float> two_outputs_expected_y();

// Relu then ONNX Runtime's contrib op com.microsoft.Inverse, which no driver
// has a kernel for.
extern const char* const kReluInverseModel;
// MatMul and Relu with a dynamic batch dim N.
extern const char* const kDynamicBatchModel;

}  // namespace hetero::contract
