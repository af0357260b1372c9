// A Conv whose weights are a windowed DFT basis, run as FFTs
// (kernels_conv_dft.cpp).
//
// Exporters write a short-time Fourier transform as a 1-D Conv over the
// signal: one output channel per bin and part, row r of the weights
// a[j] cos(2π k_r j/n) or a[j] sin(2π k_r j/n) for one window a of n taps,
// the stride the hop. openWakeWord's melspectrogram has two such Convs of
// 257 rows and 512 taps (the real and the imaginary parts) over every 10 ms
// hop. As a convolution that is rows x n multiply-adds per frame, 76% of the
// model's time; as an FFT it is about n log2 n. Its two Convs read the same
// signal with the same window, so one transform per frame serves both: the
// graph pass share_dft() (graph_dft.cpp) makes them one hetero.cpu DftConvs
// node, with the signal and each Conv's weights as inputs and each Conv's
// output as an output, in the order of its inputs.
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
  // Taps no row reads, where `window` holds 0: sines alone read nothing at
  // taps 0 and n/2 (sin 0 = sin πk = 0).
  std::vector<uint32_t> unread_taps;
};

// The basis `weights` ([rows, 1, n], float32) hold, when every weight is
// within 1e-5 of the largest of a[j] times its cosine or sine, and the rows
// are in one of the orders exporters write: bins 0, 1, ... of cosines only
// or sines only, or the cosines of bins 0..rows/2-1 then their sines or
// their sines negated (Silero VAD's STFT: -a[j] sin, one Conv). Null
// otherwise, and when an FFT would not save work: fewer rows than 4 log2 n.
std::optional<DftBasis> dft_basis(const core::Tensor& weights);

// The most Convs one DftConvs node holds.
constexpr size_t kMaxDftOutputs = 8;

// The one window whose transform serves every basis of `bases`: where
// several read a tap, their windows agree there to float32 rounding, up to
// the sign of a whole basis (exporters write an STFT's imaginary part over
// minus the window, e^{-iωt}); a tap only some read takes their value (an
// STFT's sines leave taps 0 and n/2 to its cosines). `flipped`: per basis,
// whether it is over minus the window. Null when no one window does.
struct CommonWindow {
  std::vector<float> window;
  std::vector<bool> flipped;
};
std::optional<CommonWindow> common_window(const std::vector<const DftBasis*>& bases);

// The kernel for a Conv, or a FusedConv without post-ops (channels-last or
// not), whose constant weights dft_basis() recognises, with a group of one
// and no dilation; null for any other, which runs on oneDNN
// (kernels_conv.cpp).
std::unique_ptr<Kernel> make_conv_as_dft(const KernelBuild& b);

}  // namespace hetero::cpu
