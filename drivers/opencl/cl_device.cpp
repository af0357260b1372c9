#include "drivers/opencl/cl_device.h"

#include <algorithm>
#include <cstdint>

#include "core/error.h"
#include "drivers/opencl/clblast_library.h"

namespace hetero::opencl {

const char* cl_error_name(cl_int status) {
  switch (status) {
#define CASE(x) case x: return #x;
    CASE(CL_SUCCESS) CASE(CL_DEVICE_NOT_FOUND) CASE(CL_DEVICE_NOT_AVAILABLE) CASE(CL_COMPILER_NOT_AVAILABLE)
    CASE(CL_MEM_OBJECT_ALLOCATION_FAILURE) CASE(CL_OUT_OF_RESOURCES) CASE(CL_OUT_OF_HOST_MEMORY)
    CASE(CL_BUILD_PROGRAM_FAILURE) CASE(CL_INVALID_VALUE) CASE(CL_INVALID_PLATFORM) CASE(CL_INVALID_DEVICE)
    CASE(CL_INVALID_CONTEXT) CASE(CL_INVALID_COMMAND_QUEUE) CASE(CL_INVALID_MEM_OBJECT) CASE(CL_INVALID_BINARY)
    CASE(CL_INVALID_BUILD_OPTIONS) CASE(CL_INVALID_PROGRAM) CASE(CL_INVALID_PROGRAM_EXECUTABLE)
    CASE(CL_INVALID_KERNEL_NAME) CASE(CL_INVALID_KERNEL) CASE(CL_INVALID_ARG_INDEX) CASE(CL_INVALID_ARG_VALUE)
    CASE(CL_INVALID_ARG_SIZE) CASE(CL_INVALID_KERNEL_ARGS) CASE(CL_INVALID_WORK_DIMENSION)
    CASE(CL_INVALID_WORK_GROUP_SIZE) CASE(CL_INVALID_WORK_ITEM_SIZE) CASE(CL_INVALID_GLOBAL_OFFSET)
    CASE(CL_INVALID_EVENT_WAIT_LIST) CASE(CL_INVALID_EVENT) CASE(CL_INVALID_BUFFER_SIZE)
    CASE(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
#undef CASE
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "unknown OpenCL error";
  }
}

void check(cl_int status, const std::string& what) {
  if (status == CL_SUCCESS) return;
  const hetero_status code = status == CL_OUT_OF_HOST_MEMORY || status == CL_MEM_OBJECT_ALLOCATION_FAILURE
                                 ? HETERO_OUT_OF_MEMORY
                                 : HETERO_DRIVER_ERROR;
  fail(code, what + ": " + cl_error_name(status) + " (" + std::to_string(status) + ")");
}

namespace {

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  if (clGetDeviceInfo(d, what, n, s.data(), nullptr) != CL_SUCCESS) return {};
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  if (clGetPlatformInfo(p, what, n, s.data(), nullptr) != CL_SUCCESS) return {};
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

class ClBuffer final : public gpu::Buffer {
 public:
  ClBuffer(cl_mem mem, size_t size) : mem_(mem), size_(size) {}
  ~ClBuffer() override { clReleaseMemObject(mem_); }
  size_t size() const override { return size_; }
  cl_mem mem() const { return mem_; }

 private:
  cl_mem mem_;
  size_t size_;
};

class ClEvent final : public gpu::Event {
 public:
  explicit ClEvent(cl_event e) : event_(e) {}
  ~ClEvent() override { clReleaseEvent(event_); }
  cl_event event() const { return event_; }

 private:
  cl_event event_;
};

class ClExecutable final : public gpu::Executable {
 public:
  ClExecutable(cl_program p, cl_device_id d) : program_(p), device_(d) {}
  ~ClExecutable() override { clReleaseProgram(program_); }
  cl_program program() const { return program_; }
  std::vector<uint8_t> binary() const override {
    size_t size = 0;
    check(clGetProgramInfo(program_, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr), "CL_PROGRAM_BINARY_SIZES");
    std::vector<uint8_t> bin(size);
    unsigned char* ptr = bin.data();
    check(clGetProgramInfo(program_, CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr), "CL_PROGRAM_BINARIES");
    return bin;
  }

 private:
  cl_program program_;
  cl_device_id device_;
};

class ClKernel final : public gpu::Kernel {
 public:
  ClKernel(cl_kernel k, std::string name) : kernel_(k), name_(std::move(name)) {}
  ~ClKernel() override { clReleaseKernel(kernel_); }
  void set_arg(uint32_t index, gpu::Buffer& buffer) override {
    cl_mem mem = static_cast<ClBuffer&>(buffer).mem();
    check(clSetKernelArg(kernel_, index, sizeof mem, &mem), "setting argument " + std::to_string(index) + " of " + name_);
  }
  cl_kernel kernel() const { return kernel_; }
  const std::string& name() const { return name_; }

 private:
  cl_kernel kernel_;
  std::string name_;
};

std::vector<cl_event> wait_list(const std::vector<gpu::EventPtr>& deps) {
  std::vector<cl_event> list;
  for (const gpu::EventPtr& e : deps)
    if (e) list.push_back(static_cast<const ClEvent&>(*e).event());
  return list;
}

// An in-order queue: commands run in the order they are enqueued, so that a
// library call, which takes no wait list, still runs after what it reads.
class ClQueue final : public gpu::Queue {
 public:
  ClQueue(ClDevice& owner, cl_context context, cl_device_id device) : owner_(owner) {
    cl_int err = CL_SUCCESS;
    queue_ = clCreateCommandQueue(context, device, 0, &err);
    check(err, "clCreateCommandQueue");
  }
  ~ClQueue() override {
    clFinish(queue_);
    clReleaseCommandQueue(queue_);
  }
  gpu::EventPtr write(gpu::Buffer& dst, const void* host, size_t bytes, const std::vector<gpu::EventPtr>& deps) override {
    const auto list = wait_list(deps);
    cl_event e = nullptr;
    check(clEnqueueWriteBuffer(queue_, static_cast<ClBuffer&>(dst).mem(), CL_FALSE, 0, bytes, host,
                               static_cast<cl_uint>(list.size()), list.empty() ? nullptr : list.data(), &e),
          "clEnqueueWriteBuffer");
    return std::make_shared<ClEvent>(e);
  }
  gpu::EventPtr read(gpu::Buffer& src, void* host, size_t bytes, const std::vector<gpu::EventPtr>& deps) override {
    const auto list = wait_list(deps);
    cl_event e = nullptr;
    check(clEnqueueReadBuffer(queue_, static_cast<ClBuffer&>(src).mem(), CL_FALSE, 0, bytes, host,
                              static_cast<cl_uint>(list.size()), list.empty() ? nullptr : list.data(), &e),
          "clEnqueueReadBuffer");
    return std::make_shared<ClEvent>(e);
  }
  gpu::EventPtr launch(gpu::Kernel& kernel, const gpu::Range& range, const std::vector<gpu::EventPtr>& deps) override {
    auto& k = static_cast<ClKernel&>(kernel);
    const auto list = wait_list(deps);
    cl_event e = nullptr;
    const bool local = range.local[0] != 0;
    check(clEnqueueNDRangeKernel(queue_, k.kernel(), range.dims, nullptr, range.global.data(),
                                 local ? range.local.data() : nullptr, static_cast<cl_uint>(list.size()),
                                 list.empty() ? nullptr : list.data(), &e),
          "clEnqueueNDRangeKernel(" + k.name() + ")");
    return std::make_shared<ClEvent>(e);
  }
  gpu::EventPtr gemm(const gpu::LibraryGemm& call, gpu::Buffer& a, gpu::Buffer& b, gpu::Buffer& c,
                     const std::vector<gpu::EventPtr>& deps) override {
#if HETERO_HAVE_CLBLAST
    (void)deps;  // the queue is in order
    owner_.library_call(call);
    cl_event e = nullptr;
    const CLBlastStatusCode st = clblast_library()->sgemm_strided_batched(
        CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, call.m, call.n, call.k, 1.0f,
        static_cast<ClBuffer&>(a).mem(), 0, call.k, call.a_stride, static_cast<ClBuffer&>(b).mem(), 0, call.n,
        call.b_stride, 0.0f, static_cast<ClBuffer&>(c).mem(), 0, call.n, call.c_stride, call.batch, &queue_, &e);
    if (st != CLBlastSuccess)
      fail(HETERO_DRIVER_ERROR, "CLBlastSgemmStridedBatched(" + std::to_string(call.m) + "x" + std::to_string(call.n) +
                                    "x" + std::to_string(call.k) + "): CLBlast status " + std::to_string(st));
    return std::make_shared<ClEvent>(e);
#else
    return gpu::Queue::gemm(call, a, b, c, deps);
#endif
  }
  // A map for reading and its unmap: where the buffer is host memory the map
  // copies nothing and returns that memory, and the specification makes it
  // the point after which the host sees what the device wrote there.
  gpu::EventPtr sync_to_host(gpu::Buffer& buffer, size_t bytes, const std::vector<gpu::EventPtr>& deps) override {
    const auto list = wait_list(deps);
    cl_mem mem = static_cast<ClBuffer&>(buffer).mem();
    cl_event mapped = nullptr, unmapped = nullptr;
    cl_int err = CL_SUCCESS;
    void* host = clEnqueueMapBuffer(queue_, mem, CL_FALSE, CL_MAP_READ, 0, bytes, static_cast<cl_uint>(list.size()),
                                    list.empty() ? nullptr : list.data(), &mapped, &err);
    check(err, "clEnqueueMapBuffer");
    const ClEvent map_event(mapped);
    check(clEnqueueUnmapMemObject(queue_, mem, host, 1, &mapped, &unmapped), "clEnqueueUnmapMemObject");
    return std::make_shared<ClEvent>(unmapped);
  }
  void wait(const std::vector<gpu::EventPtr>& events) override {
    const auto list = wait_list(events);
    if (list.empty()) return;
    check(clWaitForEvents(static_cast<cl_uint>(list.size()), list.data()), "clWaitForEvents");
  }

 private:
  ClDevice& owner_;
  cl_command_queue queue_ = nullptr;
};

}  // namespace

std::vector<DeviceInfo> enumerate_devices(std::string& why) {
  std::vector<DeviceInfo> out;
  cl_uint nplat = 0;
  const cl_int st = clGetPlatformIDs(0, nullptr, &nplat);
  if (st != CL_SUCCESS || nplat == 0) {
    why = st == CL_SUCCESS || st == -1001
              ? "no OpenCL platform is installed (the ICD loader found no vendor in OCL_ICD_VENDORS or /etc/OpenCL/vendors)"
              : std::string("clGetPlatformIDs failed: ") + cl_error_name(st);
    return out;
  }
  std::vector<cl_platform_id> platforms(nplat);
  if (clGetPlatformIDs(nplat, platforms.data(), nullptr) != CL_SUCCESS) {
    why = "clGetPlatformIDs failed";
    return out;
  }
  for (cl_platform_id p : platforms) {
    cl_uint ndev = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &ndev) != CL_SUCCESS || ndev == 0) continue;
    std::vector<cl_device_id> devices(ndev);
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, ndev, devices.data(), nullptr) != CL_SUCCESS) continue;
    for (cl_device_id d : devices) {
      DeviceInfo info;
      info.platform = p;
      info.id = d;
      info.name = device_string(d, CL_DEVICE_NAME);
      info.platform_name = platform_string(p, CL_PLATFORM_NAME);
      info.version = device_string(d, CL_DEVICE_VERSION);
      info.fp16 = device_string(d, CL_DEVICE_EXTENSIONS).find("cl_khr_fp16") != std::string::npos;
      clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof info.max_work_group, &info.max_work_group, nullptr);
      clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof info.global_mem, &info.global_mem, nullptr);
      if (info.max_work_group == 0) info.max_work_group = 1;
      cl_device_type type = 0;
      clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, nullptr);
      info.cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
      cl_uint units = 0;
      if (clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, nullptr) == CL_SUCCESS && units)
        info.compute_units = units;
      cl_uint width = 0;
      if (clGetDeviceInfo(d, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof width, &width, nullptr) == CL_SUCCESS && width)
        info.vector_width = width;
      // Deprecated by OpenCL 2.0 but still answered (PoCL 3 does): the one
      // query that says a device's memory is the host's.
      cl_bool unified = CL_FALSE;
      if (clGetDeviceInfo(d, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, nullptr) == CL_SUCCESS)
        info.host_unified_memory = unified == CL_TRUE;
      cl_uint align_bits = 0;
      if (clGetDeviceInfo(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, nullptr) == CL_SUCCESS &&
          align_bits >= 8 && (align_bits & (align_bits - 1)) == 0)
        info.base_alignment = align_bits / 8;
      out.push_back(info);
    }
  }
  if (out.empty()) why = std::to_string(nplat) + " OpenCL platform(s) but no device on any of them";
  return out;
}

ClDevice::ClDevice(DeviceInfo info, std::string name) : info_(std::move(info)), name_(std::move(name)) {
  cl_int err = CL_SUCCESS;
  const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(info_.platform), 0};
  context_ = clCreateContext(props, 1, &info_.id, nullptr, nullptr, &err);
  check(err, name_ + ": clCreateContext");
}

ClDevice::~ClDevice() { clReleaseContext(context_); }

std::shared_ptr<gpu::Buffer> ClDevice::allocate(size_t bytes, const void* init) {
  cl_int err = CL_SUCCESS;
  const cl_mem_flags flags = CL_MEM_READ_WRITE | (init ? CL_MEM_COPY_HOST_PTR : 0);
  cl_mem mem = clCreateBuffer(context_, flags, bytes, const_cast<void*>(init), &err);
  check(err, name_ + ": allocating " + std::to_string(bytes) + " bytes");
  return std::make_shared<ClBuffer>(mem, bytes);
}

std::shared_ptr<gpu::Buffer> ClDevice::wrap(void* host, size_t bytes, bool read_only) {
  if (!info_.host_unified_memory || !host || !bytes ||
      reinterpret_cast<uintptr_t>(host) % info_.base_alignment != 0)
    return nullptr;
  // CL_MEM_USE_HOST_PTR: the buffer is the host memory itself where the
  // device's memory is the host's (PoCL's kernels run on these very
  // addresses), made fresh for each inference so that its contents are
  // those the host wrote before it was made.
  cl_int err = CL_SUCCESS;
  const cl_mem_flags flags = CL_MEM_USE_HOST_PTR | (read_only ? CL_MEM_READ_ONLY : CL_MEM_READ_WRITE);
  cl_mem mem = clCreateBuffer(context_, flags, bytes, host, &err);
  check(err, name_ + ": lending " + std::to_string(bytes) + " bytes of host memory");
  return std::make_shared<ClBuffer>(mem, bytes);
}

std::shared_ptr<gpu::Executable> ClDevice::finish_build(cl_program program, const std::string& options,
                                                        const char* what) {
  const cl_int st = clBuildProgram(program, 1, &info_.id, options.c_str(), nullptr, nullptr);
  if (st != CL_SUCCESS) {
    size_t n = 0;
    clGetProgramBuildInfo(program, info_.id, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
    std::string log(n, '\0');
    if (n) clGetProgramBuildInfo(program, info_.id, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
    clReleaseProgram(program);
    if (log.size() > 4000) log = log.substr(0, 4000) + "...";
    fail(st == CL_INVALID_BINARY ? HETERO_BLOB_MISMATCH : HETERO_DRIVER_ERROR,
         name_ + ": " + what + " failed: " + cl_error_name(st) + "\n" + log);
  }
  return std::make_shared<ClExecutable>(program, info_.id);
}

std::shared_ptr<gpu::Executable> ClDevice::build(const std::string& source, const std::string& options) {
  cl_int err = CL_SUCCESS;
  const char* text = source.c_str();
  const size_t len = source.size();
  cl_program program = clCreateProgramWithSource(context_, 1, &text, &len, &err);
  check(err, name_ + ": clCreateProgramWithSource");
  ++source_builds_;
  return finish_build(program, options, "building kernels from source");
}

std::shared_ptr<gpu::Executable> ClDevice::load(std::span<const uint8_t> binary, const std::string& options) {
  cl_int err = CL_SUCCESS, bin_status = CL_SUCCESS;
  const unsigned char* ptr = binary.data();
  const size_t len = binary.size();
  cl_program program = clCreateProgramWithBinary(context_, 1, &info_.id, &len, &ptr, &bin_status, &err);
  if (err == CL_INVALID_BINARY || bin_status == CL_INVALID_BINARY)
    fail(HETERO_BLOB_MISMATCH, name_ + ": the blob's kernel binary was built for another device or driver");
  check(err, name_ + ": clCreateProgramWithBinary");
  return finish_build(program, options, "loading kernel binaries");
}

std::unique_ptr<gpu::Kernel> ClDevice::kernel(const gpu::Executable& executable, const std::string& name) {
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(static_cast<const ClExecutable&>(executable).program(), name.c_str(), &err);
  check(err, name_ + ": clCreateKernel(" + name + ")");
  return std::make_unique<ClKernel>(k, name);
}

std::unique_ptr<gpu::Queue> ClDevice::queue() { return std::make_unique<ClQueue>(*this, context_, info_.id); }

gpu::DeviceTraits ClDevice::traits() const {
  gpu::DeviceTraits t;
  t.cpu = info_.cpu;
  t.vector_width = info_.vector_width;
  t.compute_units = info_.compute_units;
  t.host_unified_memory = info_.host_unified_memory;
  t.host_alignment = info_.base_alignment;
#if HETERO_HAVE_CLBLAST
  t.library_gemm = clblast_library() != nullptr;
#endif
  return t;
}

void ClDevice::library_call(const gpu::LibraryGemm& call) {
  std::lock_guard lock(library_mutex_);
  if (std::find(library_shapes_.begin(), library_shapes_.end(), call) != library_shapes_.end()) return;
  library_shapes_.push_back(call);
  ++source_builds_;
}

}  // namespace hetero::opencl
