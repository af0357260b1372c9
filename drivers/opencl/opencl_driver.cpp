// The OpenCL driver module: devices of every OpenCL platform the ICD loader
// finds (OPENCL, OPENCL.1, ...), programs built by the shared GPU parts
// (drivers/gpu, whose gpu_driver.h is the driver itself) over cl_device.h.

#include "core/driver_module.h"
#include "drivers/gpu/gpu_driver.h"
#include "drivers/opencl/cl_device.h"

namespace hetero::opencl {

namespace {

class OpenClFamily final : public gpu::DeviceFamily {
 public:
  std::string name() const override { return "OPENCL"; }
  void enumerate() override { infos_ = enumerate_devices(no_device_reason_); }
  size_t device_count() const override { return infos_.size(); }
  std::string no_device_reason() const override { return no_device_reason_; }
  std::string full_name(size_t i) const override {
    return infos_[i].name + " (" + infos_[i].platform_name + ", " + infos_[i].version + ")";
  }
  bool fp16(size_t i) const override { return infos_[i].fp16; }
  std::shared_ptr<gpu::Device> open(size_t i, const std::string& device_name) override {
    return std::make_shared<ClDevice>(infos_[i], device_name);
  }
  // PoCL generates a kernel's machine code at its first launch.
  bool warm_up_before_export() const override { return true; }

 private:
  std::string no_device_reason_;
  std::vector<DeviceInfo> infos_;
};

}  // namespace

}  // namespace hetero::opencl

HETERO_DRIVER_MODULE("OpenCL",
                     [] { return hetero::gpu::make_driver(std::make_unique<hetero::opencl::OpenClFamily>()); })
