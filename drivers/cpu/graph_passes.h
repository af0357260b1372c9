// Compile-time graph passes of the CPU driver, run on the driver's own copy
// of a model before its kernels are built.
//
//  0. to_int8 (graph_int8.cpp): QuantizeLinear/DequantizeLinear groups
//     around Conv, MatMul, Gemm, Add, Mul, Concat, pools and elementwise ops
//     become hetero.cpu QLinear* nodes that compute in int8 (its comment
//     lists them); the passes below see only what is left in float.
//  1. fold_constants (graph_constants.cpp): ai.onnx nodes whose inputs are
//     all constants, in the main graph and in If/Loop/Scan bodies, run once
//     with their kernels and are replaced by their outputs (up to 2^20
//     elements each); constants no node reads any more are let go.
//  2. fuse_layer_norm (graph_layer_norm.cpp): a layer normalisation over
//     the last axis written out in ReduceMean, Sub, Pow, Sqrt, Div (and Mul,
//     Add by constants) becomes one LayerNormalization node.
//  3. fold_and_fuse (graph_fusion.cpp): BatchNormalization and per-channel
//     constant Mul/Add right after a Conv or ConvTranspose are folded into its
//     weights and bias; the activations, constant and residual Add/Mul that
//     follow a Conv, ConvTranspose, MatMul or Gemm become oneDNN post-ops of
//     a hetero.cpu Fused* node (post_ops.h describes the attributes).
//  4. share_dft (graph_dft.cpp): Convs that are short-time Fourier
//     transforms of one signal with one window (an STFT's real and imaginary
//     parts) become one hetero.cpu DftConvs node that transforms each frame
//     once for all of them (conv_dft.h).
//  5. to_channels_last (graph_layout.cpp): convolutions and the pools,
//     normalisations and elementwise ops around them keep activations
//     channels-last (N, spatial..., C), the layout oneDNN's convolutions run
//     fastest on (8-bit activations between int8 nodes too); hetero.cpu
//     ToChannelsLast / ToChannelsFirst nodes convert where that region meets
//     the rest of the graph. A Conv that is a short-time Fourier transform
//     (conv_dft.h) stays channels-first: it runs as FFTs, not on oneDNN.
//
// Folding and layout keep results within float rounding (folding
// reassociates a product); the int8 pass within one quantisation step of
// the QDQ graph's float simulation.
#pragma once

#include <cstdint>

#include "core/graph.h"

namespace hetero::cpu {

// Runs every pass on the main graph of `model` (constant folding in the
// bodies of its If, Loop and Scan nodes too).
void optimize_graph(core::Model& model);

namespace passes {
// `onnx_opset`: the model's ai.onnx opset, for nodes that carry none.
void fold_constants(core::Graph& graph, int64_t onnx_opset);
void to_int8(core::Graph& graph, int64_t onnx_opset);
void fuse_layer_norm(core::Graph& graph, int64_t onnx_opset);
void fold_and_fuse(core::Graph& graph, int64_t onnx_opset);
void share_dft(core::Graph& graph);
void to_channels_last(core::Graph& graph);
}  // namespace passes

}  // namespace hetero::cpu
