// The CPU driver's kernel factories, by the file that defines them.
// kernel_list.cpp maps ONNX ops onto them; each kernels_*.cpp includes this
// header so that a definition that drifts from its declaration does not build.
#pragma once

#include <memory>

#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

// A kernel factory: builds the kernel of one node, or refuses it with
// hetero::Failure(HETERO_NOT_SUPPORTED, reason) (see kernel.h).
using KernelMaker = std::unique_ptr<Kernel>(const KernelBuild&);

// kernels_elementwise.cpp: binary and n-ary elementwise ops
KernelMaker make_pow, make_where, make_add, make_sub, make_mul, make_div, make_mod, make_bit_shift, make_and, make_or,
    make_xor, make_equal, make_less, make_greater, make_less_or_equal, make_greater_or_equal, make_prelu, make_max,
    make_min, make_sum, make_mean;

// kernels_unary.cpp: unary elementwise ops and Clip
KernelMaker make_clip, make_abs, make_neg, make_reciprocal, make_floor, make_ceil, make_round, make_sign, make_sqrt,
    make_exp, make_log, make_sin, make_cos, make_tan, make_asin, make_acos, make_atan, make_sinh, make_cosh,
    make_asinh, make_acosh, make_atanh, make_erf, make_tanh, make_not, make_is_nan, make_is_inf, make_relu,
    make_leaky_relu, make_thresholded_relu, make_elu, make_selu, make_celu, make_sigmoid, make_hard_sigmoid,
    make_hard_swish, make_softplus, make_softsign, make_mish, make_shrink;

// kernels_cast.cpp: type conversion
KernelMaker make_cast, make_cast_like;

// kernels_reduction.cpp: reductions, ArgMax/ArgMin, CumSum
KernelMaker make_cum_sum, make_reduce_sum, make_reduce_mean, make_reduce_max, make_reduce_min, make_reduce_prod,
    make_reduce_l1, make_reduce_l2, make_reduce_log_sum, make_reduce_log_sum_exp, make_reduce_sum_square,
    make_arg_max, make_arg_min;

// kernels_softmax.cpp: Softmax family
KernelMaker make_softmax, make_log_softmax, make_hardmax;

// kernels_shape.cpp: shape views and generators
KernelMaker make_shape, make_size, make_reshape, make_flatten, make_squeeze, make_unsqueeze, make_identity,
    make_constant, make_constant_of_shape, make_range, make_eye_like, make_expand, make_tile;

// kernels_transpose.cpp: Transpose
KernelMaker make_transpose;

// kernels_data_movement.cpp: block copies by position
KernelMaker make_concat, make_split, make_depth_to_space, make_space_to_depth, make_trilu, make_reverse_sequence;

// kernels_slice_pad.cpp: Slice, Pad
KernelMaker make_slice, make_pad;

// kernels_gather_scatter.cpp: index-driven data movement
KernelMaker make_gather, make_gather_elements, make_gather_nd, make_scatter_elements, make_scatter_nd, make_compress,
    make_nonzero, make_one_hot;

// kernels_resize.cpp: Resize, Upsample
KernelMaker make_resize, make_upsample;

// kernels_grid_sample.cpp: GridSample
KernelMaker make_grid_sample;

// kernels_sort.cpp: ordering by value
KernelMaker make_topk, make_unique_op;

// kernels_detection.cpp: NonMaxSuppression
KernelMaker make_non_max_suppression;

// kernels_einsum.cpp: Einsum
KernelMaker make_einsum;

// kernels_control_flow.cpp: If, Loop, Scan
KernelMaker make_if, make_loop, make_scan, make_scan8;

// kernels_nn.cpp: normalisations
KernelMaker make_batch_normalization, make_instance_normalization, make_lrn, make_layer_normalization;

// kernels_pool.cpp: pooling
KernelMaker make_max_pool, make_average_pool, make_lp_pool, make_global_max_pool, make_global_average_pool,
    make_global_lp_pool;

// kernels_conv.cpp: oneDNN convolution (or FFTs, conv_dft.h)
KernelMaker make_conv;

// kernels_conv_dft.cpp: the short-time Fourier transforms of one signal, one transform per frame (conv_dft.h)
KernelMaker make_dft_convs;

// kernels_conv_transpose.cpp: oneDNN deconvolution
KernelMaker make_conv_transpose;

// kernels_matmul.cpp: oneDNN matrix products
KernelMaker make_matmul, make_gemm;

// kernels_layout.cpp: oneDNN layout changes
KernelMaker make_to_channels_last, make_to_channels_first;

// kernels_rnn.cpp: LSTM, GRU, RNN (oneDNN or plain loops, rnn.h)
KernelMaker make_recurrent;

// kernels_quantize.cpp: QuantizeLinear family
KernelMaker make_quantize_linear, make_dequantize_linear, make_dynamic_quantize_linear;

// kernels_qlinear_conv.cpp, kernels_qlinear_matmul.cpp: int8 oneDNN primitives
KernelMaker make_qlinear_conv, make_conv_integer, make_int8_conv, make_qlinear_matmul, make_matmul_integer, make_qgemm,
    make_int8_matmul;

// kernels_qlinear_binary.cpp: QLinearAdd, QLinearMul, QLinearConcat
KernelMaker make_qlinear_add, make_qlinear_mul, make_int8_add, make_int8_mul, make_qlinear_concat, make_int8_concat;

// kernels_qlinear_via_float.cpp: 8-bit ops as tables from their float kernels, and the pools
KernelMaker make_qlinear_sigmoid, make_qlinear_leaky_relu, make_int8_unary, make_int8_table, make_qlinear_average_pool,
    make_qlinear_global_average_pool, make_int8_average_pool, make_int8_global_average_pool;

// kernels_spectral.cpp: audio front-ends
KernelMaker make_dft, make_stft, make_mel_weight_matrix;

// kernels_loss.cpp: losses
KernelMaker make_nll_loss, make_softmax_cross_entropy_loss;

// kernels_linalg.cpp, kernels_roi_align.cpp, kernels_unpool.cpp, kernels_tfidf.cpp
KernelMaker make_det, make_roi_align, make_max_unpool, make_tfidf_vectorizer;

// kernels_random.cpp: random generators, Bernoulli, Dropout
KernelMaker make_random_uniform, make_random_normal, make_random_uniform_like, make_random_normal_like, make_bernoulli,
    make_dropout;

// kernels_optimizers.cpp: the training domain's optimizers
KernelMaker make_adagrad, make_adam, make_momentum;

}  // namespace hetero::cpu
