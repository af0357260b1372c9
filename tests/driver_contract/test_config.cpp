// Config: a driver refuses an unknown key or a bad value, naming the key,
// wherever config is given (creating a core, compiling, querying, importing);
// get_config answers every key it lists and refuses others; a refused change
// changes nothing.
//
// The C ABI sets config (hetero_core_create's "DRIVER.key", per compile) but
// reads none back, so the get_config checks use the driver object itself.
#include <memory>
#include <tuple>

#include "core/runtime.h"
#include "tests/driver_contract/contract.h"
#include "tests/driver_contract/contract_models.h"
#include "tests/unit/onnx_test_files.h"

namespace hetero::contract {
namespace {

using test::expect_error;

// ---- Without a device: the driver module's own config ------------------------

class DriverConfig : public DriverTest {
 protected:
  void SetUp() override {
    DriverTest::SetUp();
    if (IsSkipped() || HasFailure()) return;
    core::RuntimeOptions options;
    options.config = device_case().core_config;
    runtime_ = std::make_unique<core::Runtime>(options);  // its own: set_config changes the driver
    driver_ = runtime_->registry().find(device_case().driver());
    ASSERT_NE(driver_, nullptr);
  }

  std::unique_ptr<core::Runtime> runtime_;
  driver::Driver* driver_ = nullptr;
};

TEST_P(DriverConfig, CoreRefusesAnUnknownKeyNamingIt) {
  const std::string key = device_case().driver() + ".no_such_key";
  const char* keys[] = {key.c_str()};
  const char* values[] = {"1"};
  hetero_core_t* core = nullptr;
  EXPECT_REFUSED(hetero_core_create(&core, keys, values, 1), HETERO_INVALID_ARGUMENT, "no_such_key");
  EXPECT_EQ(core, nullptr);
}

TEST_P(DriverConfig, CoreRefusesABadValueNamingTheKey) {
  for (const auto& [key, value] : device_case().bad_values) {
    const std::string driver_key = device_case().driver() + "." + key;
    const char* keys[] = {driver_key.c_str()};
    const char* values[] = {value.c_str()};
    hetero_core_t* core = nullptr;
    EXPECT_REFUSED(hetero_core_create(&core, keys, values, 1), HETERO_INVALID_ARGUMENT, key, "'" + value + "'");
    EXPECT_EQ(core, nullptr);
  }
}

TEST_P(DriverConfig, GetConfigAnswersEveryKeyAndRefusesOthers) {
  for (const std::string& key : device_case().config_keys) EXPECT_NO_THROW(driver_->get_config(key)) << key;
  expect_error([&] { driver_->get_config("no_such_key"); }, HETERO_INVALID_ARGUMENT, {"'no_such_key'"});
}

// What get_config answers, a core accepts back as that key's value.
TEST_P(DriverConfig, EveryValueGetConfigAnswersIsAccepted) {
  for (const std::string& key : device_case().config_keys) {
    Config config = device_case().core_config;
    config[device_case().driver() + "." + key] = driver_->get_config(key);
    make_core(config);
  }
}

TEST_P(DriverConfig, ARefusedChangeChangesNothing) {
  ASSERT_EQ(driver_->get_config("optimize"), "true");
  // Keys apply in order: optimize is taken before unknown_key fails.
  expect_error(
      [&] {
        driver_->set_config({{"optimize", "false"}, {"unknown_key", "1"}});
      },
      HETERO_INVALID_ARGUMENT, {"unknown_key"});
  EXPECT_EQ(driver_->get_config("optimize"), "true");
  expect_error([&] { driver_->set_config({{"optimize", "maybe"}}); }, HETERO_INVALID_ARGUMENT, {"optimize"});
  EXPECT_EQ(driver_->get_config("optimize"), "true");
  driver_->set_config({{"optimize", "false"}});
  EXPECT_EQ(driver_->get_config("optimize"), "false");
}

HETERO_CONTRACT_INSTANTIATE(DriverConfig);

// ---- On a device: compile, query and import config -----------------------------

class DeviceConfig : public DeviceTest {};

TEST_P(DeviceConfig, CompileAndQueryRefuseUnknownKeysAndBadValues) {
  ModelPtr model = read_model(two_outputs_model().text);
  std::vector<std::pair<std::string, std::string>> bad = device_case().bad_values;
  bad.emplace_back("no_such_key", "1");
  for (const auto& [key, value] : bad) {
    const Config config = device_case().driver_key(key, value);
    hetero_compiled_model_t* compiled = nullptr;
    hetero_query_result_t* query = nullptr;
    EXPECT_REFUSED(try_compile(model.get(), config, &compiled), HETERO_INVALID_ARGUMENT, key);
    EXPECT_REFUSED(try_query(model.get(), config, &query), HETERO_INVALID_ARGUMENT, key);
    EXPECT_EQ(compiled, nullptr);
    EXPECT_EQ(query, nullptr);
  }
}

// An import's config adds to the blob's compile config: an unknown key is
// refused as at compile, a value the blob contradicts as a mismatch.
TEST_P(DeviceConfig, ImportRefusesAnUnknownKeyAndAContradiction) {
  ModelPtr model = read_model(two_outputs_model().text);
  CompiledPtr compiled = compile(model.get(), device_case().driver_key("optimize", "true"));
  ASSERT_TRUE(compiled);
  void* data = nullptr;
  size_t size = 0;
  ASSERT_OK(hetero_compiled_model_export(compiled.get(), &data, &size));
  const std::vector<uint8_t> blob = take_bytes(data, size);
  const std::tuple<Config, hetero_status, const char*> refused[] = {
      {device_case().driver_key("no_such_key", "1"), HETERO_INVALID_ARGUMENT, "no_such_key"},
      {device_case().driver_key("optimize", "false"), HETERO_BLOB_MISMATCH, "optimize"}};
  for (const auto& [config, status, named] : refused) {
    const ConfigArrays pairs(config);
    hetero_compiled_model_t* imported = nullptr;
    EXPECT_REFUSED(hetero_compiled_model_import(&imported, core(), blob.data(), blob.size(), pairs.keys(),
                                                pairs.values(), pairs.size()),
                   status, named);
    EXPECT_EQ(imported, nullptr);
  }
  // Agreeing with the blob is no contradiction.
  const ConfigArrays same(device_case().driver_key("optimize", "true"));
  hetero_compiled_model_t* imported = nullptr;
  EXPECT_OK(hetero_compiled_model_import(&imported, core(), blob.data(), blob.size(), same.keys(), same.values(),
                                         same.size()));
  hetero_compiled_model_release(imported);
}

TEST_P(DeviceConfig, AValidCompileConfigIsHonoured) {
  const TestModel& m = small_cnn_model();
  ModelPtr model = read_model(m.text);
  CompiledPtr compiled = compile(model.get(), device_case().driver_key("optimize", "false"));
  ASSERT_TRUE(compiled);
  expect_same(infer(compiled.get(), m.inputs), reference(m.text, m.inputs), device_case().exact, "optimize=false");
}

HETERO_CONTRACT_INSTANTIATE(DeviceConfig);

}  // namespace
}  // namespace hetero::contract
