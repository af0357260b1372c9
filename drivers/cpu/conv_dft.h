// A Conv whose weights are a windowed DFT basis, run as FFTs
// (kernels_conv_dft.cpp).
//
// Exporters write a short-time Fourier transform as a 1-D Conv over the
// signal: one output channel per bin and part, row r of the weights
// a[j] cos(2π k_r j/n) or a[j] sin(2π k_r j/n) for one window a of n taps,
// the stride the hop. openWakeWord's melspectrogram has two such Convs of
// 257 rows and 512 taps (the real and the imaginary parts) over every 10 ms
// hop. As a convolution that is rows x n multiply-adds per frame, 76% of the
// model's time; as an FFT it is about n log2 n.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/tensor.h"
#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

// What one output channel of such a Conv computes: the real part (cosine)
// or minus the imaginary part (sine) of one bin, or minus that (`negated`).
struct DftRow {
  uint32_t bin = 0;
  bool sine = false;
  bool negated = false;
};

struct DftBasis {
  std::vector<float> window;  // a[j], n taps (a power of two)
  std::vector<DftRow> rows;   // one per output channel
};

// The basis `weights` ([rows, 1, n], float32) hold, when every weight is
// within 1e-5 of the largest of a[j] times its cosine or sine, and the rows
// are in one of the orders exporters write: bins 0, 1, ... of cosines only
// or sines only, or the cosines of bins 0..rows/2-1 then their sines or
// their sines negated (Silero VAD's STFT: -a[j] sin, one Conv). Null
// otherwise, and when an FFT would not save work: fewer rows than 4 log2 n.
std::optional<DftBasis> dft_basis(const core::Tensor& weights);

// The kernel for a Conv, or a FusedConv without post-ops (channels-last or
// not), whose constant weights dft_basis() recognises, with a group of one
// and no dilation; null for any other, which runs on oneDNN
// (kernels_conv.cpp).
std::unique_ptr<Kernel> make_conv_as_dft(const KernelBuild& b);

}  // namespace hetero::cpu
