// Every kernel of the CPU driver, one line per op: which code runs an ONNX op
// on CPU is read here.
//
// How a node of a model gets its kernel:
//  1. An op without a line here but with an ONNX function body
//     (MeanVarianceNormalization, SoftmaxCrossEntropyLoss, ...;
//     core/function_expand.h) is replaced by that body at compile, and each
//     node of the body goes through these steps; query() counts such a node
//     as supported.
//  2. With CPU.optimize (the default), the graph passes (graph_passes.h)
//     rewrite the driver's copy of the model before any kernel is built: a
//     Conv, ConvTranspose, MatMul or Gemm and the elementwise steps after it
//     become one hetero.cpu Fused* node whose kernel lets oneDNN apply the
//     steps as post-ops while the output is in cache, and convolutions with
//     the pools, BatchNormalizations and elementwise ops around them become
//     channels-last forms between ToChannelsLast/ToChannelsFirst nodes; the
//     int8 pass (graph_int8.cpp) turns each DequantizeLinear -> op ->
//     QuantizeLinear group into one hetero.cpu QLinear* node that runs on the
//     8-bit codes (docs/quantization.md). That is how a fused or int8
//     oneDNN kernel is preferred over the plain ones: the node is renamed to
//     it, so the lookup below never has two candidates to pick from.
//     query() judges the node as the model has it, before these passes.
//  3. The node's (op type, domain, opset) is looked up in this list. At most
//     one line matches: KernelRegistry::add refuses a line that overlaps an
//     earlier one (no "last one wins"), so the order below is for reading.
//  4. The factory builds the kernel, or refuses the node with a reason (a
//     dtype, attribute or shape it does not handle); there is no second CPU
//     candidate. query() reports the reason, so HETERO places the node on
//     another device; compile fails with it.
// Inside a kernel the choice can go on: the convolution and matrix-product
// kernels run the oneDNN primitive with the post-ops fused when oneDNN has a
// fast implementation of the combination, else the primitive alone and the
// post-ops as a loop (make_with_post_ops, post_ops.h); a ConvTranspose whose
// kernel equals its stride runs as one matrix product
// (kernels_conv_transpose.cpp), and a Conv whose weights are a windowed DFT
// basis runs as FFTs (kernels_conv_dft.cpp).
#include "drivers/cpu/kernel.h"
#include "drivers/cpu/kernel_factories.h"

namespace hetero::cpu {

namespace {

constexpr const char* kOnnx = "";
constexpr const char* kMicrosoft = "com.microsoft";  // ONNX Runtime's contrib ops
constexpr const char* kTraining = "ai.onnx.preview.training";
constexpr int64_t kLatest = KernelRegistry::kLatestOpset;

struct KernelLine {
  const char* op_type;
  const char* domain;
  int64_t min_opset, max_opset;
  KernelMaker* make;
};

// clang-format off
const KernelLine kKernelList[] = {
    // kernels_elementwise.cpp: binary and n-ary elementwise ops with broadcasting
    {"Add",                   kOnnx,      1,  kLatest, make_add},
    {"Sub",                   kOnnx,      1,  kLatest, make_sub},
    {"Mul",                   kOnnx,      1,  kLatest, make_mul},
    {"Div",                   kOnnx,      1,  kLatest, make_div},
    {"Mod",                   kOnnx,      1,  kLatest, make_mod},
    {"Pow",                   kOnnx,      1,  kLatest, make_pow},
    {"BitShift",              kOnnx,      1,  kLatest, make_bit_shift},
    {"And",                   kOnnx,      1,  kLatest, make_and},
    {"Or",                    kOnnx,      1,  kLatest, make_or},
    {"Xor",                   kOnnx,      1,  kLatest, make_xor},
    {"Equal",                 kOnnx,      1,  kLatest, make_equal},
    {"Less",                  kOnnx,      1,  kLatest, make_less},
    {"Greater",               kOnnx,      1,  kLatest, make_greater},
    {"LessOrEqual",           kOnnx,      1,  kLatest, make_less_or_equal},
    {"GreaterOrEqual",        kOnnx,      1,  kLatest, make_greater_or_equal},
    {"PRelu",                 kOnnx,      1,  kLatest, make_prelu},
    {"Max",                   kOnnx,      1,  kLatest, make_max},
    {"Min",                   kOnnx,      1,  kLatest, make_min},
    {"Sum",                   kOnnx,      1,  kLatest, make_sum},
    {"Mean",                  kOnnx,      1,  kLatest, make_mean},
    {"Where",                 kOnnx,      1,  kLatest, make_where},

    // kernels_unary.cpp: unary elementwise ops
    {"Abs",                   kOnnx,      1,  kLatest, make_abs},
    {"Neg",                   kOnnx,      1,  kLatest, make_neg},
    {"Reciprocal",            kOnnx,      1,  kLatest, make_reciprocal},
    {"Floor",                 kOnnx,      1,  kLatest, make_floor},
    {"Ceil",                  kOnnx,      1,  kLatest, make_ceil},
    {"Round",                 kOnnx,      1,  kLatest, make_round},
    {"Sign",                  kOnnx,      1,  kLatest, make_sign},
    {"Sqrt",                  kOnnx,      1,  kLatest, make_sqrt},
    {"Exp",                   kOnnx,      1,  kLatest, make_exp},
    {"Log",                   kOnnx,      1,  kLatest, make_log},
    {"Sin",                   kOnnx,      1,  kLatest, make_sin},
    {"Cos",                   kOnnx,      1,  kLatest, make_cos},
    {"Tan",                   kOnnx,      1,  kLatest, make_tan},
    {"Asin",                  kOnnx,      1,  kLatest, make_asin},
    {"Acos",                  kOnnx,      1,  kLatest, make_acos},
    {"Atan",                  kOnnx,      1,  kLatest, make_atan},
    {"Sinh",                  kOnnx,      1,  kLatest, make_sinh},
    {"Cosh",                  kOnnx,      1,  kLatest, make_cosh},
    {"Asinh",                 kOnnx,      1,  kLatest, make_asinh},
    {"Acosh",                 kOnnx,      1,  kLatest, make_acosh},
    {"Atanh",                 kOnnx,      1,  kLatest, make_atanh},
    {"Erf",                   kOnnx,      1,  kLatest, make_erf},
    {"Tanh",                  kOnnx,      1,  kLatest, make_tanh},
    {"Not",                   kOnnx,      1,  kLatest, make_not},
    {"IsNaN",                 kOnnx,      1,  kLatest, make_is_nan},
    {"IsInf",                 kOnnx,      1,  kLatest, make_is_inf},
    {"Relu",                  kOnnx,      1,  kLatest, make_relu},
    {"LeakyRelu",             kOnnx,      1,  kLatest, make_leaky_relu},
    {"ThresholdedRelu",       kOnnx,      1,  kLatest, make_thresholded_relu},
    {"Elu",                   kOnnx,      1,  kLatest, make_elu},
    {"Selu",                  kOnnx,      1,  kLatest, make_selu},
    {"Celu",                  kOnnx,      1,  kLatest, make_celu},
    {"Sigmoid",               kOnnx,      1,  kLatest, make_sigmoid},
    {"HardSigmoid",           kOnnx,      1,  kLatest, make_hard_sigmoid},
    {"HardSwish",             kOnnx,      1,  kLatest, make_hard_swish},
    {"Softplus",              kOnnx,      1,  kLatest, make_softplus},
    {"Softsign",              kOnnx,      1,  kLatest, make_softsign},
    {"Mish",                  kOnnx,      18, kLatest, make_mish},
    {"Shrink",                kOnnx,      1,  kLatest, make_shrink},
    {"Clip",                  kOnnx,      1,  kLatest, make_clip},

    // kernels_cast.cpp: type conversion
    {"Cast",                  kOnnx,      1,  kLatest, make_cast},
    {"CastLike",              kOnnx,      15, kLatest, make_cast_like},

    // kernels_softmax.cpp
    {"Softmax",               kOnnx,      1,  kLatest, make_softmax},
    {"LogSoftmax",            kOnnx,      1,  kLatest, make_log_softmax},
    {"Hardmax",               kOnnx,      1,  kLatest, make_hardmax},

    // kernels_reduction.cpp
    {"ReduceSum",             kOnnx,      1,  kLatest, make_reduce_sum},
    {"ReduceMean",            kOnnx,      1,  kLatest, make_reduce_mean},
    {"ReduceMax",             kOnnx,      1,  kLatest, make_reduce_max},
    {"ReduceMin",             kOnnx,      1,  kLatest, make_reduce_min},
    {"ReduceProd",            kOnnx,      1,  kLatest, make_reduce_prod},
    {"ReduceL1",              kOnnx,      1,  kLatest, make_reduce_l1},
    {"ReduceL2",              kOnnx,      1,  kLatest, make_reduce_l2},
    {"ReduceLogSum",          kOnnx,      1,  kLatest, make_reduce_log_sum},
    {"ReduceLogSumExp",       kOnnx,      1,  kLatest, make_reduce_log_sum_exp},
    {"ReduceSumSquare",       kOnnx,      1,  kLatest, make_reduce_sum_square},
    {"ArgMax",                kOnnx,      1,  kLatest, make_arg_max},
    {"ArgMin",                kOnnx,      1,  kLatest, make_arg_min},
    {"CumSum",                kOnnx,      11, kLatest, make_cum_sum},

    // kernels_shape.cpp: shape views, broadcasting copies and generators
    {"Shape",                 kOnnx,      1,  kLatest, make_shape},
    {"Size",                  kOnnx,      1,  kLatest, make_size},
    {"Reshape",               kOnnx,      1,  kLatest, make_reshape},
    {"Flatten",               kOnnx,      1,  kLatest, make_flatten},
    {"Squeeze",               kOnnx,      1,  kLatest, make_squeeze},
    {"Unsqueeze",             kOnnx,      1,  kLatest, make_unsqueeze},
    {"Identity",              kOnnx,      1,  kLatest, make_identity},
    {"Constant",              kOnnx,      1,  kLatest, make_constant},
    {"ConstantOfShape",       kOnnx,      9,  kLatest, make_constant_of_shape},
    {"Range",                 kOnnx,      11, kLatest, make_range},
    {"EyeLike",               kOnnx,      9,  kLatest, make_eye_like},
    {"Expand",                kOnnx,      8,  kLatest, make_expand},
    // Tile-1 took the tile count and axis as inputs; only the later form is kept.
    {"Tile",                  kOnnx,      6,  kLatest, make_tile},

    // kernels_transpose.cpp
    {"Transpose",             kOnnx,      1,  kLatest, make_transpose},

    // kernels_data_movement.cpp: block copies by position
    {"Concat",                kOnnx,      1,  kLatest, make_concat},
    {"Split",                 kOnnx,      1,  kLatest, make_split},
    {"DepthToSpace",          kOnnx,      1,  kLatest, make_depth_to_space},
    {"SpaceToDepth",          kOnnx,      1,  kLatest, make_space_to_depth},
    {"Trilu",                 kOnnx,      14, kLatest, make_trilu},
    {"ReverseSequence",       kOnnx,      10, kLatest, make_reverse_sequence},

    // kernels_slice_pad.cpp
    {"Slice",                 kOnnx,      1,  kLatest, make_slice},
    {"Pad",                   kOnnx,      1,  kLatest, make_pad},

    // kernels_gather_scatter.cpp: index-driven data movement
    {"Gather",                kOnnx,      1,  kLatest, make_gather},
    {"GatherElements",        kOnnx,      11, kLatest, make_gather_elements},
    {"GatherND",              kOnnx,      11, kLatest, make_gather_nd},
    // Scatter-9/10 is ScatterElements under its old name.
    {"Scatter",               kOnnx,      9,  10,      make_scatter_elements},
    {"ScatterElements",       kOnnx,      11, kLatest, make_scatter_elements},
    {"ScatterND",             kOnnx,      11, kLatest, make_scatter_nd},
    {"Compress",              kOnnx,      9,  kLatest, make_compress},
    {"NonZero",               kOnnx,      9,  kLatest, make_nonzero},
    {"OneHot",                kOnnx,      9,  kLatest, make_one_hot},

    // kernels_resize.cpp
    {"Resize",                kOnnx,      10, kLatest, make_resize},
    {"Upsample",              kOnnx,      7,  9,       make_upsample},

    // kernels_grid_sample.cpp
    {"GridSample",            kOnnx,      16, kLatest, make_grid_sample},

    // kernels_sort.cpp: ordering by value
    {"TopK",                  kOnnx,      1,  kLatest, make_topk},
    {"Unique",                kOnnx,      11, kLatest, make_unique_op},

    // kernels_detection.cpp
    {"NonMaxSuppression",     kOnnx,      10, kLatest, make_non_max_suppression},

    // kernels_einsum.cpp
    {"Einsum",                kOnnx,      12, kLatest, make_einsum},

    // kernels_control_flow.cpp: subgraphs, compiled with these same kernels
    {"If",                    kOnnx,      1,  kLatest, make_if},
    {"Loop",                  kOnnx,      1,  kLatest, make_loop},
    {"Scan",                  kOnnx,      8,  8,       make_scan8},
    {"Scan",                  kOnnx,      9,  kLatest, make_scan},

    // kernels_nn.cpp: normalisations (plain loops)
    {"BatchNormalization",    kOnnx,      1,  kLatest, make_batch_normalization},
    {"InstanceNormalization", kOnnx,      1,  kLatest, make_instance_normalization},
    {"LRN",                   kOnnx,      1,  kLatest, make_lrn},
    {"LayerNormalization",    kOnnx,      17, kLatest, make_layer_normalization},

    // kernels_pool.cpp: pooling (plain loops)
    {"MaxPool",               kOnnx,      1,  kLatest, make_max_pool},
    {"AveragePool",           kOnnx,      1,  kLatest, make_average_pool},
    {"LpPool",                kOnnx,      1,  kLatest, make_lp_pool},
    {"GlobalMaxPool",         kOnnx,      1,  kLatest, make_global_max_pool},
    {"GlobalAveragePool",     kOnnx,      1,  kLatest, make_global_average_pool},
    {"GlobalLpPool",          kOnnx,      1,  kLatest, make_global_lp_pool},

    // kernels_conv.cpp, kernels_conv_transpose.cpp, kernels_matmul.cpp: oneDNN primitives
    {"Conv",                  kOnnx,      1,  kLatest, make_conv},
    {"ConvTranspose",         kOnnx,      1,  kLatest, make_conv_transpose},
    {"MatMul",                kOnnx,      1,  kLatest, make_matmul},
    {"Gemm",                  kOnnx,      1,  kLatest, make_gemm},

    // kernels_rnn.cpp: recurrent layers
    {"RNN",                   kOnnx,      1,  kLatest, make_recurrent},
    {"GRU",                   kOnnx,      1,  kLatest, make_recurrent},
    {"LSTM",                  kOnnx,      1,  kLatest, make_recurrent},

    // kernels_quantize.cpp, kernels_qlinear_*.cpp: quantisation (docs/quantization.md)
    {"QuantizeLinear",        kOnnx,      10, 18,      make_quantize_linear},
    {"DequantizeLinear",      kOnnx,      10, 18,      make_dequantize_linear},
    {"DynamicQuantizeLinear", kOnnx,      11, kLatest, make_dynamic_quantize_linear},
    {"QLinearConv",           kOnnx,      10, kLatest, make_qlinear_conv},
    {"ConvInteger",           kOnnx,      10, kLatest, make_conv_integer},
    {"QLinearMatMul",         kOnnx,      10, kLatest, make_qlinear_matmul},
    {"MatMulInteger",         kOnnx,      10, kLatest, make_matmul_integer},
    // ONNX Runtime's QOperator forms, as its quantizer writes them.
    {"QuantizeLinear",        kMicrosoft, 1,  1,       make_quantize_linear},
    {"DequantizeLinear",      kMicrosoft, 1,  1,       make_dequantize_linear},
    {"QLinearConv",           kMicrosoft, 1,  1,       make_qlinear_conv},
    {"QGemm",                 kMicrosoft, 1,  1,       make_qgemm},
    {"QLinearAdd",            kMicrosoft, 1,  1,       make_qlinear_add},
    {"QLinearMul",            kMicrosoft, 1,  1,       make_qlinear_mul},
    {"QLinearConcat",         kMicrosoft, 1,  1,       make_qlinear_concat},
    {"QLinearSigmoid",        kMicrosoft, 1,  1,       make_qlinear_sigmoid},
    {"QLinearLeakyRelu",      kMicrosoft, 1,  1,       make_qlinear_leaky_relu},
    {"QLinearAveragePool",    kMicrosoft, 1,  1,       make_qlinear_average_pool},
    {"QLinearGlobalAveragePool", kMicrosoft, 1, 1,     make_qlinear_global_average_pool},

    // kernels_spectral.cpp: audio front-ends (opset 20 turned DFT's axis into an input)
    {"DFT",                   kOnnx,      17, 19,      make_dft},
    {"STFT",                  kOnnx,      17, kLatest, make_stft},
    {"MelWeightMatrix",       kOnnx,      17, kLatest, make_mel_weight_matrix},

    // kernels_loss.cpp
    {"NegativeLogLikelihoodLoss", kOnnx,  12, kLatest, make_nll_loss},
    {"SoftmaxCrossEntropyLoss", kOnnx,    12, kLatest, make_softmax_cross_entropy_loss},

    // kernels_linalg.cpp, kernels_roi_align.cpp, kernels_unpool.cpp, kernels_tfidf.cpp
    {"Det",                   kOnnx,      11, kLatest, make_det},
    {"RoiAlign",              kOnnx,      10, kLatest, make_roi_align},
    {"MaxUnpool",             kOnnx,      9,  kLatest, make_max_unpool},
    {"TfIdfVectorizer",       kOnnx,      9,  kLatest, make_tfidf_vectorizer},

    // kernels_random.cpp: generators (NumPy's legacy RandomState), Dropout
    {"RandomUniform",         kOnnx,      1,  kLatest, make_random_uniform},
    {"RandomNormal",          kOnnx,      1,  kLatest, make_random_normal},
    {"RandomUniformLike",     kOnnx,      1,  kLatest, make_random_uniform_like},
    {"RandomNormalLike",      kOnnx,      1,  kLatest, make_random_normal_like},
    {"Bernoulli",             kOnnx,      15, kLatest, make_bernoulli},
    {"Dropout",               kOnnx,      1,  kLatest, make_dropout},

    // kernels_optimizers.cpp: the training domain's optimizers
    {"Adagrad",               kTraining,  1,  kLatest, make_adagrad},
    {"Adam",                  kTraining,  1,  kLatest, make_adam},
    {"Momentum",              kTraining,  1,  kLatest, make_momentum},

    // hetero.cpu forms made by the graph passes (opset 1 of the hetero.cpu domain).
    // Fusion (graph_fusion.cpp): the op with post-ops; the same kernels as the plain ops.
    {"FusedConv",             kCpuDomain, 1,  1,       make_conv},
    {"FusedConvTranspose",    kCpuDomain, 1,  1,       make_conv_transpose},
    {"FusedMatMul",           kCpuDomain, 1,  1,       make_matmul},
    {"FusedGemm",             kCpuDomain, 1,  1,       make_gemm},
    // Sharing (graph_dft.cpp): the Convs that transform one signal with one window.
    {"DftConvs",              kCpuDomain, 1,  1,       make_dft_convs},

    // Channels-last layout (graph_layout.cpp): the plain kernels reading the channels_last
    // attribute, and the layout changes at the region's borders (kernels_layout.cpp).
    {"MaxPool",               kCpuDomain, 1,  1,       make_max_pool},
    {"AveragePool",           kCpuDomain, 1,  1,       make_average_pool},
    {"GlobalMaxPool",         kCpuDomain, 1,  1,       make_global_max_pool},
    {"GlobalAveragePool",     kCpuDomain, 1,  1,       make_global_average_pool},
    {"BatchNormalization",    kCpuDomain, 1,  1,       make_batch_normalization},
    {"ToChannelsLast",        kCpuDomain, 1,  1,       make_to_channels_last},
    {"ToChannelsFirst",       kCpuDomain, 1,  1,       make_to_channels_first},

    // int8 (graph_int8.cpp): a DQ -> op -> Q group as one node on the 8-bit codes, its
    // quantisation parameters in attributes (docs/quantization.md).
    {"QLinearConv",           kCpuDomain, 1,  1,       make_int8_conv},
    {"QLinearMatMul",         kCpuDomain, 1,  1,       make_int8_matmul},
    {"QLinearAdd",            kCpuDomain, 1,  1,       make_int8_add},
    {"QLinearMul",            kCpuDomain, 1,  1,       make_int8_mul},
    {"QLinearConcat",         kCpuDomain, 1,  1,       make_int8_concat},
    {"QLinearAveragePool",    kCpuDomain, 1,  1,       make_int8_average_pool},
    {"QLinearGlobalAveragePool", kCpuDomain, 1, 1,     make_int8_global_average_pool},
    {"QLinearUnary",          kCpuDomain, 1,  1,       make_int8_unary},
    {"QLinearTable",          kCpuDomain, 1,  1,       make_int8_table},
};
// clang-format on

}  // namespace

const KernelRegistry& KernelRegistry::builtin() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    for (const KernelLine& k : kKernelList) r.add(k.op_type, k.make, k.domain, k.min_opset, k.max_opset);
    return r;
  }();
  return registry;
}

}  // namespace hetero::cpu
