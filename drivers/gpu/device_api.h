// The small device interface the API-neutral GPU parts (topology, program,
// network, memory pool) are written against. drivers/opencl implements it
// over OpenCL and drivers/level_zero over Level Zero, so everything above
// this header is shared between them.
//
// Objects are used from one thread at a time except where a comment says
// otherwise; a Device may build programs from several threads at once.
#pragma once

#include <array>
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
  // Blocks until every event has completed; fails naming the first failure.
  virtual void wait(const std::vector<EventPtr>& events) = 0;
};

// What kernel selection needs to know of a device beyond its interface.
struct DeviceTraits {
  bool cpu = false;           // a CPU (PoCL): wide vectors per work item, few threads
  uint32_t vector_width = 4;  // the float vector width it prefers (1 to 16)
  bool library_gemm = false;  // Queue::gemm works (OpenCL with CLBlast)
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
  // Compiles a program from source. Safe to call from several threads.
  virtual std::shared_ptr<Executable> build(const std::string& source, const std::string& options) = 0;
  // A program from a binary that Executable::binary() gave; compiles no source.
  virtual std::shared_ptr<Executable> load(std::span<const uint8_t> binary, const std::string& options) = 0;
  virtual std::unique_ptr<Kernel> kernel(const Executable& executable, const std::string& name) = 0;
  virtual std::unique_ptr<Queue> queue() = 0;
  // How many times build() compiled source on this device (blob imports must
  // leave it unchanged).
  virtual uint64_t source_builds() const = 0;
};

}  // namespace hetero::gpu
