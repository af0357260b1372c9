// How wide a team a compiled model's inferences run with, chosen by timing
// them.
//
// Why. A team wider than one pays for each parallel region: waking the other
// threads, and waiting at its end for the slowest. For a small model that
// costs more than the parallelism gives. Measured in process on two Zen 5
// cores (hetero bench, median and p99 in ms):
//
//   model, load                      two threads       one thread
//   PP-OCR cls, flat out             0.94 / 1.27       0.57 / 0.70
//   Silero VAD v5, flat out          0.14 / 0.21       0.10 / 0.16
//   oww embedding, flat out          0.57 / 1.11       0.69 / 1.14
//   oww embedding, 12.5 a second     1.04 / 23-25      1.00 / 1.9-2.6
//   PP-OCR cls, 12.5 a second        1.11-1.16 / 26    1.09-1.18 / 1.5-1.6
//
// Called at a cadence, the other thread has gone to sleep between calls and
// its core idles: waking it costs the median little but now and then a whole
// scheduler slice (the p99s above), and the CPU time per inference doubles.
// Flat out, the embedding gains from its second thread. Which width wins
// depends on the model and on how it is called, so each compiled model
// measures: its first inferences alternate between the candidate widths (1,
// 2, 4, ... up to the compiled width), and it keeps the narrowest whose
// median is within 5% of the fastest (a synchronous inference timed as its
// caller waits, the hand-over to a stream thread and back included: a team
// wider than one pays that, one thread runs on the caller's own). It tries
// again kRetrial later, and twice as late each time the answer stays the
// same (up to kLongestInterval): how a model is called changes. A model
// whose inference takes more than kAlwaysWide at the compiled width gains
// nothing measurable from a narrower team: it stays as compiled (and is
// timed again after kLongestInterval).
//
// At a cadence the bar for a wider team is higher. Called 12.5 times a
// second on a two-vCPU Intel Xeon VM, the openWakeWord embedding took
// 1.15-1.37 ms at the median two threads wide against 1.28-1.48 one thread
// wide, but 11 ms at p99 against 1.9-3.2, and 2.5-3.2 ms of CPU time per
// inference against 1.4-1.6: the second thread's wake-ups and its spinning
// after each region. Those do not show in a median of eight. So where the
// caller leaves the model idle kCadenceIdle times as long as an inference
// takes, a wider team must be kCadenceGain faster than the narrower to be
// kept, not 5%.
//
// A change in how the model is called starts a trial at once, where it could
// change the answer: a wider team chosen flat out, then called at a cadence
// (judged over kSamples gaps), or a narrower one chosen at a cadence, then
// called back to back. A daemon's model is called both ways in its life: the
// openWakeWord embedding, served flat out and then called 12.5 times a
// second, kept its two threads until the next trial and took 1.98 ms at
// the median, against 1.83 ms served at that rate from the start.
//
// Each inference of a wider team after a gap wakes cold helpers, and on a
// virtual machine that can cost far more than the team gains: through
// heterod, half the embedding's inferences two threads wide in the first
// kSamples gaps at 12.5/s took 9-10 ms, against 1.2-1.9 ms one thread wide.
// A plain OpenMP program shows the same on that VM: 30 regions of two
// threads took 0.14 ms back to back and 9.6 ms after an 80 ms gap, both
// threads on one vCPU in every region (the other, halted, does not count as
// idle to the guest's scheduler): the woken helper waits behind the thread
// that opened the region, spinning at its barrier. Binding the helper to the
// other vCPU gave 0.3 ms while the host was quiet, but while it was busy the
// helper then waited for the host to run that vCPU: bound during
// inferences, the embedding two threads wide at 12.5/s took 2.0-8.4 ms on
// average against 2.1-2.7 unbound, in alternating runs. So teams are not
// bound, and after a gap a narrower team is the answer:
// - A wider team gains less at a cadence than flat out, never more (the
//   embedding: 1.21x flat out, 1.08x at 12.5/s). Where the flat-out trial
//   found it less than kCadenceGain faster, an inference that starts after
//   a cadence's gap (kCadenceIdle times an inference) runs at once at the
//   width a cadence would keep, and no trial is needed when the caller
//   slows down; back to back again, the next inference runs at the chosen
//   width.
// - A trial at a cadence ends as soon as every wider width has been slower
//   than the narrowest over kEarlySamples inferences, since it would have to
//   be kCadenceGain faster: four inferences on cold helpers, not nine.
//
// A busy box overrides the choice. When other work takes the cores, a
// stream narrows its team (team_width.h), and an inference handed to it for
// two threads runs on one anyway: the caller then paid the hand-over, two
// thread wake-ups that beside busy processes wait a scheduler tick each, for
// nothing. Beside two busy loops on two vCPUs the openWakeWord embedding
// took 4.0 ms at the median that way, 1.1 ms run on its caller's thread. So
// once an inference ran narrower than asked, the next ones ask for that
// width (one thread: the caller's own), and now and then one asks for more
// again: kFirstProbe later, twice as late each time the box still narrows
// it, up to kLongestProbe.
//
// Any thread; the streams running one model's inferences share one.
#pragma once

#include <chrono>
#include <mutex>
#include <vector>

namespace hetero::cpu {

class WidthChoice {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr auto kRetrial = std::chrono::seconds(20);
  static constexpr auto kLongestInterval = std::chrono::seconds(320);
  static constexpr auto kAlwaysWide = std::chrono::milliseconds(10);
  // Timed inferences per candidate width in one trial (the first at each
  // width is not counted: it makes that width's primitives).
  static constexpr size_t kSamples = 8;
  // At a cadence, where every wider width was slower than the narrowest
  // over this many, the trial ends there (narrowest_won_early()).
  static constexpr size_t kEarlySamples = 3;
  static constexpr double kCadenceIdle = 10;
  static constexpr double kCadenceGain = 1.25;
  static constexpr auto kFirstProbe = std::chrono::milliseconds(50);
  static constexpr auto kLongestProbe = std::chrono::milliseconds(1600);

  // `threads`: the compiled width. `choose`: false runs every inference at
  // it (the user set the width).
  WidthChoice(int threads, bool choose);

  // The width for the next inference, started at `now`.
  int next(Clock::time_point now = Clock::now());
  // The inference started at next()'s `width` ran from `started` to
  // `ended`, `ran` threads wide (narrower while the box is busy:
  // team_width.h).
  void record(int width, int ran, Clock::time_point started, Clock::time_point ended);

  // For tests and metrics: the width chosen, or 0 while a trial runs.
  int chosen() const;

 private:
  void start_trial();
  void judge(Clock::time_point now);
  // At a cadence: every wider width slower than the narrowest so far.
  bool narrowest_won_early() const;
  // While a width is chosen: one more gap between two inferences.
  void watch_pattern(double idle_ms);
  // The narrowest candidate whose median is within `margin` of the fastest.
  int narrowest_within(const std::vector<double>& medians, double margin) const;

  mutable std::mutex mutex_;
  const int threads_;
  std::vector<int> candidates_;               // narrowest first; the compiled width last
  std::vector<std::vector<double>> samples_;  // per candidate, this trial's wall times (ms)
  std::vector<int> unwarmed_;                 // per candidate: inferences still to discard
  std::vector<double> idle_;                  // this trial's gaps (ms) between one inference and the next
  Clock::time_point last_ended_{};            // when the last inference recorded ended
  size_t turn_ = 0;                           // the candidate whose turn it is
  int chosen_ = 0;                            // 0: a trial runs
  int last_chosen_ = 0;                       // the last trial's answer
  Clock::duration interval_ = kRetrial;       // from a trial's answer to the next trial
  Clock::time_point retrial_at_{};           // while a width is chosen
  // How the chosen width's trial found the model called: at a cadence or
  // not, and its inference time then (0: not judged on it); the gaps (ms)
  // since, kSamples at a time.
  bool chosen_at_cadence_ = false;
  double judged_ms_ = 0;
  int after_idle_ = 0;  // the width for an inference after a cadence's gap
  std::vector<double> recent_idle_;
  // The widest the box let an inference run lately, and when to ask for
  // more again while that is narrower than asked.
  int allowed_;
  Clock::time_point probe_at_{};
  Clock::duration probe_interval_ = kFirstProbe;
};

}  // namespace hetero::cpu
