// The Level Zero driver module: devices of every driver the Level Zero loader
// finds (LEVEL_ZERO, LEVEL_ZERO.1, ...), programs built by the shared GPU
// parts (drivers/gpu, whose gpu_driver.h is the driver itself) over
// ze_device.h. It differs from the OpenCL driver only in its devices and in
// the metrics that come from the Level Zero device properties.
#include <cstdio>

#include "core/driver_module.h"
#include "drivers/gpu/gpu_driver.h"
#include "drivers/level_zero/ze_device.h"

namespace hetero::level_zero {

namespace {

constexpr const char* kMetricDeviceType = "DEVICE_TYPE";
constexpr const char* kMetricComputeUnits = "COMPUTE_UNITS";
constexpr const char* kMetricMaxGroupSize = "MAX_GROUP_SIZE";
constexpr const char* kMetricGlobalMemSize = "GLOBAL_MEM_SIZE";
constexpr const char* kMetricPciId = "PCI_ID";

class LevelZeroFamily final : public gpu::DeviceFamily {
 public:
  std::string name() const override { return "LEVEL_ZERO"; }
  void enumerate() override { infos_ = enumerate_devices(no_device_reason_); }
  size_t device_count() const override { return infos_.size(); }
  std::string no_device_reason() const override { return no_device_reason_; }
  std::string full_name(size_t i) const override {
    return infos_[i].name + " (Level Zero " + infos_[i].type + ", driver version " +
           std::to_string(infos_[i].driver_version) + ")";
  }
  bool fp16(size_t i) const override { return infos_[i].fp16; }
  std::vector<std::string> extra_metric_names() const override {
    return {kMetricDeviceType, kMetricComputeUnits, kMetricMaxGroupSize, kMetricGlobalMemSize, kMetricPciId};
  }
  std::optional<std::string> extra_metric(size_t i, const std::string& name) const override {
    const DeviceInfo& info = infos_[i];
    if (name == kMetricDeviceType) return info.type;
    if (name == kMetricComputeUnits) return std::to_string(info.compute_units);
    if (name == kMetricMaxGroupSize) return std::to_string(info.max_group_size);
    if (name == kMetricGlobalMemSize) return std::to_string(info.global_mem);
    if (name == kMetricPciId) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "%04x:%04x", info.vendor_id, info.device_id);
      return std::string(buf);
    }
    return std::nullopt;
  }
  std::shared_ptr<gpu::Device> open(size_t i, const std::string& device_name) override {
    return std::make_shared<ZeDevice>(infos_[i], device_name);
  }

 private:
  std::string no_device_reason_;
  std::vector<DeviceInfo> infos_;
};

}  // namespace

}  // namespace hetero::level_zero

HETERO_DRIVER_MODULE("Level Zero",
                     [] { return hetero::gpu::make_driver(std::make_unique<hetero::level_zero::LevelZeroFamily>()); })
