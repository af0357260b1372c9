// The small device interface the API-neutral GPU parts (topology, program,
// network, memory pool) are written against. drivers/opencl implements it
// over OpenCL and drivers/level_zero over Level Zero, so everything above
// this header is shared between them.
//
// Objects are used from one thread at a time except where a comment says
// otherwise; a Device may build programs from several threads at once.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace hetero::gpu {

// Device memory of a fixed size.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual size_t size() const = 0;
};

// Completion of one enqueued command.
class Event {
 public:
  virtual ~Event() = default;
};
using EventPtr = std::shared_ptr<Event>;

// A built device program holding one or more kernels (a batch).
class Executable {
 public:
  virtual ~Executable() = default;
  // The device binary (OpenCL: CL_PROGRAM_BINARIES; Level Zero: the native
  // binary), which Device::load() accepts again.
  virtual std::vector<uint8_t> binary() const = 0;
};

// One kernel of an Executable with its arguments bound. Arguments are all
// buffers (shapes and attributes are compile-time constants of the source).
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void set_arg(uint32_t index, Buffer& buffer) = 0;
};

// A matrix product run by the device's linear algebra library (OpenCL:
// CLBlast) instead of a kernel of ours: row-major c[i] = a[i] x b[i] for
// i < batch, a [m, k], b [k, n], c [m, n], consecutive matrices `*_stride`
// elements apart (a_stride 0: one a for every i).
struct LibraryGemm {
  uint32_t m = 0, n = 0, k = 0, batch = 1;
  uint64_t a_stride = 0, b_stride = 0, c_stride = 0;
  bool operator==(const LibraryGemm&) const = default;
};

struct Range {
  std::array<size_t, 3> global{1, 1, 1};
  std::array<size_t, 3> local{0, 0, 0};  // 0: the runtime chooses
  uint32_t dims = 1;
};

// A command queue. Commands start once the events they are given have
// completed; wait() is the only blocking call.
class Queue {
 public:
  virtual ~Queue() = default;
  // `host` must stay valid until the returned event completes.
  virtual EventPtr write(Buffer& dst, const void* host, size_t bytes, const std::vector<EventPtr>& deps) = 0;
  virtual EventPtr read(Buffer& src, void* host, size_t bytes, const std::vector<EventPtr>& deps) = 0;
  virtual EventPtr launch(Kernel& kernel, const Range& range, const std::vector<EventPtr>& deps) = 0;
  // The library's matrix product, where DeviceTraits::library_gemm says
  // there is one (NOT_SUPPORTED elsewhere).
  virtual EventPtr gemm(const LibraryGemm& call, Buffer& a, Buffer& b, Buffer& c, const std::vector<EventPtr>& deps);
  // Makes what the device wrote to a buffer from Device::wrap() visible in
  // the host memory under it, after `deps`, copying nothing (OpenCL: a map
  // and unmap, which the specification requires before the host reads such
  // memory; NOT_SUPPORTED where wrap() gives no buffer).
  virtual EventPtr sync_to_host(Buffer& buffer, size_t bytes, const std::vector<EventPtr>& deps);
  // Blocks until every event has completed; fails naming the first failure.
  virtual void wait(const std::vector<EventPtr>& events) = 0;
};

// What kernel selection needs to know of a device beyond its interface.
struct DeviceTraits {
  bool cpu = false;           // a CPU (PoCL): wide vectors per work item, few threads
  uint32_t vector_width = 4;  // the float vector width it prefers (1 to 16)
  bool library_gemm = false;  // Queue::gemm works (OpenCL with CLBlast)
  // The device's memory is the host's (OpenCL: CL_DEVICE_HOST_UNIFIED_MEMORY,
  // PoCL), so that Device::wrap() lends it host memory instead of copying.
  bool host_unified_memory = false;
  // The alignment, in bytes, host memory needs for wrap() to take it: the
  // alignment of the device's own buffers (OpenCL: CL_DEVICE_MEM_BASE_ADDR_ALIGN,
  // 128 bytes on PoCL), so that no kernel or library can tell a lent buffer
  // from one the device allocated.
  size_t host_alignment = 4096;
  uint32_t compute_units = 1;  // how many work groups it runs at once (PoCL: its threads)
};

class Device {
 public:
  virtual ~Device() = default;
  // "OPENCL.1": for messages and the tuning cache.
  virtual std::string name() const = 0;
  virtual size_t max_work_group_size() const = 0;
  virtual DeviceTraits traits() const { return {}; }
  // Device memory, initialised from `init` when it is given.
  virtual std::shared_ptr<Buffer> allocate(size_t bytes, const void* init = nullptr) = 0;
  // A buffer whose memory is `host` itself, on a device whose memory is the
  // host's (DeviceTraits::host_unified_memory); null where it is not, or
  // where `host` is not aligned to DeviceTraits::host_alignment, and the
  // caller copies instead. `host` must outlive the buffer and every command
  // that uses it; the device reads it only when `read_only`.
  virtual std::shared_ptr<Buffer> wrap(void* host, size_t bytes, bool read_only) {
    (void)host, (void)bytes, (void)read_only;
    return nullptr;
  }
  // Compiles a program from source. Safe to call from several threads.
  virtual std::shared_ptr<Executable> build(const std::string& source, const std::string& options) = 0;
  // A program from a binary that Executable::binary() gave; compiles no source.
  virtual std::shared_ptr<Executable> load(std::span<const uint8_t> binary, const std::string& options) = 0;
  virtual std::unique_ptr<Kernel> kernel(const Executable& executable, const std::string& name) = 0;
  virtual std::unique_ptr<Queue> queue() = 0;
  // How many times build() compiled source on this device (blob imports must
  // leave it unchanged).
  virtual uint64_t source_builds() const = 0;

  // Tensor bytes inferences have copied between host memory and this
  // device's buffers (Network counts the inputs it writes and the outputs it
  // reads; constants uploaded at compile are not counted): the BYTES_COPIED
  // metric. Safe from several threads.
  uint64_t bytes_copied() const { return bytes_copied_.load(std::memory_order_relaxed); }
  void count_copied(uint64_t bytes) { bytes_copied_.fetch_add(bytes, std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> bytes_copied_{0};
};

}  // namespace hetero::gpu
