// gpu::Device over OpenCL (through the ICD loader): contexts, buffers,
// programs from source or binary, kernels, an in-order queue with events.
#pragma once

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "drivers/gpu/device_api.h"

namespace hetero::opencl {

// Fails with DRIVER_ERROR "<what>: <CL error name> (<code>)" unless ok.
void check(cl_int status, const std::string& what);
const char* cl_error_name(cl_int status);

// What the driver knows of one OpenCL device.
struct DeviceInfo {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  std::string name;          // CL_DEVICE_NAME
  std::string platform_name; // CL_PLATFORM_NAME
  std::string version;       // CL_DEVICE_VERSION
  bool fp16 = false;         // cl_khr_fp16
  size_t max_work_group = 1;
  uint64_t global_mem = 0;
  bool cpu = false;             // CL_DEVICE_TYPE_CPU (PoCL)
  uint32_t compute_units = 1;   // CL_DEVICE_MAX_COMPUTE_UNITS (PoCL: its threads)
  uint32_t vector_width = 4;    // CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT
  bool host_unified_memory = false;  // CL_DEVICE_HOST_UNIFIED_MEMORY (PoCL)
  size_t base_alignment = 128;       // CL_DEVICE_MEM_BASE_ADDR_ALIGN, in bytes
};

// Every device of every platform, in platform order; empty with `why` set
// when there is none.
std::vector<DeviceInfo> enumerate_devices(std::string& why);

class ClDevice final : public gpu::Device {
 public:
  ClDevice(DeviceInfo info, std::string name);
  ~ClDevice() override;
  std::string name() const override { return name_; }
  size_t max_work_group_size() const override { return info_.max_work_group; }
  gpu::DeviceTraits traits() const override;
  std::shared_ptr<gpu::Buffer> allocate(size_t bytes, const void* init) override;
  std::shared_ptr<gpu::Buffer> wrap(void* host, size_t bytes, bool read_only) override;
  std::shared_ptr<gpu::Executable> build(const std::string& source, const std::string& options) override;
  std::shared_ptr<gpu::Executable> load(std::span<const uint8_t> binary, const std::string& options) override;
  std::unique_ptr<gpu::Kernel> kernel(const gpu::Executable& executable, const std::string& name) override;
  std::unique_ptr<gpu::Queue> queue() override;
  uint64_t source_builds() const override { return source_builds_.load(); }
  // A GEMM library call of this shape is about to run: the library builds its
  // kernels from source at its first call of a shape in the process (counted
  // as a source build, once per shape).
  void library_call(const gpu::LibraryGemm& call);

 private:
  std::shared_ptr<gpu::Executable> finish_build(cl_program program, const std::string& options, const char* what);
  DeviceInfo info_;
  std::string name_;
  cl_context context_ = nullptr;
  std::atomic<uint64_t> source_builds_{0};
  std::mutex library_mutex_;
  std::vector<gpu::LibraryGemm> library_shapes_;  // the shapes called so far
};

}  // namespace hetero::opencl
