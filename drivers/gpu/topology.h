// Topology: the model as primitives and their connections (the first of the
// three levels in drivers/gpu/README.md). Built
// from a submodel's main graph: every node becomes a primitive, except what
// is known at compile time (Constant, Shape of a static shape and the integer
// arithmetic on shapes that follows), which is folded into constants here.
// Every value must have a static shape. Device tensors are float32, int32,
// int64 or bool: the heavy and numeric ops take float32, while copies
// (views, Transpose, Slice, Concat, Gather, Expand), comparisons, Where, Cast,
// logic and integer arithmetic take the others too, so that the index, mask
// and shape arithmetic of real models stays on the device.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/tensor.h"
#include "drivers/gpu/host_conditions.h"
#include "drivers/gpu/shape_infer.h"

namespace hetero::gpu {

enum class PrimKind {
  Unary,      // op: Relu, Sigmoid, ...; also BatchNormalization as channel post-ops
  Binary,     // op: Add, Sub, Mul, Div, Pow, Max, Min; numpy broadcasting
  // 1-D and 2-D convolution, groups, dilations; inputs x, w, b, and after
  // passes::fuse_squeeze_excite a 1x1 one may have a fourth: a scale [N, IC]
  // of x's channels (only the Gemm variant reads it: scales_input())
  Conv,
  ConvTranspose,  // 1-D and 2-D, groups, dilations; pads resolved to the output shape
  MatMul,     // batched, broadcasting
  Pool,       // op: MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool
  Softmax,
  Reduce,     // op: ReduceMax, ReduceMin, ReduceSum, ReduceMean
  Transpose,  // and Slice: a strided copy (perm, then per input axis a start and a step)
  Concat,
  Resize,     // Resize and Upsample: nearest or (bi)linear, per-axis scales
  View,       // Reshape, Flatten, Squeeze, Unsqueeze, Identity: same bytes
  Pad,        // constant, edge or reflect; pads may be negative (a crop)
  Gather,     // along one axis, constant indices (inputs: data, the index table)
  Lstm,       // every time step in one launch; its output holds Y, Y_h and Y_c one after another
  Where,      // inputs: condition (bool), x, y; numpy broadcasting
  Expand,     // numpy broadcasting of its one input to the output's shape
  // Made by a program pass, not from one op (passes::fuse_squeeze_excite):
  // GlobalAveragePool and two 1x1 convolutions; inputs x, w1, b1, w2, b2
  // (a bias may be absent)
  SqueezeExcite,
};

// Whether device tensors hold `dtype`: float32, int32, int64 and bool.
bool is_device_dtype(core::DType dtype);
// The OpenCL C type of a device element type (float, int, long, uchar).
const char* device_ctype(core::DType dtype);

const char* prim_kind_name(PrimKind kind);

struct PrimAttrs {
  float alpha = 0, beta = 0;                // unary parameters (LeakyRelu, HardSigmoid, Clip)
  std::vector<int64_t> kernel, strides, pads, dilations;  // conv/pool, per spatial dim; pads begin..end
  int64_t group = 1;
  int64_t axis = 0;                         // softmax, concat
  bool softmax_flatten = false;             // opset < 13: softmax over all dims from axis on
  bool count_include_pad = false;
  std::vector<int64_t> perm, axes;          // transpose, reduce (axes normalised, sorted)
  std::vector<int64_t> starts, steps;       // slice, per input axis (empty: 0 and 1)
  // transpose: the shape its copy walks, when the output is that shape
  // merged (a channel shuffle writing [N, C, H * KH, W * KW]); empty: the output's
  std::vector<int64_t> walk;
  // resize: per axis, the scale its coordinate transformation divides by;
  // the ONNX mode, coordinate_transformation_mode and nearest_mode
  std::vector<double> scales;
  std::string resize_mode, coordinate_mode, nearest_mode;
  std::string pad_mode;                     // pad: constant, edge, reflect (the constant value: alpha)
  int64_t hidden = 0;                       // lstm: hidden_size
  std::string direction;                    // lstm: forward, reverse, bidirectional
};

struct Primitive {
  std::string id;  // the node's name
  PrimKind kind = PrimKind::Unary;
  std::string op;  // the ONNX op type it came from
  std::vector<std::string> inputs;  // value ids (data inputs only; empty string: absent)
  std::string output;
  PrimAttrs attrs;
};

struct Topology {
  std::vector<Primitive> primitives;         // in topological order
  std::map<std::string, core::Shape> shapes;  // every value's static shape
  std::map<std::string, core::DType> dtypes;  // values other than float32 (value_dtype())
  std::map<std::string, core::Tensor> constants;  // initializers and folded values
  std::vector<std::string> inputs, outputs;  // graph inputs and outputs, in order
};

// Builds the topology of `graph`, a model's main graph. With `reasons` (one slot per node), a node
// the device cannot run gets its reason there and the build goes on (query);
// without it the first such node fails with NOT_SUPPORTED naming it.
// An If whose condition the host computes from the inputs
// (host_conditions.h) takes the branch `choices` gives it; one it does not
// settle throws OpenCondition (compile), or has both branches checked
// (query).
// The element type of value `v` given the non-float32 ones and the
// constants (which carry their own).
core::DType value_dtype(const std::map<std::string, core::DType>& dtypes,
                        const std::map<std::string, core::Tensor>& constants, const std::string& v);

// The static shape of `node`'s first output by its op's rule
// (shape_infer.h), or nullopt when it cannot be known or the GPU drivers do
// not run the op; INVALID_MODEL when the input shapes contradict the op.
std::optional<core::Shape> infer_output_shape(const core::Node& node, const ShapeLookup& shape_of,
                                              const TensorLookup& constant_of);

Topology build_topology(const core::Graph& graph, std::vector<std::string>* reasons = nullptr,
                        const ConditionChoices& choices = {});

}  // namespace hetero::gpu
