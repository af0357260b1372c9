#include "core/progress.h"

namespace hetero::core {

namespace {
thread_local ProgressSink* current = nullptr;
}  // namespace

void ProgressSink::report(const char* stage, uint64_t done, uint64_t total) noexcept {
  // Progress never fails the work it reports on (nor unwinds through a
  // driver's build threads): a failure to report drops the report.
  try {
    if (reported_ && done <= last_done_ && last_stage_ == stage) return;
    reported_ = true;
    last_stage_ = stage;
    last_done_ = done;
    fn_(stage, done, total);
  } catch (...) {
  }
}

ProgressSink* progress_sink() noexcept { return current; }

ProgressScope::ProgressScope(ProgressSink* sink) noexcept : previous_(current) { current = sink; }
ProgressScope::~ProgressScope() { current = previous_; }

void report_progress(const char* stage, uint64_t done, uint64_t total) noexcept {
  if (ProgressSink* sink = current) sink->report(stage, done, total);
}

}  // namespace hetero::core
