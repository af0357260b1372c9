#include "partition/hetero_driver.h"

#include <algorithm>
#include <sstream>

#include "core/device_string.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/sha256.h"
#include "hetero_build_config.h"
#include "partition/hetero_blob.h"
#include "partition/hetero_compiled_model.h"
#include "partition/plan.h"

namespace hetero::partition {

namespace {

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

class HeteroDriver final : public driver::Driver {
 public:
  explicit HeteroDriver(const core::Runtime& runtime) : runtime_(runtime) {}

  std::string name() const override { return core::kHeteroDriverName; }
  std::string version() const override { return HETERO_VERSION; }
  // Its devices are lists of the other drivers' devices: there is none to
  // list, and any list of present devices is one.
  std::vector<std::string> devices() const override { return {}; }
  std::string no_device_reason() const override {
    return "a HETERO device is a list of other devices, as in HETERO:OPENCL,CPU";
  }

  // The list answers what its present members have in common: the
  // capabilities all of them have, and as many requests as they keep busy
  // together (a request's parts run as pipeline stages on their devices).
  std::string metric(const std::string& device_id, const std::string& metric_name) const override {
    const core::DeviceString device = list(device_id);
    if (metric_name == driver::kMetricSupportedProperties) return supported_properties(device);
    if (metric_name == driver::kMetricAvailableDevices) return device_id;
    if (metric_name == driver::kMetricFullDeviceName) return "HETERO of " + device_id;
    if (metric_name == driver::kMetricOptimizationCapabilities) {
      const std::vector<std::string> values = member_metrics(device, metric_name);
      std::string out;
      for (const std::string& c : values.empty() ? std::vector<std::string>{} : words(values.front())) {
        const bool everyone = std::all_of(values.begin(), values.end(), [&](const std::string& v) {
          const std::vector<std::string> theirs = words(v);
          return std::find(theirs.begin(), theirs.end(), c) != theirs.end();
        });
        if (everyone) out += (out.empty() ? "" : " ") + c;
      }
      return out;
    }
    if (metric_name == driver::kMetricOptimalNumberOfInferRequests ||
        metric_name == driver::kMetricRangeForAsyncInferRequests) {
      // RANGE is "min max step": the sum of the members' max; OPTIMAL the sum.
      const bool range = metric_name == driver::kMetricRangeForAsyncInferRequests;
      unsigned long total = 0;
      for (const std::string& value : member_metrics(device, metric_name)) {
        const std::vector<std::string> numbers = words(value);
        if (numbers.empty()) continue;
        total += std::stoul(range && numbers.size() >= 2 ? numbers[1] : numbers[0]);
      }
      total = std::max(total, 1ul);
      return range ? "1 " + std::to_string(total) + " 1" : std::to_string(total);
    }
    fail(HETERO_NOT_FOUND, "HETERO has no metric " + metric_name);
  }

  // HETERO's settings are per compile (policy, DEVICE:key), not per driver.
  std::string get_config(const std::string& key) const override {
    fail(HETERO_INVALID_ARGUMENT, "HETERO has no config key " + key +
                                      "; a HETERO compile takes 'policy' and DEVICE:key (as in CPU.1:ops)");
  }
  void set_config(const driver::Config& config) override {
    if (!config.empty()) (void)get_config(config.begin()->first);
  }

  std::vector<driver::NodeSupport> query(const core::Model& model, const std::string& device_id,
                                         const driver::Config& config) const override {
    return query_hetero(runtime_, model, list(device_id), config);
  }
  std::unique_ptr<driver::CompiledModel> compile(const core::Model& model, const std::string& device_id,
                                                 const driver::Config& config) override {
    return compile_hetero(runtime_, model, list(device_id), config);
  }
  // A HETERO blob is its plan and a section per part: import_sections().
  std::unique_ptr<driver::CompiledModel> import_blob(std::span<const uint8_t>, const std::string& device_id,
                                                     const driver::Config&) override {
    fail(HETERO_NOT_SUPPORTED, "HETERO:" + device_id + ": a HETERO blob is imported whole, with its parts");
  }
  std::unique_ptr<driver::CompiledModel> import_sections(const core::BlobView& blob, const std::string& device_id,
                                                         const driver::Config& config) override {
    const core::DeviceString device = list(device_id);
    return std::make_unique<HeteroCompiledModel>(device.to_string(),
                                                 import_hetero_sections(runtime_, blob, device, config));
  }

  // A plan depends on the policy file's text, not only on its path.
  std::string config_contents(const driver::Config& config) const override {
    const auto policy = config.find("policy");
    if (policy == config.end()) return {};
    const core::MappedBytes text = core::map_file(policy->second);
    return "policy " + core::to_hex(core::sha256({text.data, text.size}));
  }

 private:
  static core::DeviceString list(const std::string& device_id) {
    return core::parse_device_string(std::string(core::kHeteroDriverName) + ":" + device_id);
  }

  // Its metrics, then the config keys its compile passes on to its members'
  // drivers, as a HETERO compile takes them ("CPU:num_threads").
  std::string supported_properties(const core::DeviceString& device) const {
    std::string out = std::string(driver::kMetricAvailableDevices) + " " + driver::kMetricFullDeviceName + " " +
                      driver::kMetricSupportedProperties + " " + driver::kMetricOptimizationCapabilities + " " +
                      driver::kMetricRangeForAsyncInferRequests + " " + driver::kMetricOptimalNumberOfInferRequests;
    std::vector<const driver::Driver*> seen;
    for (const auto& [d, id] : present_members(device)) {
      if (std::find(seen.begin(), seen.end(), d) != seen.end()) continue;
      seen.push_back(d);
      for (const std::string& name : words(d->metric(id, driver::kMetricSupportedProperties))) {
        try {
          (void)d->get_config(name);  // a config key, not a metric
        } catch (const Failure&) {
          continue;
        }
        out.append(" ").append(d->name()).append(":").append(name);
      }
    }
    return out;
  }

  // The members that are here, resolved; members that are not are planned
  // around, so they do not speak for the list.
  std::vector<std::pair<driver::Driver*, std::string>> present_members(const core::DeviceString& device) const {
    std::vector<std::pair<driver::Driver*, std::string>> present;
    for (const core::DeviceName& member : device.devices) {
      try {
        present.push_back(runtime_.resolve(member));
      } catch (const Failure&) {
        continue;  // not here
      }
    }
    return present;
  }

  std::vector<std::string> member_metrics(const core::DeviceString& device, const std::string& metric_name) const {
    std::vector<std::string> values;
    for (const auto& [d, id] : present_members(device)) values.push_back(d->metric(id, metric_name));
    return values;
  }

  const core::Runtime& runtime_;
};

}  // namespace

std::unique_ptr<driver::Driver> make_hetero_driver(const core::Runtime& runtime) {
  return std::make_unique<HeteroDriver>(runtime);
}

}  // namespace hetero::partition
