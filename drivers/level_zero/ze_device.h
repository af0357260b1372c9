// gpu::Device over Level Zero (through libze_loader): one context per device,
// device allocations, modules from SPIR-V (compiled at run time from the
// kernel selector's instantiated OpenCL C, see spirv_compiler.h) or from a
// native binary, kernels with group sizes from zeKernelSuggestGroupSize, and
// a queue of command lists whose commands signal events of an event pool.
#pragma once

#include <level_zero/ze_api.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "drivers/gpu/device_api.h"
#include "drivers/level_zero/spirv_compiler.h"
#include "drivers/level_zero/ze_codec.h"

namespace hetero::level_zero {

// Fails with DRIVER_ERROR "<what>: <ze_result name> (0x..)" unless ok.
void check(ze_result_t result, const std::string& what);
const char* ze_result_name(ze_result_t result);

// What the driver knows of one Level Zero device.
struct DeviceInfo {
  ze_driver_handle_t driver = nullptr;
  ze_device_handle_t device = nullptr;
  std::string name;           // ze_device_properties_t::name
  std::string type;           // GPU, CPU, FPGA, MCA, VPU
  uint32_t vendor_id = 0, device_id = 0;
  uint32_t driver_version = 0;
  uint32_t compute_units = 0;  // slices × subslices × EUs per subslice
  uint32_t max_group_size = 1;
  uint64_t global_mem = 0;
  bool fp16 = false;
  DeviceUuid uuid{};
};

// zeInit and every device of every driver, in driver order; empty with `why`
// set when there is none (no driver installed: zeInit or zeDriverGet fails or
// finds none).
std::vector<DeviceInfo> enumerate_devices(std::string& why);

class ZeDevice final : public gpu::Device {
 public:
  ZeDevice(DeviceInfo info, std::string name);
  ~ZeDevice() override;
  std::string name() const override { return name_; }
  size_t max_work_group_size() const override { return info_.max_group_size; }
  std::shared_ptr<gpu::Buffer> allocate(size_t bytes, const void* init) override;
  std::shared_ptr<gpu::Executable> build(const std::string& source, const std::string& options) override;
  std::shared_ptr<gpu::Executable> load(std::span<const uint8_t> binary, const std::string& options) override;
  std::unique_ptr<gpu::Kernel> kernel(const gpu::Executable& executable, const std::string& name) override;
  std::unique_ptr<gpu::Queue> queue() override;
  uint64_t source_builds() const override { return source_builds_.load(); }

  ze_context_handle_t context() const { return context_; }
  ze_device_handle_t handle() const { return info_.device; }
  const DeviceInfo& info() const { return info_; }
  // Records a command list with `record`, runs it and waits (uploads).
  void run_now(const std::function<void(ze_command_list_handle_t)>& record);

 private:
  std::shared_ptr<gpu::Executable> create_module(ze_module_format_t format, const uint8_t* data, size_t size,
                                                 const char* what);
  DeviceInfo info_;
  std::string name_;
  SpirvToolchain tools_;
  ze_context_handle_t context_ = nullptr;
  std::mutex upload_mutex_;
  ze_command_queue_handle_t upload_queue_ = nullptr;
  std::atomic<uint64_t> source_builds_{0};
};

}  // namespace hetero::level_zero
