// How wide a stream's OpenMP team runs while the box is shared: as wide as
// the model was compiled for on a quiet box, narrower while other work takes
// the cores, measured inference by inference.
//
// Why. oneDNN (Debian's build, OpenMP) and the kernels' own loops split a
// parallel region's work statically between the team's threads, and the
// thread that opened it waits at the region's end for every one of them.
// When another process takes the core of one team thread, that thread runs
// only when the system's scheduler hands the core back, a time slice later
// (milliseconds), and the whole region waits for it, node after node: on two
// cores beside one busy process the openWakeWord embedding's p99 went from
// 1.6 to 48 ms. A narrower team that fits the cores left to it does not wait
// for anyone; its inference is slower by the parallelism it gave up, not by
// slices.
//
// How it knows. Linux counts, per thread, the time it spent runnable but
// waiting for a CPU (the second figure of /proc/self/task/TID/schedstat).
// The team's threads' waits inside inferences are summed over at least 1 ms
// of inference time: when they exceed a quarter of it twice running, the
// team loses as many threads as the waits amount to (at least one). While narrower than compiled, the
// stream looks at the number of runnable threads on the box every 50 ms
// (/proc/loadavg's fourth field, an instant count) and widens by one when a
// core is idle; a widening that is undone at once doubles the time to the
// next try (up to 1.6 s), so a box that stays busy costs a slow inference
// only that rarely.
//
// Its state is the stream's: the OpenMP team is per calling thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

namespace hetero::cpu {

class TeamWidth {
 public:
  // `cores`: the CPUs the driver was given (cpu_budget.h).
  explicit TeamWidth(int cores);
  ~TeamWidth();
  TeamWidth(const TeamWidth&) = delete;
  TeamWidth& operator=(const TeamWidth&) = delete;

  // The stream thread's own, or null on any other thread (a caller's, the
  // realtime lane's: those run compiled widths).
  static TeamWidth* current();
  // Makes `team` the calling thread's (null to clear).
  static void set_current(TeamWidth* team);

  // Around one inference of a model compiled for `threads`: begin() gives
  // the width to run it with, end() measures. Nested pairs (a job run at a
  // node boundary of another) keep to the limit and measure nothing.
  int begin(int threads);
  void end();

  // While an inference runs between begin() and end().
  class Scope {
   public:
    Scope(TeamWidth* team, int threads) : team_(team), width_(team ? team->begin(threads) : threads) {}
    ~Scope() {
      if (team_) team_->end();
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    int width() const noexcept { return width_; }

   private:
    TeamWidth* team_;
    int width_;
  };

  // What it decided, for tests and metrics.
  int limit() const noexcept { return limit_; }

 private:
  using Clock = std::chrono::steady_clock;
  // The team threads' run-queue waits so far, in nanoseconds.
  int64_t team_wait_ns();
  // Opens the schedstat files of a team `width` wide.
  void learn_team(int width);
  // Runnable threads on the box now, or -1.
  int runnable_now();
  void maybe_widen(int threads, Clock::time_point now);

  const int cores_;
  int depth_ = 0;
  int width_ = 1;            // of the inference running
  int limit_;                // the widest the team may run now
  int known_ = 0;            // the widest team whose threads were asked for their ids
  std::vector<int> known_tids_;
  std::vector<int> schedstat_fds_;  // one per known thread
  int loadavg_fd_ = -1;
  Clock::time_point started_{};
  // Whether this inference's waits are read; the inference time and the
  // waits measured since the last judgement; when the next one starts.
  bool measuring_ = false;
  Clock::duration busy_{};
  int64_t waited_ns_ = 0;
  int64_t wait_at_start_ = 0;
  Clock::time_point next_judgement_{};
  bool crowded_before_ = false;  // the last judgement found the waits too long
  Clock::time_point next_widen_{};
  std::chrono::milliseconds widen_interval_;
  Clock::time_point widened_at_{};
};

}  // namespace hetero::cpu
