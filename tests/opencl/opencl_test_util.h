// Shared by the OpenCL tests: one runtime with the build tree's drivers, ONNX
// text models with random initializers, and running a model on a device and
// comparing with the CPU driver (rtol 1e-3, atol 1e-4 as the model tests).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/runtime.h"
#include "core/tensor.h"

namespace hetero::test {

core::Runtime& runtime();
// True when the OPENCL driver loaded and lists a device (PoCL in the tests).
bool have_opencl();

// At the start of a test that needs the OpenCL device: skipped in the run
// without an OpenCL platform, failed when PoCL is missing anywhere else.
#define REQUIRE_OPENCL()                                                                        \
  if (std::getenv("HETERO_TEST_NO_OPENCL")) GTEST_SKIP() << "run without an OpenCL platform"; \
  if (!have_opencl()) GTEST_FAIL() << "no OpenCL device: is pocl-opencl-icd installed?"

// "float[2,3,4]".
std::string type_text(const char* dtype, const core::Shape& shape);
// "<float[2,3] name = {...}>"-style initializer text with values in [lo, hi].
std::string initializer(const std::string& name, const core::Shape& shape, std::mt19937& rng, float lo = -1,
                        float hi = 1);
core::Tensor random_tensor(const core::Shape& shape, std::mt19937& rng, float lo = -1, float hi = 1);

std::unique_ptr<core::Model> model(const std::string& text);

// A small CNN in the shape of PP-OCR cls, input float[1,3,16,16]: conv +
// batch norm + hard-swish, a depthwise conv, pooling, a classifier head
// reshaped by shape arithmetic. With `cpu_stage`, a Shrink after the
// pooling, which OPENCL has no kernel for, so that HETERO:OPENCL,CPU runs it
// as OPENCL, CPU, OPENCL stages.
std::string small_cnn(bool cpu_stage = false);
std::vector<core::Tensor> run_on(const core::Model& model, const std::string& device,
                                 const std::vector<core::Tensor>& inputs, const driver::Config& config = {});

// Equal shapes and types, values within rtol 1e-3 / atol 1e-4 (NaN where
// `want` has NaN); the failure names the worst element.
::testing::AssertionResult same_values(const std::vector<core::Tensor>& want, const std::vector<core::Tensor>& got);

// Runs `text` on CPU and on OPENCL with `inputs` and expects equal outputs
// within rtol 1e-3 / atol 1e-4; `what` names the case in failures.
void expect_same_as_cpu(const std::string& text, const std::vector<core::Tensor>& inputs, const std::string& what,
                        const driver::Config& opencl_config = {});

}  // namespace hetero::test
