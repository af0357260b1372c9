// A driver's config keys as its user meets them, all from one table
// (core/config_table.h): the real CPU driver's get/set_config, per-compile
// config, SUPPORTED_PROPERTIES and the messages of an unknown key or a bad
// value. (The GPU drivers' tables are checked in the OpenCL and Level Zero
// tests.)
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/runtime.h"
#include "tests/unit/model_text.h"

using namespace hetero;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_INVALID_ARGUMENT) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

}  // namespace

TEST(DriverConfig, KeysComeWithDefaultsAndAreListed) {
  core::Runtime rt;
  driver::Driver* cpu = rt.registry().find("CPU");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->get_config("num_threads"), "0");
  EXPECT_EQ(cpu->get_config("optimize"), "true");
  EXPECT_EQ(cpu->get_config("ops"), "");
  EXPECT_EQ(cpu->get_config("device_count"), "1");
  const std::string properties = rt.metric("CPU", driver::kMetricSupportedProperties);
  EXPECT_NE(properties.find("FULL_DEVICE_NAME"), std::string::npos) << properties;
  EXPECT_NE(properties.find(" num_threads optimize ops device_count"), std::string::npos) << properties;

  cpu->set_config({{"ops", " Relu, MatMul ,"}, {"num_threads", "2"}});
  EXPECT_EQ(cpu->get_config("ops"), "Relu,MatMul");
  EXPECT_EQ(cpu->get_config("num_threads"), "2");
}

TEST(DriverConfig, UnknownKeysAndBadValuesAreNamed) {
  core::Runtime rt;
  driver::Driver* cpu = rt.registry().find("CPU");
  ASSERT_NE(cpu, nullptr);
  const std::string unknown = error_of([&] { cpu->set_config({{"num_thread", "2"}}); });
  EXPECT_NE(unknown.find("the CPU driver has no config key 'num_thread'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("num_threads: an integer 0..1024, default 0"), std::string::npos) << unknown;
  EXPECT_EQ(error_of([&] { cpu->get_config("nope"); }).find("the CPU driver has no config key 'nope'"), 0u);

  EXPECT_EQ(error_of([&] { cpu->set_config({{"optimize", "yes"}}); }),
            "CPU config optimize must be true or false, got 'yes' (optimize: graph passes: BatchNorm folding, "
            "post-op fusion)");
  for (const char* bad : {"-1", "1025", "2x", ""})
    EXPECT_NE(error_of([&] { cpu->set_config({{"num_threads", bad}}); })
                  .find(std::string("must be an integer 0..1024, got '") + bad + "'"),
              std::string::npos);

  // All or nothing: a bad value leaves the good keys beside it unset.
  EXPECT_THROW(cpu->set_config({{"num_threads", "3"}, {"optimize", "maybe"}}), Failure);
  EXPECT_EQ(cpu->get_config("num_threads"), "0");
}

TEST(DriverConfig, DriverSettingsAreRefusedPerCompile) {
  core::RuntimeOptions options;
  options.config["CPU.device_count"] = "2";
  core::Runtime rt(options);
  EXPECT_GE(rt.devices().size(), 2u);
  auto model = test::model_from_text(R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
net (float[2] x) => (float[2] y) {
  y = Relu (x)
}
)ONNX");
  EXPECT_EQ(error_of([&] { rt.compile(*model, "CPU", {{"device_count", "3"}}); }),
            "CPU config device_count is a driver setting (CPU.device_count when the core is created), not a compile "
            "setting");
  EXPECT_NE(error_of([&] { rt.compile(*model, "CPU.1", {{"optimize", "2"}}); }).find("optimize must be true or false"),
            std::string::npos);
  EXPECT_NO_THROW(rt.compile(*model, "CPU.1", {{"optimize", "false"}, {"num_threads", "1"}}));
}
