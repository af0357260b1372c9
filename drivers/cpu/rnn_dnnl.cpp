// The oneDNN path for RNN, GRU and LSTM: the whole sequence, all directions,
// as one oneDNN RNN primitive (vanilla_rnn, lstm, gru, lbr_gru), one per
// input shape.
//
// ONNX and oneDNN lay things out differently; what has to move is moved once
// for constant weights (at build) and per run otherwise:
// - W [D, G*H, I] and R [D, G*H, H] are oneDNN's "ldgoi" weights as they
//   stand, except that LSTM's gates come in ONNX order i, o, f, c and oneDNN
//   wants i, f, c, o; the primitive then reorders them into its packed layout.
// - oneDNN takes one bias per gate (Wb + Rb), four for lbr_gru (Rbh apart),
//   and peepholes in order i, f, o where ONNX has i, o, f.
// - X, and Y for one direction or batch-first, are oneDNN's tnc/ntc as they
//   stand; a two-direction Y in layout 0 ([T, 2, N, H]) and batch-first
//   states ([N, D, H]) go through a copy.
#include <cstring>

#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/rnn.h"

namespace hetero::cpu::rnn {

namespace {

using Kind = Activation::Kind;

// oneDNN's gate k is ONNX's gate order[k].
constexpr int64_t kLstmGateOrder[] = {0, 2, 3, 1};  // i, f, c, o from i, o, f, c
constexpr int64_t kSameOrder[] = {0, 1, 2};         // GRU (z, r, h) and RNN as they are
constexpr int64_t kPeepholeOrder[] = {0, 2, 1};     // i, f, o from i, o, f

// The activations oneDNN computes: LSTM sigmoid/tanh/tanh, GRU sigmoid/tanh,
// RNN one of Relu/Tanh/Sigmoid (the same for both directions).
bool default_activations(const Spec& spec) {
  for (int64_t d = 0; d < spec.directions; ++d) {
    const auto kind = [&](size_t k) { return spec.activation(d, k).kind; };
    switch (spec.cell) {
      case Cell::Lstm:
        if (kind(0) != Kind::Sigmoid || kind(1) != Kind::Tanh || kind(2) != Kind::Tanh) return false;
        break;
      case Cell::Gru:
        if (kind(0) != Kind::Sigmoid || kind(1) != Kind::Tanh) return false;
        break;
      case Cell::Rnn:
        if (kind(0) != Kind::Relu && kind(0) != Kind::Tanh && kind(0) != Kind::Sigmoid) return false;
        if (kind(0) != spec.activation(0, 0).kind) return false;
        break;
    }
  }
  return true;
}

class DnnlRnnImpl final : public DnnlRnn {
 public:
  DnnlRnnImpl(const Spec& spec, const KernelBuild& b);
  bool run(const Args& args, KernelRun& r) override;
  // A long run (Args::steps_per_checkpoint): one direction with constant
  // weights, run `block` steps at a time.
  bool run_in_blocks(const Args& a, KernelRun& r, int64_t block);

 private:
  struct Entry {
    dnnl::primitive prim;
    dnnl::memory::desc src_layer, src_iter, weights_layer_user, weights_iter_user, weights_layer, weights_iter,
        peepholes, bias, dst_layer, dst_iter;
    LayoutChange weights_layer_reorder, weights_iter_reorder;  // for run-time weights
    size_t scratchpad = 0;
    bool y_direct = false;  // Y is dst_layer's memory as it stands
  };
  // Throws dnnl::error; dnnl_unimplemented where oneDNN has no
  // implementation for this shape or wants biases or peepholes in a layout
  // other than the one prepared.
  // X and Y are in the node's layout, or in layout 0 (tnc) for `in_blocks`
  // (run_in_blocks stages a batch-first block).
  Entry make_entry(const Args& a, bool with_src_iter, bool with_dst_iter, bool in_blocks,
                   const dnnl::engine& engine) const;
  // The cached entry (for r's threads); one without a primitive where oneDNN
  // has no implementation for the shape.
  std::shared_ptr<const Entry> entry(const Args& a, bool with_src_iter, bool with_dst_iter, bool in_blocks,
                                     KernelRun& r);
  // Binds the weights, biases and peepholes: the constants prepared at build,
  // or a's in oneDNN order in `w`, `r`, `bias`, `p` (working memory carved
  // for those that are not constant) and reordered in the thread's scratch.
  void bind_parameters(PrimitiveArgs& args, const Entry& e, const Args& a, float* w, float* r, float* bias, float* p,
                       KernelRun& run);

  // W or R ([D, G*H, cols]) in oneDNN gate order ("ldgoi"): the input itself, or `out` filled.
  const float* weights_user(const float* onnx, int64_t directions, int64_t h, int64_t cols, float* out) const;
  // Biases [D, G', H] (G' = 4 for lbr_gru) and peepholes [D, 3, H] in oneDNN order.
  void bias_user(const float* onnx_b, int64_t d, int64_t h, float* out) const;
  void peepholes_user(const float* onnx_p, int64_t d, int64_t h, float* out) const;
  int64_t bias_gates() const { return spec_.linear_before_reset ? 4 : spec_.gates(); }
  const int64_t* gate_order() const { return spec_.cell == Cell::Lstm ? kLstmGateOrder : kSameOrder; }

  const core::Node& node_;
  const Spec spec_;
  // Constant parameters, prepared once: W and R in oneDNN gate order (then
  // reordered to the primitive's layout on first use), biases, peepholes.
  ReorderedConstant weights_layer_, weights_iter_;
  core::Tensor bias_, peepholes_;
  bool bias_constant_ = false, peepholes_constant_ = false;
  ShapeCache<Entry> cache_;
};

DnnlRnnImpl::DnnlRnnImpl(const Spec& spec, const KernelBuild& b) : node_(b.node), spec_(spec) {
  const core::Tensor* w = b.constant_input(kW);
  const core::Tensor* r = b.constant_input(kR);
  const core::Tensor* bias = b.constant_input(kB);
  const core::Tensor* p = spec.cell == Cell::Lstm ? b.constant_input(kPeepholes) : nullptr;
  // Constants of a shape that does not fit fail at run time, where the error
  // names the input; they are simply not prepared here.
  const int64_t h = spec.hidden ? spec.hidden : r && r->rank() == 3 ? r->dim(2) : 0;
  const int64_t d = spec.directions, gh = spec.gates() * h;
  auto fits = [&](const core::Tensor* t, const core::Shape& shape) {
    return t && h > 0 && t->dtype() == core::DType::F32 && t->shape() == shape;
  };
  if (fits(r, {d, gh, h})) {
    core::Tensor user = core::Tensor::allocate(core::DType::F32, r->shape(), false);
    const float* src = weights_user(r->data<float>(), d, h, h, user.data<float>());
    weights_iter_.set(src == r->data<float>() ? *r : user);
  }
  if (w && w->rank() == 3 && fits(w, {d, gh, w->dim(2)})) {
    core::Tensor user = core::Tensor::allocate(core::DType::F32, w->shape(), false);
    const float* src = weights_user(w->data<float>(), d, h, w->dim(2), user.data<float>());
    weights_layer_.set(src == w->data<float>() ? *w : user);
  }
  if (fits(bias, {d, 2 * gh})) {
    bias_ = core::Tensor::allocate(core::DType::F32, {d, bias_gates(), h}, false);
    bias_user(bias->data<float>(), d, h, bias_.data<float>());
    bias_constant_ = true;
  }
  if (fits(p, {d, 3 * h})) {
    peepholes_ = core::Tensor::allocate(core::DType::F32, {d, 3, h}, false);
    peepholes_user(p->data<float>(), d, h, peepholes_.data<float>());
    peepholes_constant_ = true;
  }
}

const float* DnnlRnnImpl::weights_user(const float* onnx, int64_t directions, int64_t h, int64_t cols,
                                       float* out) const {
  if (spec_.cell != Cell::Lstm) return onnx;
  const int64_t g = spec_.gates();
  for (int64_t d = 0; d < directions; ++d)
    for (int64_t k = 0; k < g; ++k)
      std::memcpy(out + (d * g + k) * h * cols, onnx + (d * g + kLstmGateOrder[k]) * h * cols, sizeof(float) * h * cols);
  return out;
}

void DnnlRnnImpl::bias_user(const float* onnx_b, int64_t directions, int64_t h, float* out) const {
  const int64_t g = spec_.gates(), gb = bias_gates();
  const int64_t* order = gate_order();
  for (int64_t d = 0; d < directions; ++d) {
    const float* wb = onnx_b + d * 2 * g * h;
    const float* rb = wb + g * h;
    float* o = out + d * gb * h;
    for (int64_t k = 0; k < g; ++k) {
      const int64_t src = order[k] * h;
      const bool split = spec_.linear_before_reset && k == 2;  // Wbh here, Rbh as gate 3
      for (int64_t j = 0; j < h; ++j) o[k * h + j] = wb[src + j] + (split ? 0.0f : rb[src + j]);
    }
    if (spec_.linear_before_reset) std::memcpy(o + 3 * h, rb + 2 * h, sizeof(float) * h);
  }
}

void DnnlRnnImpl::peepholes_user(const float* onnx_p, int64_t directions, int64_t h, float* out) const {
  for (int64_t d = 0; d < directions; ++d)
    for (int64_t k = 0; k < 3; ++k)
      std::memcpy(out + (d * 3 + k) * h, onnx_p + (d * 3 + kPeepholeOrder[k]) * h, sizeof(float) * h);
}

DnnlRnnImpl::Entry DnnlRnnImpl::make_entry(const Args& a, bool with_src_iter, bool with_dst_iter, bool in_blocks,
                                           const dnnl::engine& engine) const {
  const int64_t T = a.steps, N = a.batch, I = a.input_size, H = a.hidden, D = a.directions, G = spec_.gates();
  Entry e;
  const dnnl_tag seq_tag = spec_.batch_first && !in_blocks ? dnnl_tag::ntc : dnnl_tag::tnc;
  e.src_layer = dnnl::memory::desc({T, N, I}, dnnl_dt::f32, seq_tag);
  e.dst_layer = dnnl::memory::desc({T, N, D * H}, dnnl_dt::f32, seq_tag);
  e.y_direct = spec_.batch_first || D == 1;
  const dnnl::memory::desc state({1, D, N, H}, dnnl_dt::f32, dnnl_tag::ldnc);
  if (with_src_iter) e.src_iter = state;
  if (with_dst_iter) e.dst_iter = state;
  e.weights_layer_user = dnnl::memory::desc({1, D, I, G, H}, dnnl_dt::f32, dnnl_tag::ldgoi);
  e.weights_iter_user = dnnl::memory::desc({1, D, H, G, H}, dnnl_dt::f32, dnnl_tag::ldgoi);
  const dnnl::memory::desc wl_any({1, D, I, G, H}, dnnl_dt::f32, dnnl_tag::any);
  const dnnl::memory::desc wi_any({1, D, H, G, H}, dnnl_dt::f32, dnnl_tag::any);
  // oneDNN 2.6 has no implementation without a bias: a node without B gets zeros.
  e.bias = dnnl::memory::desc({1, D, bias_gates(), H}, dnnl_dt::f32, dnnl_tag::ldgo);
  if (a.peepholes) e.peepholes = dnnl::memory::desc({1, D, 3, H}, dnnl_dt::f32, dnnl_tag::ldgo);

  const auto prop = dnnl::prop_kind::forward_inference;
  const auto direction = D == 2         ? dnnl::rnn_direction::bidirectional_concat
                         : spec_.reverse ? dnnl::rnn_direction::unidirectional_right2left
                                         : dnnl::rnn_direction::unidirectional_left2right;
  const dnnl::primitive_attr attr = scratchpad_attr();
  auto finish = [&](const auto& pd) {
    e.weights_layer = pd.weights_layer_desc();
    e.weights_iter = pd.weights_iter_desc();
    // Biases and peepholes are handed over as prepared; a primitive that
    // wants another layout for them is not one this path can feed.
    if (pd.bias_desc() != e.bias) throw dnnl::error(dnnl_unimplemented, "another bias layout");
    e.scratchpad = pd.scratchpad_desc().get_size();
    e.weights_layer_reorder = LayoutChange(e.weights_layer_user, e.weights_layer, engine);
    e.weights_iter_reorder = LayoutChange(e.weights_iter_user, e.weights_iter, engine);
  };
  switch (spec_.cell) {
    case Cell::Lstm: {
      const dnnl::memory::desc src_iter_c = with_src_iter ? state : dnnl::memory::desc();
      const dnnl::memory::desc dst_iter_c = with_dst_iter ? state : dnnl::memory::desc();
      dnnl::lstm_forward::desc desc(prop, direction, e.src_layer, e.src_iter, src_iter_c, wl_any, wi_any, e.peepholes,
                                    e.bias, e.dst_layer, e.dst_iter, dst_iter_c);
      dnnl::lstm_forward::primitive_desc pd(desc, attr, engine);
      if (a.peepholes && pd.weights_peephole_desc() != e.peepholes)
        throw dnnl::error(dnnl_unimplemented, "another peephole layout");
      finish(pd);
      e.prim = dnnl::lstm_forward(pd);
      break;
    }
    case Cell::Gru:
      if (spec_.linear_before_reset) {
        dnnl::lbr_gru_forward::desc desc(prop, direction, e.src_layer, e.src_iter, wl_any, wi_any, e.bias, e.dst_layer,
                                         e.dst_iter);
        dnnl::lbr_gru_forward::primitive_desc pd(desc, attr, engine);
        finish(pd);
        e.prim = dnnl::lbr_gru_forward(pd);
      } else {
        dnnl::gru_forward::desc desc(prop, direction, e.src_layer, e.src_iter, wl_any, wi_any, e.bias, e.dst_layer,
                                     e.dst_iter);
        dnnl::gru_forward::primitive_desc pd(desc, attr, engine);
        finish(pd);
        e.prim = dnnl::gru_forward(pd);
      }
      break;
    case Cell::Rnn: {
      const Kind k = spec_.activation(0, 0).kind;
      const auto algo = k == Kind::Relu   ? dnnl::algorithm::eltwise_relu
                        : k == Kind::Tanh ? dnnl::algorithm::eltwise_tanh
                                          : dnnl::algorithm::eltwise_logistic;
      dnnl::vanilla_rnn_forward::desc desc(prop, algo, direction, e.src_layer, e.src_iter, wl_any, wi_any, e.bias,
                                           e.dst_layer, e.dst_iter);
      dnnl::vanilla_rnn_forward::primitive_desc pd(desc, attr, engine);
      finish(pd);
      e.prim = dnnl::vanilla_rnn_forward(pd);
      break;
    }
  }
  return e;
}

// Working memory of one run, carved from one scratch buffer.
class Carver {
 public:
  explicit Carver(char* base) : base_(base) {}
  float* take(size_t floats) {
    if (!floats) return nullptr;
    float* p = base_ ? reinterpret_cast<float*>(base_ + used_) : nullptr;
    used_ += (floats * sizeof(float) + 63) / 64 * 64;
    return p;
  }
  size_t used() const { return used_; }

 private:
  char* base_;
  size_t used_ = 0;
};

std::shared_ptr<const DnnlRnnImpl::Entry> DnnlRnnImpl::entry(const Args& a, bool with_src_iter, bool with_dst_iter,
                                                             bool in_blocks, KernelRun& r) {
  std::vector<int64_t> key{a.steps,       a.batch,   a.input_size, a.hidden, with_src_iter, with_dst_iter,
                           a.peepholes != nullptr, in_blocks,  r.threads()};
  const dnnl::engine& engine = r.engine();
  return with_dnnl_errors(node_, [&] {
    return cache_.get(key, [&] {
      try {
        return make_entry(a, with_src_iter, with_dst_iter, in_blocks, engine);
      } catch (const dnnl::error& err) {
        if (err.status != dnnl_unimplemented) throw;
        return Entry{};  // no primitive: the plain path runs this shape
      }
    });
  });
}

void DnnlRnnImpl::bind_parameters(PrimitiveArgs& args, const Entry& e, const Args& a, float* w, float* r, float* bias,
                                  float* p, KernelRun& run) {
  const int64_t D = a.directions, H = a.hidden;
  const dnnl::engine& engine = run.engine();
  MemoryViews& views = run.views();
  auto weights = [&](int key, ReorderedConstant& constant, const LayoutChange& change,
                     const dnnl::memory::desc& user_md, const float* onnx, int64_t cols, float* staged, Scratch slot) {
    if (!constant.empty()) return constant.get(change.to(), user_md, engine, run.stream());
    const float* user = staged ? weights_user(onnx, D, H, cols, staged) : onnx;
    return change.apply(views.bind(key, user_md, engine, user), slot, run);
  };
  args[DNNL_ARG_WEIGHTS_LAYER] = weights(DNNL_ARG_WEIGHTS_LAYER, weights_layer_, e.weights_layer_reorder,
                                         e.weights_layer_user, a.w, a.input_size, w, Scratch::Weights);
  args[DNNL_ARG_WEIGHTS_ITER] = weights(DNNL_ARG_WEIGHTS_ITER, weights_iter_, e.weights_iter_reorder,
                                        e.weights_iter_user, a.r, H, r, Scratch::Src);
  if (a.b && bias) bias_user(a.b, D, H, bias);
  if (!a.b) std::fill_n(bias, D * bias_gates() * H, 0.0f);
  args[DNNL_ARG_BIAS] = views.bind(DNNL_ARG_BIAS, e.bias, engine, bias ? bias : bias_.data<float>());
  if (a.peepholes) {
    if (p) peepholes_user(a.peepholes, D, H, p);
    args[DNNL_ARG_WEIGHTS_PEEPHOLE] =
        views.bind(DNNL_ARG_WEIGHTS_PEEPHOLE, e.peepholes, engine, p ? p : peepholes_.data<float>());
  }
}

bool DnnlRnnImpl::run(const Args& a, KernelRun& r) {
  use_threads(r.threads());
  if (const int64_t block = a.steps_per_checkpoint(spec_)) return run_in_blocks(a, r, block);
  const int64_t T = a.steps, N = a.batch, H = a.hidden, D = a.directions;
  const bool lstm = spec_.cell == Cell::Lstm;
  const bool with_src_iter = a.initial_h || a.initial_c;
  const bool want_h = r.output_wanted(kYh), want_c = lstm && r.output_wanted(kYc);
  const bool with_dst_iter = want_h || want_c;
  dnnl::stream& stream = r.stream();
  const dnnl::engine& engine = r.engine();
  MemoryViews& views = r.views();
  const auto e = entry(a, with_src_iter, with_dst_iter, false, r);
  if (!e->prim) return false;

  float* y = r.output_wanted(kY) ? r.output(kY, core::DType::F32, a.y_shape(spec_)).data<float>() : nullptr;
  float* y_h = want_h ? r.output(kYh, core::DType::F32, a.state_shape(spec_)).data<float>() : nullptr;
  float* y_c = want_c ? r.output(kYc, core::DType::F32, a.state_shape(spec_)).data<float>() : nullptr;

  // What goes through working memory: run-time parameters in oneDNN order,
  // states that are batch-first or absent, and Y when it cannot be written
  // in place.
  const int64_t G = spec_.gates(), state_floats = D * N * H;
  const bool copy_w = weights_layer_.empty() && lstm, copy_r = weights_iter_.empty() && lstm;
  const bool copy_bias = !a.b || !bias_constant_, copy_p = a.peepholes && !peepholes_constant_;
  const bool stage_states = spec_.batch_first;
  auto carve = [&](Carver& c) {
    struct Parts {
      float *w, *r, *bias, *p, *h0, *c0, *hn, *cn, *y;
    } p{};
    p.w = copy_w ? c.take(D * G * H * a.input_size) : nullptr;
    p.r = copy_r ? c.take(D * G * H * H) : nullptr;
    p.bias = copy_bias ? c.take(D * bias_gates() * H) : nullptr;
    p.p = copy_p ? c.take(D * 3 * H) : nullptr;
    if (with_src_iter) {
      p.h0 = stage_states || !a.initial_h ? c.take(state_floats) : nullptr;
      p.c0 = lstm && (stage_states || !a.initial_c) ? c.take(state_floats) : nullptr;
    }
    if (with_dst_iter) {
      p.hn = stage_states || !want_h ? c.take(state_floats) : nullptr;
      p.cn = lstm && (stage_states || !want_c) ? c.take(state_floats) : nullptr;
    }
    p.y = !y || !e->y_direct ? c.take(T * N * D * H) : nullptr;
    return p;
  };
  Carver sizing(nullptr);
  carve(sizing);
  Carver carver(static_cast<char*>(scratch_buffer(Scratch::Extra, sizing.used())));
  const auto parts = carve(carver);

  // States in: the input as it stands (ldnc is layout 0's [D, N, H]), or
  // gathered from batch-first, or zeros.
  auto state_in = [&](const float* given, float* staged) -> const float* {
    if (!staged) return given;
    for (int64_t d = 0; d < D; ++d)
      for (int64_t n = 0; n < N; ++n) {
        float* dst = staged + (d * N + n) * H;
        if (given) std::memcpy(dst, given + (n * D + d) * H, sizeof(float) * H);
        else std::fill_n(dst, H, 0.0f);
      }
    return staged;
  };

  with_dnnl_errors(node_, [&] {
    PrimitiveArgs args;
    args[DNNL_ARG_SRC_LAYER] = views.bind(DNNL_ARG_SRC_LAYER, e->src_layer, engine, a.x);
    if (with_src_iter) {
      args[DNNL_ARG_SRC_ITER] = views.bind(DNNL_ARG_SRC_ITER, e->src_iter, engine, state_in(a.initial_h, parts.h0));
      if (lstm)
        args[DNNL_ARG_SRC_ITER_C] =
            views.bind(DNNL_ARG_SRC_ITER_C, e->src_iter, engine, state_in(a.initial_c, parts.c0));
    }
    bind_parameters(args, *e, a, parts.w, parts.r, parts.bias, parts.p, r);
    float* dst_layer = parts.y ? parts.y : y;
    args[DNNL_ARG_DST_LAYER] = views.bind(DNNL_ARG_DST_LAYER, e->dst_layer, engine, dst_layer);
    float* hn = parts.hn ? parts.hn : y_h;
    float* cn = parts.cn ? parts.cn : y_c;
    if (with_dst_iter) {
      args[DNNL_ARG_DST_ITER] = views.bind(DNNL_ARG_DST_ITER, e->dst_iter, engine, hn);
      if (lstm) args[DNNL_ARG_DST_ITER_C] = views.bind(DNNL_ARG_DST_ITER_C, e->dst_iter, engine, cn);
    }
    if (e->scratchpad)
      args[DNNL_ARG_SCRATCHPAD] = views.scratchpad(e->scratchpad, engine);
    args.execute(e->prim, stream);
    stream.wait();

    // Y of two directions in layout 0: oneDNN's [T, N, 2, H] to ONNX's [T, 2, N, H].
    if (y && parts.y)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t n = 0; n < N; ++n)
          for (int64_t d = 0; d < D; ++d)
            std::memcpy(y + ((t * D + d) * N + n) * H, parts.y + ((t * N + n) * D + d) * H, sizeof(float) * H);
    // Batch-first states out: ldnc to [N, D, H].
    auto state_out = [&](const float* staged, float* out) {
      if (!out || !stage_states) return;
      for (int64_t d = 0; d < D; ++d)
        for (int64_t n = 0; n < N; ++n)
          std::memcpy(out + (n * D + d) * H, staged + (d * N + n) * H, sizeof(float) * H);
    };
    state_out(hn, y_h);
    state_out(cn, y_c);
  });
  return true;
}

// Each block's final state is the next one's initial state, and a reverse
// direction takes its blocks from the end. Only one direction (two would
// take their blocks in opposite orders) and constant weights (run-time ones
// are reordered into the thread's scratch, which work run at a checkpoint
// reuses); what else lives across a checkpoint is in the run's workspace.
// For one direction both layouts' states ([1, N, H], [N, 1, H]) are oneDNN's
// ldnc as they stand.
bool DnnlRnnImpl::run_in_blocks(const Args& a, KernelRun& r, int64_t block) {
  if (a.directions != 1 || weights_layer_.empty() || weights_iter_.empty()) return false;
  const int64_t T = a.steps, N = a.batch, I = a.input_size, H = a.hidden;
  const bool lstm = spec_.cell == Cell::Lstm;
  // Blocks of `block` steps and one shorter (steps_per_checkpoint leaves at
  // least two blocks).
  Args part = a;
  part.steps = block;
  const auto whole_block = entry(part, true, true, true, r);
  part.steps = T % block;
  const auto short_block = part.steps ? entry(part, true, true, true, r) : whole_block;
  if (!whole_block->prim || !short_block->prim) return false;

  float* y = r.output_wanted(kY) ? r.output(kY, core::DType::F32, a.y_shape(spec_)).data<float>() : nullptr;
  float* y_h = r.output_wanted(kYh) ? r.output(kYh, core::DType::F32, a.state_shape(spec_)).data<float>() : nullptr;
  float* y_c =
      lstm && r.output_wanted(kYc) ? r.output(kYc, core::DType::F32, a.state_shape(spec_)).data<float>() : nullptr;
  const bool copy_bias = !a.b || !bias_constant_, copy_p = a.peepholes && !peepholes_constant_;
  // Batch-first X and Y are not contiguous per block of steps: they go
  // through a block of tnc.
  const bool stage_x = spec_.batch_first, stage_y = spec_.batch_first || !y;
  auto carve = [&](Carver& c) {
    struct Parts {
      float *h[2], *c[2], *bias, *p, *x, *y;
    } p{};
    for (int k = 0; k < 2; ++k) p.h[k] = c.take(N * H), p.c[k] = lstm ? c.take(N * H) : nullptr;
    p.bias = copy_bias ? c.take(bias_gates() * H) : nullptr;
    p.p = copy_p ? c.take(3 * H) : nullptr;
    p.x = stage_x ? c.take(block * N * I) : nullptr;
    p.y = stage_y ? c.take(block * N * H) : nullptr;
    return p;
  };
  Carver sizing(nullptr);
  carve(sizing);
  core::Tensor held = r.workspace(sizing.used());
  Carver carver(static_cast<char*>(held.raw()));
  const auto parts = carve(carver);
  auto load = [&](const float* given, float* state) {
    if (given) std::memcpy(state, given, sizeof(float) * N * H);
    else std::fill_n(state, N * H, 0.0f);
  };
  load(a.initial_h, parts.h[0]);
  if (lstm) load(a.initial_c, parts.c[0]);

  dnnl::stream& stream = r.stream();
  const dnnl::engine& engine = r.engine();
  MemoryViews& views = r.views();
  const int64_t blocks = (T + block - 1) / block;
  with_dnnl_errors(node_, [&] {
    for (int64_t k = 0; k < blocks; ++k) {
      if (k > 0) r.checkpoint();
      // Block k in the order the direction runs.
      const int64_t end = spec_.reverse ? T - k * block : std::min(T, (k + 1) * block);
      const int64_t first = spec_.reverse ? std::max<int64_t>(0, end - block) : k * block;
      const int64_t steps = end - first;
      const Entry& e = steps == block ? *whole_block : *short_block;
      if (stage_x)
        for (int64_t t = first; t < end; ++t)
          for (int64_t n = 0; n < N; ++n)
            std::memcpy(parts.x + ((t - first) * N + n) * I, a.x + (n * T + t) * I, sizeof(float) * I);
      PrimitiveArgs args;
      args[DNNL_ARG_SRC_LAYER] =
          views.bind(DNNL_ARG_SRC_LAYER, e.src_layer, engine, stage_x ? parts.x : a.x + first * N * I);
      args[DNNL_ARG_DST_LAYER] =
          views.bind(DNNL_ARG_DST_LAYER, e.dst_layer, engine, stage_y ? parts.y : y + first * N * H);
      args[DNNL_ARG_SRC_ITER] = views.bind(DNNL_ARG_SRC_ITER, e.src_iter, engine, parts.h[k % 2]);
      args[DNNL_ARG_DST_ITER] = views.bind(DNNL_ARG_DST_ITER, e.dst_iter, engine, parts.h[(k + 1) % 2]);
      if (lstm) {
        args[DNNL_ARG_SRC_ITER_C] = views.bind(DNNL_ARG_SRC_ITER_C, e.src_iter, engine, parts.c[k % 2]);
        args[DNNL_ARG_DST_ITER_C] = views.bind(DNNL_ARG_DST_ITER_C, e.dst_iter, engine, parts.c[(k + 1) % 2]);
      }
      bind_parameters(args, e, a, nullptr, nullptr, parts.bias, parts.p, r);
      if (e.scratchpad) args[DNNL_ARG_SCRATCHPAD] = views.scratchpad(e.scratchpad, engine);
      args.execute(e.prim, stream);
      stream.wait();
      if (y && stage_y)
        for (int64_t t = first; t < end; ++t)
          for (int64_t n = 0; n < N; ++n)
            std::memcpy(y + (n * T + t) * H, parts.y + ((t - first) * N + n) * H, sizeof(float) * H);
    }
  });
  if (y_h) std::memcpy(y_h, parts.h[blocks % 2], sizeof(float) * N * H);
  if (y_c) std::memcpy(y_c, parts.c[blocks % 2], sizeof(float) * N * H);
  return true;
}

}  // namespace

std::unique_ptr<DnnlRnn> make_dnnl_rnn(const Spec& spec, const KernelBuild& b) {
  if (spec.clip || spec.input_forget || !default_activations(spec)) return nullptr;
  return std::make_unique<DnnlRnnImpl>(spec, b);
}

}  // namespace hetero::cpu::rnn
