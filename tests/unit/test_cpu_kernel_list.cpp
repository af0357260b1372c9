// The CPU driver's kernel list (kernel_list.cpp): one kernel per op, domain
// and opset, with overlapping registrations refused instead of silently
// shadowed.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "drivers/cpu/kernel.h"
#include "drivers/cpu/kernel_factories.h"

namespace hetero::cpu {
namespace {

std::unique_ptr<Kernel> no_kernel(const KernelBuild&) { return nullptr; }

TEST(CpuKernelList, OverlappingOpsetRangesAreRefusedNamingBoth) {
  KernelRegistry r;
  r.add("Scan", no_kernel, "", 8, 8);
  r.add("Scan", no_kernel, "", 9);  // adjacent ranges do not overlap
  r.add("Scan", no_kernel, kCpuDomain, 1, 1);  // nor do other domains
  try {
    r.add("Scan", no_kernel, "ai.onnx", 11, 12);
    FAIL() << "an overlapping registration was accepted";
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_DRIVER_ERROR);
    const std::string what = e.what();
    EXPECT_NE(what.find("Scan at opset 11 to 12"), std::string::npos) << what;
    EXPECT_NE(what.find("Scan at opset 9 and later"), std::string::npos) << what;
  }
}

TEST(CpuKernelList, LookupHonoursDomainAndOpsetBounds) {
  KernelRegistry r;
  r.add("Upsample", no_kernel, "", 7, 9);
  EXPECT_EQ(r.find("Upsample", "", 6), nullptr);
  EXPECT_NE(r.find("Upsample", "", 7), nullptr);
  EXPECT_NE(r.find("Upsample", "ai.onnx", 9), nullptr);
  EXPECT_EQ(r.find("Upsample", "", 10), nullptr);
  EXPECT_EQ(r.find("Upsample", kCpuDomain, 7), nullptr);
}

TEST(CpuKernelList, BuiltinListHasOneKernelPerOpAndItsFusedForms) {
  const KernelRegistry& r = KernelRegistry::builtin();  // would throw on an overlap
  EXPECT_NE(r.find("Identity", "", 16), nullptr);
  EXPECT_NE(r.find("Scan", "", 8), nullptr);
  EXPECT_NE(r.find("Scan", "", 16), nullptr);
  EXPECT_EQ(r.find("Scan", "", 7), nullptr);
  // The graph passes' forms exist only in their own domain.
  EXPECT_NE(r.find("FusedConv", kCpuDomain, 1), nullptr);
  EXPECT_EQ(r.find("FusedConv", "", 1), nullptr);
  EXPECT_NE(r.find("MaxPool", kCpuDomain, 1), nullptr);
  EXPECT_EQ(r.find("ToChannelsLast", "", 1), nullptr);
}

}  // namespace
}  // namespace hetero::cpu
