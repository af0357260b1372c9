// Loading driver modules: the real CPU driver and modules that fail in each
// way, each failure reported for that module alone.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <optional>
#include <thread>

#include "core/driver_abi_stamp.h"
#include "core/driver_registry.h"
#include "core/error.h"
#include "core/runtime.h"
#include "hetero_build_config.h"

using namespace hetero;
using namespace hetero::core;

namespace {

std::optional<DriverFailure> failure_for(const DriverRegistry& r, const std::string& fragment) {
  for (const auto& f : r.failures())
    if (f.path.find(fragment) != std::string::npos) return f;
  return std::nullopt;
}

}  // namespace

TEST(DriverRegistry, BuildTreeFindsCpuDriver) {
  DriverRegistry r(driver_search_path(""));
  driver::Driver* cpu = r.find("CPU");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->devices(), std::vector<std::string>{"0"});
  EXPECT_FALSE(cpu->metric("0", driver::kMetricFullDeviceName).empty());
  EXPECT_NE(cpu->metric("0", driver::kMetricSupportedProperties).find("RANGE_FOR_ASYNC_INFER_REQUESTS"),
            std::string::npos);
  EXPECT_THROW(cpu->metric("0", "NO_SUCH_METRIC"), Failure);
}

TEST(DriverRegistry, BadModulesAreReportedAloneWithReasons) {
  std::vector<std::string> path = {BAD_DRIVER_OLD_ABI, BAD_DRIVER_NO_SYMBOL, BAD_DRIVER_INIT_FAILS,
                                   BAD_DRIVER_INIT_THROWS};
  for (const auto& d : driver_search_path("")) path.push_back(d);
  DriverRegistry r(path);
  ASSERT_NE(r.find("CPU"), nullptr) << "the good driver must still load";

  auto f = failure_for(r, "old_abi");
  ASSERT_TRUE(f);
  EXPECT_NE(f->reason.find("from before driver ABI stamps"), std::string::npos) << f->reason;
  EXPECT_NE(f->reason.find("rebuild it"), std::string::npos) << f->reason;
  f = failure_for(r, "no_symbol");
  ASSERT_TRUE(f);
  EXPECT_NE(f->reason.find("not a heterod driver"), std::string::npos) << f->reason;
  EXPECT_NE(f->reason.find(HETERO_DRIVER_STAMP_SYMBOL), std::string::npos) << f->reason;
  f = failure_for(r, "init_fails");
  ASSERT_TRUE(f);
  EXPECT_NE(f->reason.find("no FAKE runtime"), std::string::npos) << f->reason;
  f = failure_for(r, "init_throws");
  ASSERT_TRUE(f);
  EXPECT_NE(f->reason.find("exploded during init"), std::string::npos) << f->reason;
}

// The same driver source built twice: with this core's headers, and against
// a core/tensor.h with a field added, as a module of another build would be.
// The second is refused by its stamp alone, naming both stamps.
TEST(DriverRegistry, ModuleBuiltAgainstChangedCoreTypesIsRefused) {
  DriverRegistry fresh({STAMP_DRIVER_FRESH});
  EXPECT_TRUE(fresh.failures().empty());
  ASSERT_NE(fresh.find("FIXTURE"), nullptr) << "built with this core's headers, the fixture loads";

  DriverRegistry stale({STAMP_DRIVER_STALE});
  EXPECT_EQ(stale.find("FIXTURE"), nullptr);
  auto f = failure_for(stale, "stamp_stale");
  ASSERT_TRUE(f);
  const std::string theirs = "its driver ABI stamp is ", ours = ", this core's is " HETERO_DRIVER_ABI_STAMP;
  const size_t at = f->reason.find(theirs);
  ASSERT_NE(at, std::string::npos) << f->reason;
  EXPECT_NE(f->reason.find(ours), std::string::npos) << f->reason;
  // Its stamp is of the same version, with another hash of the headers.
  const std::string stamp = f->reason.substr(at + theirs.size(), f->reason.find(',', at) - at - theirs.size());
  EXPECT_EQ(stamp.substr(0, stamp.find('+')), HETERO_VERSION) << f->reason;
  EXPECT_NE(stamp, HETERO_DRIVER_ABI_STAMP) << f->reason;
}

// Loading makes the driver, not its runtime: that is set up on first use,
// once, however many threads ask at the same time.
TEST(DriverRegistry, DriversAreInitialisedOnceOnFirstUse) {
  DriverRegistry r({STAMP_DRIVER_FRESH});
  ASSERT_NE(r.loaded("FIXTURE"), nullptr);
  EXPECT_EQ(r.loaded("FIXTURE")->metric("0", "INITIALIZE_CALLS"), "0");
  EXPECT_EQ(r.loaded("FIXTURE")->version(), "1");
  std::vector<std::thread> threads;
  std::atomic<int> found{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] { found += r.find("FIXTURE") != nullptr; });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(found.load(), 8);
  EXPECT_EQ(r.find("FIXTURE")->metric("0", "INITIALIZE_CALLS"), "1");
}

// A failed initialisation is reported as the module's failure, the way a
// failed load is, from the first use on.
TEST(DriverRegistry, AFailedInitialisationIsTheModulesFailure) {
  setenv("HETERO_FIXTURE_INIT_FAILS", "1", 1);
  RuntimeOptions o;
  o.driver_path = STAMP_DRIVER_FRESH;
  Runtime rt(o);
  EXPECT_FALSE(failure_for(rt.registry(), "stamp_fresh")) << "not initialised yet, so not failed yet";
  EXPECT_NE(rt.registry().loaded("FIXTURE"), nullptr);
  try {
    rt.metric("FIXTURE", driver::kMetricFullDeviceName);
    ADD_FAILURE() << "metric of a driver whose initialisation fails";
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_NOT_FOUND);
    EXPECT_NE(std::string(e.what()).find("FIXTURE driver initialisation failed: no FIXTURE runtime here"),
              std::string::npos)
        << e.what();
  }
  unsetenv("HETERO_FIXTURE_INIT_FAILS");
  auto f = failure_for(rt.registry(), "stamp_fresh");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->reason, "FIXTURE driver initialisation failed: no FIXTURE runtime here");
  EXPECT_EQ(rt.registry().find("FIXTURE"), nullptr) << "initialised once: a failure stays one";
  for (const DeviceInfo& d : rt.devices()) EXPECT_NE(d.driver, "FIXTURE");
}

TEST(DriverRegistry, MissingDirectoryIsNotAnError) {
  DriverRegistry r({"/nonexistent/heterod/drivers"});
  EXPECT_TRUE(r.drivers().empty());
  EXPECT_TRUE(r.failures().empty());
}

TEST(Runtime, ConfigIsChecked) {
  RuntimeOptions o;
  o.config["CPU.num_threads"] = "2";
  Runtime rt(o);
  EXPECT_EQ(rt.registry().find("CPU")->get_config("num_threads"), "2");
  o.config = {{"CPU.no_such_key", "1"}};
  EXPECT_THROW(Runtime{o}, Failure);
  o.config = {{"num_threads", "1"}};
  EXPECT_THROW(Runtime{o}, Failure);
  o.config = {{"CPU.num_threads", "many"}};
  EXPECT_THROW(Runtime{o}, Failure);
}

TEST(Runtime, UnknownDevicesNameTheDevice) {
  Runtime rt;
  try {
    rt.metric("NPU", driver::kMetricFullDeviceName);
    FAIL();
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_NOT_FOUND);
    EXPECT_NE(std::string(e.what()).find("NPU"), std::string::npos);
  }
  EXPECT_THROW(rt.metric("CPU.7", driver::kMetricFullDeviceName), Failure);
  // Other drivers of the build tree (OPENCL on PoCL) may list devices too.
  std::vector<DeviceInfo> cpus;
  for (const DeviceInfo& d : rt.devices())
    if (d.driver == "CPU") cpus.push_back(d);
  ASSERT_EQ(cpus.size(), 1u);
  EXPECT_EQ(cpus[0].name, "CPU");
}
