// Progress of long work (compiling a model): the core and the drivers say
// what they are doing, in stages of counted units ("building CPU kernels",
// 40 of 212 nodes), to a sink the caller installed on the thread doing the
// work. The C ABI's hetero_core_set_progress() installs one around each
// compile of a core that has a callback.
//
// A sink may also hold a deadline for the work (the daemon's
// limits.max_compile_ms): the compile path calls check_deadline() between
// units of work, where stopping leaves nothing half-built.
//
// Why a thread-local and not a parameter: progress is reported deep in the
// compile path (a CPU kernel loop, a GPU tuner), and threading a parameter
// through core::Runtime, partition/ and every driver's compile() would widen
// the driver interface for something most callers never want. A thread-local
// costs one load per report when no sink is installed. Work that moves to
// another thread (the CPU driver's executor) carries the sink across with a
// ProgressScope of its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace hetero::core {

class ProgressSink {
 public:
  using Fn = std::function<void(const char* stage, uint64_t done, uint64_t total)>;
  // `fn` may be empty: a sink for the deadline alone.
  explicit ProgressSink(Fn fn) : fn_(std::move(fn)) {}

  // Passes a report on, except one that does not move its stage forward (the
  // same stage with `done` not above the last one's), so that receivers see
  // `done` increase within a stage whatever the reporting code does.
  void report(const char* stage, uint64_t done, uint64_t total) noexcept;

  // From now on check_deadline() throws TIMEOUT with `message` once `at`
  // has passed.
  void set_deadline(std::chrono::steady_clock::time_point at, std::string message);
  bool past_deadline() const noexcept;
  void check_deadline() const;

 private:
  Fn fn_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  std::string deadline_message_;
  std::string last_stage_;
  uint64_t last_done_ = 0;
  bool reported_ = false;
};

// The sink installed on this thread, or null.
ProgressSink* progress_sink() noexcept;

// Installs `sink` (may be null: none) on this thread for the scope's life,
// then puts the previous one back.
class ProgressScope {
 public:
  explicit ProgressScope(ProgressSink* sink) noexcept;
  ~ProgressScope();
  ProgressScope(const ProgressScope&) = delete;
  ProgressScope& operator=(const ProgressScope&) = delete;

 private:
  ProgressSink* previous_;
};

// Reports to this thread's sink; nothing at all when there is none. `done`
// goes from 0 to `total` within a stage; a stage ends with done == total.
void report_progress(const char* stage, uint64_t done, uint64_t total) noexcept;

// Throws Failure(HETERO_TIMEOUT) when this thread's sink has a deadline that
// has passed; nothing otherwise. Work that moves to another thread carries
// the deadline across with the sink.
void check_deadline();

}  // namespace hetero::core
