// Devices and metrics: every device is listed once with its full name, answers
// OpenVINO's common metrics (AVAILABLE_DEVICES, FULL_DEVICE_NAME,
// SUPPORTED_PROPERTIES, OPTIMIZATION_CAPABILITIES,
// RANGE_FOR_ASYNC_INFER_REQUESTS) and lists what it answers; an unknown metric
// or device is NOT_FOUND; a driver without devices says why everywhere.
#include <algorithm>
#include <sstream>

#include "tests/driver_contract/contract.h"
#include "tests/driver_contract/contract_models.h"

namespace hetero::contract {
namespace {

const std::vector<std::string> kCommonMetrics = {"AVAILABLE_DEVICES", "FULL_DEVICE_NAME", "SUPPORTED_PROPERTIES",
                                                 "OPTIMIZATION_CAPABILITIES", "RANGE_FOR_ASYNC_INFER_REQUESTS"};

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// name → FULL_DEVICE_NAME of every device the core lists, in its order.
std::vector<std::pair<std::string, std::string>> listed_devices(const hetero_core_t* core) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t count = 0;
  EXPECT_OK(hetero_core_get_device_count(core, &count));
  for (size_t i = 0; i < count; ++i) {
    const char *name = nullptr, *full = nullptr;
    EXPECT_OK(hetero_core_get_device_name(core, &name, i));
    EXPECT_OK(hetero_core_get_device_full_name(core, &full, i));
    out.emplace_back(name ? name : "", full ? full : "");
  }
  return out;
}

class DeviceMetrics : public DeviceTest {
 protected:
  std::string metric(const std::string& device, const std::string& name) const {
    char* value = nullptr;
    EXPECT_OK(hetero_core_get_metric(core(), &value, device.c_str(), name.c_str()));
    return take_string(value);
  }
};

TEST_P(DeviceMetrics, EveryDeviceIsListedOnceWithItsFullName) {
  const auto devices = listed_devices(core());
  for (const std::string& member : device_case().members()) {
    const auto count = std::count_if(devices.begin(), devices.end(), [&](const auto& d) { return d.first == member; });
    ASSERT_EQ(count, 1) << member;
    const auto& full =
        std::find_if(devices.begin(), devices.end(), [&](const auto& d) { return d.first == member; })->second;
    EXPECT_FALSE(full.empty()) << member;
    EXPECT_EQ(metric(member, "FULL_DEVICE_NAME"), full) << member;
  }
}

TEST_P(DeviceMetrics, CommonMetricsAreAnswered) {
  const std::string& device = device_case().device;
  // AVAILABLE_DEVICES: the driver's device ids, this one's among them.
  const std::vector<std::string> ids = words(metric(device, "AVAILABLE_DEVICES"));
  const std::string driver = device_case().hetero() ? "HETERO" : device_case().driver();
  const std::string own_id = device == driver ? "0" : device.substr(driver.size() + 1);
  EXPECT_NE(std::find(ids.begin(), ids.end(), own_id), ids.end()) << "own id " << own_id;
  // Each a device the core lists ("CPU" for id 0, "CPU.1" for id 1); a
  // HETERO device is any list of them, made up by its caller, so the core
  // lists its members (EveryDeviceIsListedOnceWithItsFullName), not it.
  if (!device_case().hetero()) {
    std::vector<std::string> listed_of_driver;
    for (const auto& [name, full] : listed_devices(core()))
      if (name == driver || name.rfind(driver + ".", 0) == 0) listed_of_driver.push_back(name);
    std::vector<std::string> named;
    for (const std::string& id : ids) named.push_back(id == "0" ? driver : driver + "." + id);
    EXPECT_EQ(named, listed_of_driver);
  }

  EXPECT_FALSE(metric(device, "FULL_DEVICE_NAME").empty());
  const std::vector<std::string> caps = words(metric(device, "OPTIMIZATION_CAPABILITIES"));
  EXPECT_NE(std::find(caps.begin(), caps.end(), "FP32"), caps.end()) << "every device runs float32";

  // "min max step": how many requests keep the device busy.
  std::istringstream range(metric(device, "RANGE_FOR_ASYNC_INFER_REQUESTS"));
  unsigned min = 0, max = 0, step = 0;
  std::string rest;
  ASSERT_TRUE(range >> min >> max >> step) << range.str();
  EXPECT_FALSE(range >> rest) << "more than three numbers: " << range.str();
  EXPECT_GE(min, 1u);
  EXPECT_GE(max, min);
  EXPECT_GE(step, 1u);
}

// Everything the device answers is listed, and everything listed is answered:
// a metric through hetero_core_get_metric, a config key (test_config.cpp
// reads each through the driver's get_config).
TEST_P(DeviceMetrics, SupportedPropertiesListsEveryMetricAndConfigKey) {
  const std::string& device = device_case().device;
  const std::vector<std::string> listed = words(metric(device, "SUPPORTED_PROPERTIES"));
  auto is_listed = [&](const std::string& name) {
    return std::find(listed.begin(), listed.end(), name) != listed.end();
  };
  // Config keys as a compile of this device takes them (driver_key).
  std::vector<std::string> keys;
  for (const std::string& key : device_case().config_keys) keys.push_back(device_case().driver_key(key, "").begin()->first);
  for (const std::string& name : kCommonMetrics) EXPECT_TRUE(is_listed(name)) << name;
  for (const std::string& key : keys) EXPECT_TRUE(is_listed(key)) << key;
  for (const std::string& name : listed) {
    if (std::find(keys.begin(), keys.end(), name) != keys.end()) continue;
    char* value = nullptr;
    EXPECT_OK(hetero_core_get_metric(core(), &value, device.c_str(), name.c_str())) << "listed metric " << name;
    take_string(value);
  }
}

TEST_P(DeviceMetrics, UnknownMetricIsNotFoundAndNamed) {
  char* value = nullptr;
  EXPECT_REFUSED(hetero_core_get_metric(core(), &value, device_case().device.c_str(), "NO_SUCH_METRIC"),
                 HETERO_NOT_FOUND, "NO_SUCH_METRIC");
  EXPECT_EQ(value, nullptr) << "an out-param written on error";
}

// A device id the driver does not have: every call naming it is NOT_FOUND
// and names it. A HETERO list plans around the devices of it that are
// absent: its query answers every node unsupported, naming the absent device,
// and with none present its compile is NOT_SUPPORTED (no device runs the
// nodes), naming it too.
TEST_P(DeviceMetrics, MissingDeviceOfTheDriverIsNotFoundEverywhere) {
  const std::string missing = device_case().driver() + ".9";
  const bool hetero = device_case().hetero();
  const std::string device = hetero ? "HETERO:" + missing : missing;
  ModelPtr model = read_model(two_outputs_model().text);
  hetero_compiled_model_t* compiled = nullptr;
  EXPECT_REFUSED(hetero_compile(&compiled, core(), model.get(), device.c_str(), nullptr, nullptr, 0),
                 hetero ? HETERO_NOT_SUPPORTED : HETERO_NOT_FOUND, missing);
  EXPECT_EQ(compiled, nullptr);
  hetero_query_result_t* query = nullptr;
  if (hetero) {
    ASSERT_OK(hetero_query(&query, core(), model.get(), device.c_str(), nullptr, nullptr, 0));
    QueryPtr owned(query);
    size_t count = 0;
    ASSERT_OK(hetero_query_result_get_node_count(query, &count));
    for (size_t i = 0; i < count; ++i) {
      int supported = -1;
      const char* reason = nullptr;
      ASSERT_OK(hetero_query_result_get_node(query, nullptr, nullptr, &supported, &reason, i));
      EXPECT_EQ(supported, 0);
      EXPECT_NE(std::string(reason).find(missing), std::string::npos) << reason;
    }
    return;
  }
  EXPECT_REFUSED(hetero_query(&query, core(), model.get(), device.c_str(), nullptr, nullptr, 0), HETERO_NOT_FOUND,
                 missing);
  EXPECT_EQ(query, nullptr);
  char* value = nullptr;
  EXPECT_REFUSED(hetero_core_get_metric(core(), &value, device.c_str(), "FULL_DEVICE_NAME"), HETERO_NOT_FOUND, missing);
  EXPECT_EQ(value, nullptr);
}

HETERO_CONTRACT_INSTANTIATE(DeviceMetrics);

// A driver whose runtime finds no device (LEVEL_ZERO on a machine without a
// Level Zero GPU driver): the module loads, lists no device, and every call
// for one of its devices is NOT_FOUND with the driver's reason.
class DriverWithoutDevices : public DriverTest {};

TEST_P(DriverWithoutDevices, SayWhyEverywhere) {
  const std::string driver = device_case().driver();
  const char* why = nullptr;
  ASSERT_OK(hetero_core_get_driver_no_device_reason(core(), &why, static_cast<size_t>(driver_index())));
  for (const auto& [name, full] : listed_devices(core()))
    if (name == driver || name.rfind(driver + ".", 0) == 0)
      GTEST_SKIP() << "the " << driver << " driver lists devices here (" << name << ")";
  ASSERT_NE(why, nullptr);
  const std::string reason = why;
  EXPECT_FALSE(reason.empty()) << "a driver without devices must say why";
  size_t failures = 0;
  EXPECT_OK(hetero_core_get_driver_failure_count(core(), &failures));
  for (size_t i = 0; i < failures; ++i) {
    const char *path = nullptr, *failure = nullptr;
    EXPECT_OK(hetero_core_get_driver_failure(core(), &path, &failure, i));
    EXPECT_EQ(std::string(path).find(module_name(driver)), std::string::npos)
        << "a loaded module listed as failed: " << failure;
  }
  ModelPtr model = read_model(two_outputs_model().text);
  for (const std::string& device : {driver, driver + ".1"}) {
    char* value = nullptr;
    hetero_query_result_t* query = nullptr;
    hetero_compiled_model_t* compiled = nullptr;
    const std::string no_device = "the " + driver + " driver has no device";
    EXPECT_REFUSED(hetero_core_get_metric(core(), &value, device.c_str(), "FULL_DEVICE_NAME"), HETERO_NOT_FOUND,
                   reason);
    EXPECT_REFUSED(hetero_query(&query, core(), model.get(), device.c_str(), nullptr, nullptr, 0), HETERO_NOT_FOUND,
                   no_device, reason);
    EXPECT_REFUSED(hetero_compile(&compiled, core(), model.get(), device.c_str(), nullptr, nullptr, 0),
                   HETERO_NOT_FOUND, no_device, reason);
  }
}

HETERO_CONTRACT_INSTANTIATE(DriverWithoutDevices);

}  // namespace
}  // namespace hetero::contract
