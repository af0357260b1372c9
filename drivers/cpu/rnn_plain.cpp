// The plain path for RNN, GRU and LSTM: every attribute combination, every
// run. Per direction, X·W^T (plus the biases) for all steps is one sgemm;
// each step is one H·R^T sgemm (two for GRU without linear_before_reset, whose
// candidate gate multiplies r ⊙ H) and loops over contiguous gate rows that
// GCC vectorises. Rows past a sequence's length keep their state and write
// zeros to Y, which also gives reverse directions the right start: padding
// steps come first and leave the initial state alone.
//
// Compiled without -ftrapping-math, as rnn_activation.cpp is and for the
// same reason: GCC then vectorises the clip (min/max) and gate loops.
#pragma GCC optimize("no-trapping-math")

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/rnn.h"

namespace hetero::cpu::rnn {

namespace {

// C[m, n] = A[m, k] · B[n, k]^T (+ C when accumulate), row-major with
// leading dimensions. A few rows (the per-step product of a small batch) are
// dot products of contiguous rows, which `omp simd` vectorises; a call into
// sgemm costs more than such a product itself.
void gemm_bt(const core::Node& node, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
             int64_t ldb, float* c, int64_t ldc, bool accumulate = false) {
  if (m == 0 || n == 0) return;
  if (m <= 4 || k == 0) {
    for (int64_t i = 0; i < m; ++i) {
      const float* ai = a + i * lda;
      float* ci = c + i * ldc;
      for (int64_t j = 0; j < n; ++j) {
        const float* bj = b + j * ldb;
        float sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int64_t p = 0; p < k; ++p) sum += ai[p] * bj[p];
        ci[j] = accumulate ? ci[j] + sum : sum;
      }
    }
    return;
  }
  if (dnnl::sgemm('N', 'T', m, n, k, 1.0f, a, lda, b, ldb, accumulate ? 1.0f : 0.0f, c, ldc) != dnnl::status::success)
    fail(HETERO_DRIVER_ERROR, node.describe() + ": oneDNN sgemm failed");
}

void clip_to(const std::optional<float>& clip, float* x, int64_t n) {
  if (!clip) return;
  const float c = *clip;
  for (int64_t i = 0; i < n; ++i) x[i] = std::min(c, std::max(-c, x[i]));
}

// One direction of one run: the sizes, where this direction reads and
// writes, and its working memory.
class DirectionRun {
 public:
  DirectionRun(const Spec& spec, const Args& a, int64_t d, float* y, float* y_h, float* y_c, float* work)
      : spec_(spec), a_(a), d_(d), y_(y), y_h_(y_h), y_c_(y_c) {
    T_ = a.steps, N_ = a.batch, H_ = a.hidden, G_ = spec.gates(), GH_ = G_ * H_;
    w_ = a.w + d * GH_ * a.input_size;
    r_ = a.r + d * GH_ * H_;
    if (a.b) bias_w_ = a.b + d * 2 * GH_, bias_r_ = bias_w_ + GH_;
    if (a.peepholes) peepholes_ = a.peepholes + d * 3 * H_;
    xw_ = work;
    hr_ = xw_ + T_ * N_ * GH_;
    h_ = hr_ + N_ * GH_;
    c_ = h_ + N_ * H_;
    rh_ = c_ + N_ * H_;
  }
  // Floats of working memory a direction needs.
  static size_t work_size(const Spec& spec, const Args& a) {
    const int64_t gh = spec.gates() * a.hidden;
    return static_cast<size_t>(a.steps * a.batch * gh + a.batch * gh + 3 * a.batch * a.hidden);
  }

  // `block`: steps between two checkpoints (Args::steps_per_checkpoint), 0
  // for none; the working memory must then be the run's workspace.
  void run(KernelRun& r, int64_t block) {
    const core::Node& node = r.node();
    parallel_ = r.threads() > 1 && N_ * GH_ >= 8192;
    input_projection(r, block > 0);
    load_state(a_.initial_h, h_);
    load_state(a_.initial_c, c_);
    for (int64_t s = 0; s < T_; ++s) {
      if (block > 0 && s % block == 0) r.checkpoint();
      const int64_t t = spec_.backwards(d_) ? T_ - 1 - s : s;
      switch (spec_.cell) {
        case Cell::Lstm: lstm_step(node, t); break;
        case Cell::Gru: gru_step(node, t); break;
        case Cell::Rnn: rnn_step(node, t); break;
      }
    }
    store_state(h_, y_h_);
    store_state(c_, y_c_);
  }

 private:
  // Offsets of batch row n at step t in X (rows of I) and Y (rows of H), and
  // of row n in a state tensor.
  int64_t x_row(int64_t t, int64_t n) const { return spec_.batch_first ? n * T_ + t : t * N_ + n; }
  float* y_row(int64_t t, int64_t n) const {
    const int64_t D = a_.directions;
    return y_ + (spec_.batch_first ? (n * T_ + t) * D + d_ : (t * D + d_) * N_ + n) * H_;
  }
  int64_t state_row(int64_t n) const { return spec_.batch_first ? n * a_.directions + d_ : d_ * N_ + n; }
  bool masked(int64_t t, int64_t n) const { return a_.sequence_lens && t >= a_.sequence_lens[n]; }

  // For each sequence still running at step t: adds xw's columns [col0,
  // col0 + cols) to its gate row (which holds H·R^T) and runs
  // `cell(n, gate row)`; a sequence past its end writes zeros to Y instead.
  template <typename Cell>
  void each_running_row(int64_t t, int64_t col0, int64_t cols, Cell&& cell) {
    parallel_for(parallel_, 0, N_, [&](int64_t n) {
      if (masked(t, n)) {
        emit(t, n, nullptr);
        return;
      }
      float* gate = hr_ + n * GH_;
      const float* xr = xw_ + x_row(t, n) * GH_;
      for (int64_t k = col0; k < col0 + cols; ++k) gate[k] += xr[k];
      cell(n, gate);
    });
  }

  // xw = X·W^T + Wb + Rb, for every step (the biases that are plain sums; a
  // GRU with linear_before_reset adds Rbh inside the reset product instead);
  // in blocks of X's rows with a checkpoint between two when `in_blocks`.
  void input_projection(KernelRun& r, bool in_blocks) {
    std::vector<float> bias;
    if (bias_w_) {
      bias.assign(bias_w_, bias_w_ + GH_);
      const int64_t summed = spec_.linear_before_reset ? 2 * H_ : GH_;
      for (int64_t k = 0; k < summed; ++k) bias[k] += bias_r_[k];
    }
    const int64_t I = a_.input_size, rows = T_ * N_;
    const int64_t block = in_blocks ? checkpoint_block_units(rows, double(GH_) * I, kCheckpointMacs) : 0;
    const int64_t step = block > 0 ? block : rows;
    for (int64_t first = 0; first < rows; first += step) {
      if (first > 0) r.checkpoint();
      const int64_t count = std::min(step, rows - first);
      gemm_bt(r.node(), count, GH_, I, a_.x + first * I, I, w_, I, xw_ + first * GH_, GH_);
      if (bias.empty()) continue;
      parallel_for(parallel_, first, first + count, [&](int64_t row) {
        float* xr = xw_ + row * GH_;
        for (int64_t k = 0; k < GH_; ++k) xr[k] += bias[k];
      });
    }
  }

  void load_state(const float* initial, float* state) const {
    for (int64_t n = 0; n < N_; ++n) {
      float* dst = state + n * H_;
      if (initial) std::memcpy(dst, initial + state_row(n) * H_, sizeof(float) * H_);
      else std::fill_n(dst, H_, 0.0f);
    }
  }
  void store_state(const float* state, float* out) const {
    if (!out) return;
    for (int64_t n = 0; n < N_; ++n) std::memcpy(out + state_row(n) * H_, state + n * H_, sizeof(float) * H_);
  }
  // Y at (t, n): the new hidden state, or zeros past the sequence's end.
  void emit(int64_t t, int64_t n, const float* h) const {
    if (!y_) return;
    if (h) std::memcpy(y_row(t, n), h, sizeof(float) * H_);
    else std::fill_n(y_row(t, n), H_, 0.0f);
  }

  // Gates i, o, f, c (ONNX order) = xw + H·R^T (+ peepholes).
  void lstm_step(const core::Node& node, int64_t t) {
    gemm_bt(node, N_, GH_, H_, h_, H_, r_, H_, hr_, GH_);
    const Activation& f = spec_.activation(d_, 0);
    const Activation& g = spec_.activation(d_, 1);
    const Activation& hact = spec_.activation(d_, 2);
    const int64_t H = H_;
    each_running_row(t, 0, GH_, [&](int64_t n, float* gate) {
      float* gi = gate;
      float* go = gate + H;
      float* gf = gate + 2 * H;
      float* gc = gate + 3 * H;
      float* c = c_ + n * H;
      float* h = h_ + n * H;
      if (peepholes_)
        for (int64_t k = 0; k < H; ++k) gi[k] += peepholes_[k] * c[k], gf[k] += peepholes_[2 * H + k] * c[k];
      clip_to(spec_.clip, gi, H);
      f.apply(gi, H);
      if (spec_.input_forget) {
        for (int64_t k = 0; k < H; ++k) gf[k] = 1.0f - gi[k];
      } else {
        clip_to(spec_.clip, gf, H);
        f.apply(gf, H);
      }
      clip_to(spec_.clip, gc, H);
      g.apply(gc, H);
      for (int64_t k = 0; k < H; ++k) c[k] = gf[k] * c[k] + gi[k] * gc[k];
      if (peepholes_)
        for (int64_t k = 0; k < H; ++k) go[k] += peepholes_[H + k] * c[k];
      clip_to(spec_.clip, go, H);
      f.apply(go, H);
      // h(Ct) is applied to Ct unclipped, as ONNX Runtime does.
      std::memcpy(gc, c, sizeof(float) * H);
      hact.apply(gc, H);
      for (int64_t k = 0; k < H; ++k) h[k] = go[k] * gc[k];
      emit(t, n, h);
    });
  }

  // Gates z, r, h (ONNX order). Without linear_before_reset the candidate is
  // g(xw_h + (r ⊙ H)·Rh^T), a second product after r is known.
  void gru_step(const core::Node& node, int64_t t) {
    const bool lbr = spec_.linear_before_reset;
    const Activation& f = spec_.activation(d_, 0);
    const Activation& g = spec_.activation(d_, 1);
    const int64_t H = H_;
    gemm_bt(node, N_, lbr ? GH_ : 2 * H, H, h_, H, r_, H, hr_, GH_);
    const float* bias_rh = bias_r_ ? bias_r_ + 2 * H : nullptr;
    parallel_for(parallel_, 0, N_, [&](int64_t n) {
      if (masked(t, n)) {
        std::fill_n(rh_ + n * H, H, 0.0f);  // a row the second product reads, then ignores
        return;
      }
      float* gate = hr_ + n * GH_;
      const float* xr = xw_ + x_row(t, n) * GH_;
      for (int64_t k = 0; k < 2 * H; ++k) gate[k] += xr[k];
      clip_to(spec_.clip, gate, 2 * H);
      f.apply(gate, 2 * H);
      const float* reset = gate + H;
      float* cand = gate + 2 * H;
      if (lbr) {
        for (int64_t k = 0; k < H; ++k) cand[k] = xr[2 * H + k] + reset[k] * (cand[k] + (bias_rh ? bias_rh[k] : 0.0f));
      } else {
        const float* h = h_ + n * H;
        float* rh = rh_ + n * H;
        for (int64_t k = 0; k < H; ++k) rh[k] = reset[k] * h[k];
      }
    });
    if (!lbr) gemm_bt(node, N_, H, H, rh_, H, r_ + 2 * H * H, H, hr_ + 2 * H, GH_);
    // The candidate: its xw columns are still to add without linear_before_reset.
    each_running_row(t, 2 * H, lbr ? 0 : H, [&](int64_t n, float* gate) {
      float* cand = gate + 2 * H;
      clip_to(spec_.clip, cand, H);
      g.apply(cand, H);
      const float* z = gate;
      float* h = h_ + n * H;
      for (int64_t k = 0; k < H; ++k) h[k] = (1.0f - z[k]) * cand[k] + z[k] * h[k];
      emit(t, n, h);
    });
  }

  void rnn_step(const core::Node& node, int64_t t) {
    gemm_bt(node, N_, H_, H_, h_, H_, r_, H_, hr_, H_);
    const Activation& f = spec_.activation(d_, 0);
    const int64_t H = H_;
    each_running_row(t, 0, H, [&](int64_t n, float* gate) {
      clip_to(spec_.clip, gate, H);
      f.apply(gate, H);
      std::memcpy(h_ + n * H, gate, sizeof(float) * H);
      emit(t, n, gate);
    });
  }

  const Spec& spec_;
  const Args& a_;
  const int64_t d_;
  int64_t T_, N_, H_, G_, GH_;
  bool parallel_ = false;
  const float *w_, *r_, *bias_w_ = nullptr, *bias_r_ = nullptr, *peepholes_ = nullptr;
  float *y_, *y_h_, *y_c_;
  float *xw_, *hr_, *h_, *c_, *rh_;
};

}  // namespace

void run_plain(const Spec& spec, const Args& a, KernelRun& r) {
  use_threads(r.threads());
  auto output = [&](Output i, const core::Shape& shape) {
    const bool wanted = r.output_wanted(i) && (i != kYc || spec.cell == Cell::Lstm);
    return wanted ? r.output(i, core::DType::F32, shape).data<float>() : nullptr;
  };
  float* y = output(kY, a.y_shape(spec));
  float* y_h = output(kYh, a.state_shape(spec));
  float* y_c = output(kYc, a.state_shape(spec));
  // A node run in blocks keeps its working memory in the run's workspace:
  // work run at a checkpoint on this thread reuses the thread's scratch.
  const int64_t block = a.steps_per_checkpoint(spec);
  const size_t work_bytes = sizeof(float) * DirectionRun::work_size(spec, a);
  core::Tensor held = block > 0 ? r.workspace(work_bytes) : core::Tensor();
  float* work = static_cast<float*>(block > 0 ? held.raw() : scratch_buffer(Scratch::Extra, work_bytes));
  for (int64_t d = 0; d < a.directions; ++d) DirectionRun(spec, a, d, y, y_h, y_c, work).run(r, block);
}

}  // namespace hetero::cpu::rnn
