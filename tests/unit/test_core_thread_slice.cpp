// A short time slice for threads that serve a waiting caller
// (core/thread_slice.h): asked for, read back, and passed on to the threads
// started afterwards or not, as asked.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/thread_slice.h"

namespace hetero::core {
namespace {

using std::chrono::nanoseconds;

// On a fresh thread: asks for the short slice (`inherited` as given), then
// reads its own slice and that of a thread it starts.
struct Slices {
  bool taken = false;
  nanoseconds own{0}, default_slice{0}, child{0};
};

Slices ask_on_a_fresh_thread(SliceInherited inherited) {
  Slices s;
  std::thread([&] {
    s.default_slice = time_slice();
    s.taken = request_time_slice(kShortSlice, inherited);
    s.own = time_slice();
    std::thread([&] { s.child = time_slice(); }).join();
  }).join();
  return s;
}

TEST(CoreThreadSlice, AThreadTakesTheShortSliceAndPassesItOnWhenAsked) {
  const Slices passed = ask_on_a_fresh_thread(SliceInherited::kYes);
  if (!passed.taken || passed.own == nanoseconds(0)) GTEST_SKIP() << "this kernel takes no time slice (before 6.12)";
  EXPECT_EQ(passed.own, kShortSlice);
  EXPECT_GT(passed.default_slice, kShortSlice) << "the short slice is shorter than the default";
  EXPECT_EQ(passed.child, kShortSlice) << "a thread started afterwards took it";

  const Slices kept = ask_on_a_fresh_thread(SliceInherited::kNo);
  EXPECT_EQ(kept.own, kShortSlice);
  EXPECT_EQ(kept.child, kept.default_slice) << "a thread started afterwards has the default slice";
}

TEST(CoreThreadSlice, OtherThreadsKeepTheirs) {
  const nanoseconds before = time_slice();
  ask_on_a_fresh_thread(SliceInherited::kYes);
  EXPECT_EQ(time_slice(), before) << "the slice is the asking thread's alone";
}

}  // namespace
}  // namespace hetero::core
