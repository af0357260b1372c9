#include "drivers/cpu/dnnl_util.h"

#include <omp.h>

#include <array>
#include <cstdlib>
#include <new>

namespace hetero::cpu {

DnnlDims to_dims(const core::Shape& shape) { return DnnlDims(shape.begin(), shape.end()); }

dnnl::memory::desc plain_desc(const DnnlDims& dims, dnnl_dt dt) {
  if (dims.empty()) return dnnl::memory::desc({1}, dt, dnnl_tag::a);  // a scalar as one element
  DnnlDims strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * std::max<int64_t>(dims[i], 1);
  return dnnl::memory::desc(dims, dt, strides);
}

dnnl::memory::desc channels_last_desc(const DnnlDims& ncx_dims, dnnl_dt dt) {
  const size_t rank = ncx_dims.size();
  if (rank <= 2) return plain_desc(ncx_dims, dt);
  // Memory order N, spatial..., C.
  DnnlDims strides(rank);
  int64_t stride = 1;
  strides[1] = stride;
  stride *= std::max<int64_t>(ncx_dims[1], 1);
  for (size_t i = rank; i-- > 2;) {
    strides[i] = stride;
    stride *= std::max<int64_t>(ncx_dims[i], 1);
  }
  strides[0] = stride;
  return dnnl::memory::desc(ncx_dims, dt, strides);
}

namespace {

struct AlignedBuffer {
  void* data = nullptr;
  size_t size = 0;
  ~AlignedBuffer() { std::free(data); }
};

}  // namespace

void* scratch_buffer(Scratch slot, size_t bytes) {
  thread_local std::array<AlignedBuffer, static_cast<size_t>(Scratch::Count)> buffers;
  AlignedBuffer& b = buffers[static_cast<size_t>(slot)];
  if (b.size < bytes || !b.data) {
    std::free(b.data);
    b.data = nullptr;
    b.size = 0;
    // Round up so that slowly growing shapes do not reallocate every run.
    const size_t size = std::max<size_t>((bytes + bytes / 4 + 63) / 64 * 64, 64);
    b.data = std::aligned_alloc(64, size);
    if (!b.data) fail(HETERO_OUT_OF_MEMORY, "cannot allocate " + std::to_string(size) + " bytes of CPU scratch memory");
    b.size = size;
  }
  return b.data;
}

void use_threads(int threads) {
  if (threads > 0 && omp_get_max_threads() != threads) omp_set_num_threads(threads);
}

dnnl::memory ReorderedConstant::get(const dnnl::memory::desc& md, const dnnl::memory::desc& source_md,
                                    const dnnl::engine& engine, dnnl::stream& stream) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [desc, mem] : reordered_)
    if (desc == md) return mem.first;
  if (md == source_md) {
    dnnl::memory m = view_memory(md, engine, source_.raw());
    reordered_.emplace_back(md, std::make_pair(m, source_));
    return m;
  }
  // The reordered copy lives in a tensor so that its memory is freed with the kernel.
  core::Tensor copy = core::Tensor::allocate(core::DType::U8, {static_cast<int64_t>(md.get_size())}, false);
  dnnl::memory dst = view_memory(md, engine, copy.raw());
  dnnl::memory src = view_memory(source_md, engine, source_.raw());
  dnnl::reorder(src, dst).execute(stream, src, dst);
  stream.wait();
  reordered_.emplace_back(md, std::make_pair(dst, copy));
  return dst;
}

LayoutChange::LayoutChange(const dnnl::memory::desc& from, const dnnl::memory::desc& to, const dnnl::engine& engine)
    : to_(to) {
  if (from != to) prim_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine, from, engine, to));
}

dnnl::memory LayoutChange::apply(const dnnl::memory& from, Scratch slot, KernelRun& run) const {
  if (!prim_) return from;
  dnnl::memory dst = run.views().scratch(slot, to_, run.engine());
  apply(from, dst, run.stream());
  return dst;
}

void LayoutChange::apply(const dnnl::memory& from, const dnnl::memory& to, dnnl::stream& stream) const {
  PrimitiveArgs args;
  args[DNNL_ARG_FROM] = from;
  args[DNNL_ARG_TO] = to;
  args.execute(prim_, stream);
}

void require_float_inputs(const KernelBuild& b, std::initializer_list<size_t> inputs) {
  for (size_t i : inputs) {
    const core::DType dt = b.input_dtype(i);
    if (dt != core::DType::F32 && dt != core::DType::Undefined)
      b.unsupported(std::string("input ") + std::to_string(i) + " is " + core::dtype_name(dt) +
                    "; the CPU driver runs this op on float32 only");
  }
}

dnnl::memory& PrimitiveArgs::operator[](int key) {
  for (size_t i = 0; i < size_; ++i)
    if (keys_[i] == key) return memory_[i];
  if (size_ == kMaxArgs)
    fail(HETERO_INTERNAL, "a oneDNN primitive takes more than " + std::to_string(kMaxArgs) + " arguments");
  keys_[size_] = key;
  return memory_[size_++];
}

void PrimitiveArgs::execute(const dnnl::primitive& prim, dnnl::stream& stream) const {
  std::array<dnnl_exec_arg_t, kMaxArgs> args;
  for (size_t i = 0; i < size_; ++i) args[i] = {keys_[i], memory_[i].get(true)};
  dnnl::error::wrap_c_api(dnnl_primitive_execute(prim.get(), stream.get(), static_cast<int>(size_), args.data()),
                          "could not execute a primitive");
}

dnnl::memory MemoryViews::View::at(const void* where) {
  if (data != where) {
    memory.set_data_handle(const_cast<void*>(where));
    data = where;
  }
  return memory;
}

dnnl::memory MemoryViews::bind(int key, const dnnl::memory::desc& md, const dnnl::engine& engine,
                               const void* data) {
  for (View& v : views_)
    if (v.key == key && v.md == md) return v.at(data);
  if (views_.size() >= kMaxViews) views_.erase(views_.begin());
  views_.push_back({key, md, view_memory(md, engine, data), data});
  return views_.back().memory;
}

dnnl::memory MemoryViews::scratchpad(size_t bytes, const dnnl::engine& engine) {
  void* data = scratch_buffer(Scratch::Pad, bytes);  // this thread's: the frame may run on another next time
  // Found by size, without making a descriptor to compare (a dims vector and
  // oneDNN's initialisation, per primitive call).
  for (View& v : views_)
    if (v.key == DNNL_ARG_SCRATCHPAD && v.md.get_size() == bytes) return v.at(data);
  const dnnl::memory::desc md({static_cast<int64_t>(bytes)}, dnnl_dt::u8, dnnl_tag::a);
  return bind(DNNL_ARG_SCRATCHPAD, md, engine, data);
}

dnnl::memory MemoryViews::scratch(Scratch slot, const dnnl::memory::desc& md, const dnnl::engine& engine) {
  // Keys below every DNNL_ARG_* (all positive), one per slot.
  return bind(-1 - static_cast<int>(slot), md, engine, scratch_buffer(slot, md.get_size()));
}

}  // namespace hetero::cpu
