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
using std::chrono::milliseconds;

// The inferences a case plays, one after another on a clock of its own,
// each `idle` after the last: flat out (0) or at a cadence.
struct Caller {
  WidthChoice& choice;
  microseconds idle{0};
  WidthChoice::Clock::time_point now = WidthChoice::Clock::now();

  // The width for an inference started `idle` after the last.
  int next() { return choice.next(now + idle); }
  void record(int width, int ran, microseconds took) {
    const auto started = now + idle;
    now = started + took;
    choice.record(width, ran, started, now);
  }
};

// Runs inferences taking time_at(width), `idle` apart, until a width is
// chosen (at most `limit` of them); the widths they ran at.
std::multiset<int> run_trial(WidthChoice& choice, const std::function<microseconds(int)>& time_at, int limit = 100,
                             microseconds idle = microseconds(0)) {
  Caller caller{choice, idle};
  std::multiset<int> ran;
  for (int i = 0; i < limit && choice.chosen() == 0; ++i) {
    const int width = choice.next();
    ran.insert(width);
    caller.record(width, width, time_at(width));
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

TEST(CpuWidthChoice, AtACadenceAWiderTeamMustBeAQuarterFaster) {
  // The embedding's medians at 12.5/s: two threads 10% faster, one thread
  // half the CPU time and a tenth of the p99.
  const auto embedding = [](int w) { return microseconds(w == 1 ? 1300 : 1170); };
  WidthChoice flat_out(2, true), at_cadence(2, true), much_faster(2, true);
  run_trial(flat_out, embedding);
  EXPECT_EQ(flat_out.chosen(), 2);
  run_trial(at_cadence, embedding, 100, milliseconds(80));
  EXPECT_EQ(at_cadence.chosen(), 1);
  run_trial(much_faster, [](int w) { return microseconds(w == 1 ? 1300 : 900); }, 100, milliseconds(80));
  EXPECT_EQ(much_faster.chosen(), 2) << "31% faster pays even at a cadence";
  // Idle for less than ten inferences' time is not a cadence.
  WidthChoice back_to_back(2, true);
  run_trial(back_to_back, embedding, 100, microseconds(5000));
  EXPECT_EQ(back_to_back.chosen(), 2);
}

TEST(CpuWidthChoice, ACallerThatChangesItsPaceGetsATrialAtOnce) {
  // Two threads 44% faster flat out: at a cadence that may still pay.
  const auto fast_wide = [](int w) { return microseconds(w == 1 ? 1300 : 900); };
  const auto embedding = [](int w) { return microseconds(w == 1 ? 1300 : 1170); };
  WidthChoice choice(2, true);
  run_trial(choice, fast_wide);
  ASSERT_EQ(choice.chosen(), 2) << "flat out";
  // A daemon's client now calls it 12.5 times a second.
  Caller paced{choice, milliseconds(80)};
  for (size_t i = 0; i < WidthChoice::kSamples; ++i) {
    EXPECT_EQ(choice.chosen(), 2) << "judged on kSamples gaps";
    ASSERT_EQ(paced.next(), 2);
    paced.record(2, 2, microseconds(900));
  }
  EXPECT_EQ(choice.chosen(), 0) << "a trial runs";
  // Its helpers wake cold at the cadence: two threads only 10% faster.
  run_trial(choice, embedding, 100, milliseconds(80));
  EXPECT_EQ(choice.chosen(), 1);
  // And back to back again.
  Caller flat_out{choice};
  for (size_t i = 0; i < WidthChoice::kSamples; ++i) flat_out.record(1, 1, microseconds(1300));
  EXPECT_EQ(choice.chosen(), 0);
  run_trial(choice, fast_wide);
  EXPECT_EQ(choice.chosen(), 2);

  // One thread chosen flat out stays one thread at a cadence: no trial.
  WidthChoice narrow(2, true);
  run_trial(narrow, [](int w) { return microseconds(w == 1 ? 570 : 940); });
  ASSERT_EQ(narrow.chosen(), 1);
  Caller slow{narrow, milliseconds(80)};
  for (size_t i = 0; i < 3 * WidthChoice::kSamples; ++i) slow.record(1, 1, microseconds(570));
  EXPECT_EQ(narrow.chosen(), 1);
}

TEST(CpuWidthChoice, AfterACadencesGapAWideTeamThatGainedLittleFlatOutRunsNarrow) {
  // The embedding: two threads 11% faster flat out, short of the quarter a
  // cadence asks, and a cadence only makes a second thread worth less.
  const auto embedding = [](int w) { return microseconds(w == 1 ? 1300 : 1170); };
  WidthChoice choice(2, true);
  run_trial(choice, embedding);
  ASSERT_EQ(choice.chosen(), 2) << "flat out";
  // Called 12.5 times a second from the first call on: one thread each
  // time, its helper never woken cold, and no trial.
  Caller paced{choice, milliseconds(80)};
  for (size_t i = 0; i < 3 * WidthChoice::kSamples; ++i) {
    ASSERT_EQ(paced.next(), 1) << "inference " << i;
    paced.record(1, 1, microseconds(1300));
  }
  EXPECT_EQ(choice.chosen(), 2) << "still the width for back-to-back calls";
  // Back to back again: two threads from the next call on.
  Caller flat_out{choice};
  for (size_t i = 0; i < 3 * WidthChoice::kSamples; ++i) {
    ASSERT_EQ(flat_out.next(), 2) << "inference " << i;
    flat_out.record(2, 2, microseconds(1170));
  }
  // A gap shorter than ten inferences is no cadence.
  Caller thinking{choice, microseconds(5000)};
  EXPECT_EQ(thinking.next(), 2);
}

TEST(CpuWidthChoice, AtACadenceATrialEndsOnceTheWiderTeamIsSlower) {
  // Two threads woken cold after each gap: 9 ms against 1.3 on one.
  const auto cold_helpers = [](int w) { return microseconds(w == 1 ? 1300 : 9000); };
  WidthChoice choice(2, true);
  const auto ran = run_trial(choice, cold_helpers, 100, milliseconds(80));
  EXPECT_EQ(choice.chosen(), 1);
  // kEarlySamples counted at each width and one warm-up each, not kSamples.
  EXPECT_EQ(ran.count(2), WidthChoice::kEarlySamples + 1);
  EXPECT_EQ(ran.count(1), WidthChoice::kEarlySamples + 1);
  // Flat out, the trial runs its course whatever the first samples say.
  WidthChoice flat_out(2, true);
  const auto flat = run_trial(flat_out, cold_helpers);
  EXPECT_EQ(flat_out.chosen(), 1);
  EXPECT_EQ(flat.count(2), WidthChoice::kSamples + 1);
  // At a cadence, a wider team faster over the first samples is measured in
  // full: it may yet be a quarter faster.
  WidthChoice close(2, true);
  const auto measured = run_trial(close, [](int w) { return microseconds(w == 1 ? 1300 : 1200); }, 100,
                                  milliseconds(80));
  EXPECT_EQ(close.chosen(), 1);
  EXPECT_EQ(measured.count(2), WidthChoice::kSamples + 1);
}

TEST(CpuWidthChoice, ASlowModelStaysAsWideAsCompiledWithoutTrying) {
  WidthChoice choice(2, true);
  const auto ran = run_trial(choice, [](int) { return microseconds(60000); });
  EXPECT_EQ(choice.chosen(), 2);
  EXPECT_EQ(ran, (std::multiset<int>{2, 2})) << "its warm-up and one timed inference, both at the compiled width";
}

TEST(CpuWidthChoice, InferencesTheBusyBoxNarrowedAreNotCounted) {
  WidthChoice choice(2, true);
  Caller caller{choice};
  for (int i = 0; i < 50; ++i) {
    const int width = choice.next();
    caller.record(width, 1, microseconds(width == 1 ? 500 : 900));
  }
  EXPECT_EQ(choice.chosen(), 0) << "no inference ran two threads wide";
}

TEST(CpuWidthChoice, WhileTheBoxNarrowsItsInferencesTheyAskForThatWidth) {
  // Two threads wide is chosen, and pays even after a gap; then busy
  // processes take the cores, and the stream runs its inferences one thread
  // wide.
  WidthChoice choice(2, true);
  run_trial(choice, [](int w) { return microseconds(w == 1 ? 1300 : 900); });
  ASSERT_EQ(choice.chosen(), 2);
  Caller caller{choice};
  caller.record(2, 1, microseconds(1100));
  // Until the first probe: one thread, which runs on the caller's own.
  const auto narrowed = caller.now;
  for (int i = 0; i < 20; ++i) EXPECT_EQ(choice.next(narrowed + milliseconds(2 * i)), 1);
  // A probe asks for the chosen width again, one at a time.
  const auto probe = narrowed + WidthChoice::kFirstProbe;
  EXPECT_EQ(choice.next(probe), 2);
  EXPECT_EQ(choice.next(probe + microseconds(100)), 1) << "one probe in flight";
  // Still narrowed: the next probe comes twice as late.
  caller.now = probe;
  caller.record(2, 1, microseconds(1100));
  EXPECT_EQ(choice.next(caller.now + WidthChoice::kFirstProbe), 1);
  EXPECT_EQ(choice.next(caller.now + 2 * WidthChoice::kFirstProbe), 2);
  // The box is quiet again: the probe ran two wide, and so do the next ones.
  caller.now += 2 * WidthChoice::kFirstProbe;
  caller.record(2, 2, microseconds(570));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(choice.next(caller.now + microseconds(i)), 2);
  EXPECT_EQ(choice.chosen(), 2) << "the choice itself stood throughout";
}

TEST(CpuWidthChoice, AWidthTheUserSetIsKept) {
  WidthChoice set(2, false), one(1, true);
  EXPECT_EQ(set.chosen(), 2);
  EXPECT_EQ(one.chosen(), 1);
  Caller caller{set};
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(set.next(), 2);
    caller.record(2, 2, microseconds(i % 2 ? 100 : 10000));
    EXPECT_EQ(one.next(), 1);
  }
}

}  // namespace
}  // namespace hetero::cpu::testing
