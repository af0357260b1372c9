// The CPUs the CPU driver sizes its teams to: a cgroup's CPU quota (systemd's
// CPUQuota=, a container's --cpus) caps them, the smallest quota on the way
// up the cgroup tree counting. Each test lays out a cgroup v2 tree of its own.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "drivers/cpu/cpu_budget.h"

namespace fs = std::filesystem;
using hetero::cpu::cgroup_cpu_quota;
using hetero::cpu::usable_cpus;

namespace {

class CgroupTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("hetero-cgroup-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root_ / "system.slice" / "heterod.service");
  }
  void TearDown() override { fs::remove_all(root_); }
  void cpu_max(const std::string& cgroup, const std::string& text) {
    std::ofstream(root_ / cgroup / "cpu.max") << text << "\n";
  }
  double quota(const std::string& proc_cgroup) { return cgroup_cpu_quota(root_.string(), proc_cgroup); }
  fs::path root_;
};

TEST_F(CgroupTree, NoQuotaAnywhereIsNone) {
  cpu_max("system.slice", "max 100000");
  cpu_max("system.slice/heterod.service", "max 100000");
  EXPECT_EQ(quota("0::/system.slice/heterod.service\n"), 0);
}

TEST_F(CgroupTree, TheServiceQuotaInCpus) {
  cpu_max("system.slice/heterod.service", "150000 100000");
  EXPECT_DOUBLE_EQ(quota("0::/system.slice/heterod.service\n"), 1.5);
}

TEST_F(CgroupTree, TheSmallestQuotaOnTheWayUpCounts) {
  cpu_max("system.slice", "50000 100000");
  cpu_max("system.slice/heterod.service", "300000 100000");
  EXPECT_DOUBLE_EQ(quota("0::/system.slice/heterod.service\n"), 0.5);
}

TEST_F(CgroupTree, CgroupV1LinesAndGarbageAreNoQuota) {
  cpu_max("system.slice/heterod.service", "150000 100000");
  EXPECT_EQ(quota("4:cpu,cpuacct:/system.slice/heterod.service\n"), 0);  // v1 only
  EXPECT_EQ(quota(""), 0);
  cpu_max("system.slice/heterod.service", "lots 100000");
  EXPECT_EQ(quota("0::/system.slice/heterod.service\n"), 0);
  cpu_max("system.slice/heterod.service", "100000 0");
  EXPECT_EQ(quota("0::/system.slice/heterod.service\n"), 0);
}

TEST(UsableCpus, AtLeastOneAndNoMoreThanTheAffinityMask) {
  cpu_set_t mask;
  ASSERT_EQ(sched_getaffinity(0, sizeof mask, &mask), 0);
  EXPECT_GE(usable_cpus(), 1);
  EXPECT_LE(usable_cpus(), CPU_COUNT(&mask));
}

}  // namespace
