// The team width a compiled model's inferences run with, chosen by timing
// them (drivers/cpu/width_choice.h): each case plays the inferences of a
// model whose time at each width it knows, and looks at what is kept.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <set>

#include "drivers/cpu/width_choice.h"

namespace hetero::cpu::testing {
namespace {

using std::chrono::microseconds;

// Runs inferences taking time_at(width) until a width is chosen (at most
// `limit` of them); the widths they ran at.
std::multiset<int> run_trial(WidthChoice& choice, const std::function<microseconds(int)>& time_at, int limit = 100) {
  std::multiset<int> ran;
  for (int i = 0; i < limit && choice.chosen() == 0; ++i) {
    const int width = choice.next();
    ran.insert(width);
    choice.record(width, width, time_at(width));
  }
  return ran;
}

TEST(CpuWidthChoice, KeepsOneThreadWhereItIsFaster) {
  WidthChoice choice(2, true);
  EXPECT_EQ(choice.chosen(), 0) << "a trial runs first";
  const auto ran = run_trial(choice, [](int w) { return microseconds(w == 1 ? 570 : 940); });
  EXPECT_EQ(choice.chosen(), 1);
  // kSamples counted at each width and one warm-up each.
  EXPECT_EQ(ran.count(1), WidthChoice::kSamples + 1);
  EXPECT_EQ(ran.count(2), WidthChoice::kSamples + 1);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(choice.next(), 1);
}

TEST(CpuWidthChoice, KeepsTheWideTeamWhereItPays) {
  WidthChoice choice(2, true);
  run_trial(choice, [](int w) { return microseconds(w == 1 ? 690 : 570); });
  EXPECT_EQ(choice.chosen(), 2);
}

TEST(CpuWidthChoice, TheNarrowestWithinFivePercentOfTheFastest) {
  WidthChoice close(2, true);
  run_trial(close, [](int w) { return microseconds(w == 1 ? 1030 : 1000); });
  EXPECT_EQ(close.chosen(), 1) << "3% slower on one thread: half the CPU time for it";
  WidthChoice many(8, true);
  const auto ran =
      run_trial(many, [](int w) { return microseconds(w == 1 ? 4000 : w == 2 ? 2100 : w == 4 ? 1200 : 1180); });
  EXPECT_EQ((std::set<int>(ran.begin(), ran.end())), (std::set<int>{1, 2, 4, 8}));
  EXPECT_EQ(many.chosen(), 4);
}

TEST(CpuWidthChoice, ASlowModelStaysAsWideAsCompiledWithoutTrying) {
  WidthChoice choice(2, true);
  const auto ran = run_trial(choice, [](int) { return microseconds(60000); });
  EXPECT_EQ(choice.chosen(), 2);
  EXPECT_EQ(ran, (std::multiset<int>{2, 2})) << "its warm-up and one timed inference, both at the compiled width";
}

TEST(CpuWidthChoice, InferencesTheBusyBoxNarrowedAreNotCounted) {
  WidthChoice choice(2, true);
  for (int i = 0; i < 50; ++i) {
    const int width = choice.next();
    choice.record(width, 1, microseconds(width == 1 ? 500 : 900));
  }
  EXPECT_EQ(choice.chosen(), 0) << "no inference ran two threads wide";
}

TEST(CpuWidthChoice, AWidthTheUserSetIsKept) {
  WidthChoice set(2, false), one(1, true);
  EXPECT_EQ(set.chosen(), 2);
  EXPECT_EQ(one.chosen(), 1);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(set.next(), 2);
    set.record(2, 2, microseconds(i % 2 ? 100 : 10000));
    EXPECT_EQ(one.next(), 1);
  }
}

}  // namespace
}  // namespace hetero::cpu::testing
