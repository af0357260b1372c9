// hetero.cpu ToChannelsLast / ToChannelsFirst: the layout changes the layout
// pass puts where channels-last activations meet ops that want NC+spatial.
// ToChannelsLast turns [N, C, spatial...] into [N, spatial..., C];
// ToChannelsFirst undoes it. Both are oneDNN reorders, or free views when
// C or the spatial size is 1 (the bytes are then in the same order). A large
// one runs in blocks of rows of its first spatial dim, with a checkpoint
// between two (drivers/cpu/checkpoint_blocks.h).
#include "drivers/cpu/checkpoint_blocks.h"
#include "drivers/cpu/conv_util.h"
#include "drivers/cpu/dnnl_util.h"
#include "drivers/cpu/kernel_factories.h"

namespace hetero::cpu {

namespace {

dnnl_dt dnnl_type(const core::Node& node, core::DType dtype) {
  switch (dtype) {
    case core::DType::F32: return dnnl_dt::f32;
    case core::DType::I32: return dnnl_dt::s32;
    case core::DType::I8: return dnnl_dt::s8;
    case core::DType::U8: return dnnl_dt::u8;
    case core::DType::F16: return dnnl_dt::f16;
    case core::DType::BF16: return dnnl_dt::bf16;
    default:
      fail(HETERO_NOT_SUPPORTED, node.describe() + ": element type " + core::dtype_name(dtype) + " is not supported");
  }
}

// Strides of logical dims N, C, spatial... stored in the given order.
dnnl::memory::desc typed_desc(const DnnlDims& logical, dnnl_dt dt, bool channels_last) {
  dnnl::memory::desc f = activation_desc(logical, channels_last);
  const auto& blk = f.data.format_desc.blocking;
  return dnnl::memory::desc(logical, dt, DnnlDims(blk.strides, blk.strides + logical.size()));
}

class LayoutKernel final : public Kernel {
 public:
  LayoutKernel(const KernelBuild& b, bool to_last) : node_(b.node), to_last_(to_last) {}

  void run(KernelRun& r) override {
    use_threads(r.threads());
    const core::Tensor* x = r.input(0);
    if (!x) fail(HETERO_INVALID_ARGUMENT, node_.describe() + ": input is missing");
    if (x->rank() < 3) {
      r.set_output(0, *x);  // nothing to permute
      return;
    }
    const DnnlDims logical = logical_dims(x->shape(), !to_last_);
    const core::Shape out_shape = memory_shape(logical, to_last_);
    int64_t spatial = 1;
    for (size_t i = 2; i < logical.size(); ++i) spatial *= logical[i];
    if (logical[1] == 1 || spatial == 1 || x->numel() == 0) {
      r.set_output(0, x->reshaped(out_shape));
      return;
    }
    const dnnl_dt dt = dnnl_type(node_, x->dtype());
    const dnnl::memory::desc from = typed_desc(logical, dt, !to_last_), to = typed_desc(logical, dt, to_last_);
    core::Tensor& y = r.output(0, x->dtype(), out_shape);
    // Rows of the first spatial dim: whole, or a block of them at a time.
    const int64_t rows = logical[2];
    const int64_t block = checkpoint_block_units(rows, double(x->nbytes()) / double(rows), kCheckpointBytes);
    const int64_t step = block ? block : rows;
    const size_t element = core::dtype_size(x->dtype());
    const int64_t from_row = from.data.format_desc.blocking.strides[2], to_row = to.data.format_desc.blocking.strides[2];
    const dnnl::engine& engine = r.engine();
    for (int64_t first = 0; first < rows; first += step) {
      const int64_t count = std::min(step, rows - first);
      std::vector<int64_t> key;
      append_key(key, x->shape());
      key.insert(key.end(), {static_cast<int64_t>(x->dtype()), r.threads(), count});
      DnnlDims part = logical;
      part[2] = count;
      // A block's rows inside the whole tensors, from its first row on.
      const DnnlDims no_offset(part.size(), 0);
      const dnnl::memory::desc from_part = block ? from.submemory_desc(part, no_offset) : from;
      const dnnl::memory::desc to_part = block ? to.submemory_desc(part, no_offset) : to;
      auto change = with_dnnl_errors(
          node_, [&] { return cache_.get(key, [&] { return LayoutChange(from_part, to_part, engine); }); });
      with_dnnl_errors(node_, [&] {
        MemoryViews& views = r.views();
        change->apply(views.bind(DNNL_ARG_FROM, from_part, engine, x->data<uint8_t>() + first * from_row * element),
                      views.bind(DNNL_ARG_TO, to_part, engine, y.data<uint8_t>() + first * to_row * element),
                      r.stream());
        r.stream().wait();
      });
      if (first + count < rows) r.checkpoint();
    }
  }

 private:
  const core::Node& node_;
  bool to_last_;
  ShapeCache<LayoutChange> cache_;
};

}  // namespace

std::unique_ptr<Kernel> make_to_channels_last(const KernelBuild& b) { return std::make_unique<LayoutKernel>(b, true); }
std::unique_ptr<Kernel> make_to_channels_first(const KernelBuild& b) {
  return std::make_unique<LayoutKernel>(b, false);
}

}  // namespace hetero::cpu
