// Helpers shared by the CPU driver's oneDNN kernels: dims and memory
// descriptors over core::Tensor memory, per-thread scratch buffers, a
// per-shape cache of primitives, and oneDNN errors as hetero errors.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <dnnl.hpp>

#include "core/error.h"
#include "core/tensor.h"
#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

// dnnl::memory::dims is a std::vector<int64_t>, the same type as core::Shape.
using DnnlDims = dnnl::memory::dims;
using dnnl_tag = dnnl::memory::format_tag;
using dnnl_dt = dnnl::memory::data_type;

DnnlDims to_dims(const core::Shape& shape);
// Row-major ("abcd...") f32 descriptor of these dims.
dnnl::memory::desc plain_desc(const DnnlDims& dims, dnnl_dt dt = dnnl_dt::f32);
// Channels-last descriptor of logical N,C,spatial... dims (nwc, nhwc,
// ndhwc); rank 2 is plain.
dnnl::memory::desc channels_last_desc(const DnnlDims& ncx_dims, dnnl_dt dt = dnnl_dt::f32);

// Whether oneDNN chose its reference implementation for the primitive
// description `pd`: correct, and many times slower than its JIT kernels.
template <typename PrimitiveDesc>
bool is_reference(const PrimitiveDesc& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

// A dnnl::memory over existing memory; no copy, nothing owned.
inline dnnl::memory view_memory(const dnnl::memory::desc& md, const dnnl::engine& engine, const void* data) {
  return dnnl::memory(md, engine, const_cast<void*>(data));
}

enum class Scratch;  // below

// Views of one node's operands for its primitives, kept between runs and
// re-pointed at each run's tensors (set_data_handle) instead of made anew:
// making a dnnl::memory costs several allocations inside oneDNN, which with
// the argument map around it was a quarter of a small model's inference
// (openWakeWord's hey_mycroft). A frame keeps one set per node
// (KernelRun::views()) and runs one inference at a time, so nothing else
// re-points a view between its binding and the primitive that reads it.
class MemoryViews {
 public:
  // The view of `data` as `md` for the argument `key` (DNNL_ARG_*): the same
  // object as at the last run with that key and descriptor. A primitive's
  // arguments need distinct keys; a view stays bound until its key and
  // descriptor are bound again.
  dnnl::memory bind(int key, const dnnl::memory::desc& md, const dnnl::engine& engine, const void* data);
  // The primitive's user-managed scratchpad of `bytes` in the Scratch::Pad buffer.
  dnnl::memory scratchpad(size_t bytes, const dnnl::engine& engine);
  // A view as `md` of this thread's `slot` buffer, grown to fit (an operand
  // reordered for the primitive, or its output before the reorder back).
  dnnl::memory scratch(Scratch slot, const dnnl::memory::desc& md, const dnnl::engine& engine);

 private:
  struct View {
    int key;
    dnnl::memory::desc md;
    dnnl::memory memory;
    const void* data;
    // The view, pointed at `where` when it was not.
    dnnl::memory at(const void* where);
  };
  // A node binds a few views per shape it has run at; beyond this many the
  // oldest goes.
  static constexpr size_t kMaxViews = 32;
  std::vector<View> views_;
};

// One execution's arguments of a primitive, held where the call is made:
// dnnl::primitive::execute() takes an std::unordered_map, which costs an
// allocation per argument, and another for the array it copies them into,
// at every node of every inference. Used as that map is (args[key] = memory),
// then run with execute().
class PrimitiveArgs {
 public:
  // The argument `key` (DNNL_ARG_*): added empty when absent.
  dnnl::memory& operator[](int key);
  void execute(const dnnl::primitive& prim, dnnl::stream& stream) const;

 private:
  // An RNN takes the most: 13 arguments; a fused post-op chain adds one per
  // binary step.
  static constexpr size_t kMaxArgs = 32;
  std::array<int, kMaxArgs> keys_;
  std::array<dnnl::memory, kMaxArgs> memory_;
  size_t size_ = 0;
};

// Per-thread scratch buffers, 64-byte aligned, grown on demand and kept for
// the thread's life: reorder targets and primitive scratchpads must not be
// allocated per run, and must not be shared by requests running at once.
enum class Scratch { Pad, Src, Dst, Weights, Extra, Count };
void* scratch_buffer(Scratch slot, size_t bytes);

// The attributes every primitive of the driver starts from: its scratchpad
// is the caller's (MemoryViews::scratchpad(), at run), so that oneDNN allocates
// none per primitive; with `post_ops` when given.
inline dnnl::primitive_attr scratchpad_attr(const dnnl::post_ops* post_ops = nullptr) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (post_ops) attr.set_post_ops(*post_ops);
  return attr;
}

// Makes the calling thread's OpenMP team `threads` wide (oneDNN reads the
// thread's OpenMP setting); no-op when it already is or threads <= 0.
void use_threads(int threads);

// The team for a primitive of `work` multiply-adds, while it lives: one
// thread below kSerialWork, else `threads`, which it restores at the end
// (kernels' own OpenMP loops read the same setting). A parallel region wakes
// the team's other threads, which then spin for milliseconds waiting for
// the next region: for a matmul of a few thousand multiply-adds (a small
// model's dense layer) that costs more than the work, and on a two-core box
// it holds a core the request's other threads (heterod's loop, its client)
// need. oneDNN fixes a primitive's team when it is created, so the team
// belongs in the primitive's cache key: key it on threads().
class TeamForWork {
 public:
  static constexpr double kSerialWork = 32768;
  TeamForWork(int threads, double work) : threads_(threads), team_(work < kSerialWork ? 1 : threads) {
    use_threads(team_);
  }
  ~TeamForWork() { use_threads(threads_); }
  TeamForWork(const TeamForWork&) = delete;
  TeamForWork& operator=(const TeamForWork&) = delete;
  int threads() const noexcept { return team_; }

 private:
  int threads_, team_;
};

// Runs `body`, turning a dnnl::error into hetero::Failure naming the node, so
// that a primitive oneDNN cannot create (or run) is reported, not a crash.
template <typename Body>
decltype(auto) with_dnnl_errors(const core::Node& node, Body&& body) {
  try {
    return body();
  } catch (const dnnl::error& e) {
    const hetero_status status = e.status == dnnl_unimplemented ? HETERO_NOT_SUPPORTED
                                 : e.status == dnnl_out_of_memory ? HETERO_OUT_OF_MEMORY
                                                                   : HETERO_DRIVER_ERROR;
    fail(status, node.describe() + ": oneDNN: " + e.what());
  }
}

// Whatever a kernel derives from its input shapes (primitives, descriptors),
// built once per distinct key and shared by the requests that run the kernel
// concurrently. Few shapes are expected; the oldest entry goes when full.
template <typename Entry>
class ShapeCache {
 public:
  using Key = std::vector<int64_t>;

  template <typename Make>
  std::shared_ptr<const Entry> get(const Key& key, Make&& make) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [k, e] : entries_)
      if (k == key) return e;
    std::shared_ptr<const Entry> e = std::make_shared<const Entry>(make());
    if (entries_.size() >= kMaxEntries) entries_.erase(entries_.begin());
    entries_.emplace_back(key, e);
    return e;
  }

 private:
  static constexpr size_t kMaxEntries = 8;
  std::mutex mu_;
  std::vector<std::pair<Key, std::shared_ptr<const Entry>>> entries_;
};

// Appends a shape (with its rank, so that [2,3]+[4] and [2]+[3,4] differ) to a cache key.
inline void append_key(std::vector<int64_t>& key, const core::Shape& shape) {
  key.push_back(static_cast<int64_t>(shape.size()));
  key.insert(key.end(), shape.begin(), shape.end());
}

// A constant tensor reordered once into a layout a primitive chose (weights),
// and the descriptors it has been reordered to so far: a new input shape can
// make oneDNN prefer another weights layout.
class ReorderedConstant {
 public:
  // Set once, by the kernel's constructor.
  void set(const core::Tensor& source) { source_ = source; }
  bool empty() const { return source_.empty(); }
  const core::Tensor& source() const { return source_; }
  // The constant, whose memory `source_md` describes, in layout `md`;
  // reordered on first request.
  dnnl::memory get(const dnnl::memory::desc& md, const dnnl::memory::desc& source_md, const dnnl::engine& engine,
                   dnnl::stream& stream);

 private:
  core::Tensor source_;
  std::mutex mu_;
  std::vector<std::pair<dnnl::memory::desc, std::pair<dnnl::memory, core::Tensor>>> reordered_;
};

// A reorder between two layouts of the same tensor, made once per shape (a
// reorder primitive costs microseconds to create); a no-op when they agree.
class LayoutChange {
 public:
  LayoutChange() = default;
  LayoutChange(const dnnl::memory::desc& from, const dnnl::memory::desc& to, const dnnl::engine& engine);
  bool needed() const { return static_cast<bool>(prim_); }
  const dnnl::memory::desc& to() const { return to_; }
  // `from` in layout to(): a scratch buffer of `slot` (viewed through the
  // run's MemoryViews), or `from` itself.
  dnnl::memory apply(const dnnl::memory& from, Scratch slot, KernelRun& run) const;
  // Reorders into memory the caller owns (needed() must be true).
  void apply(const dnnl::memory& from, const dnnl::memory& to, dnnl::stream& stream) const;

 private:
  dnnl::memory::desc to_;
  dnnl::reorder prim_;
};

// The float32 check every oneDNN kernel makes at build time.
void require_float_inputs(const KernelBuild& b, std::initializer_list<size_t> inputs);

}  // namespace hetero::cpu
