#include "core/progress.h"

#include "core/error.h"

namespace hetero::core {

namespace {
thread_local ProgressSink* current = nullptr;
}  // namespace

void ProgressSink::report(const char* stage, uint64_t done, uint64_t total) noexcept {
  // Progress never fails the work it reports on (nor unwinds through a
  // driver's build threads): a failure to report drops the report.
  try {
    if (!fn_) return;
    if (reported_ && done <= last_done_ && last_stage_ == stage) return;
    reported_ = true;
    last_stage_ = stage;
    last_done_ = done;
    fn_(stage, done, total);
  } catch (...) {
  }
}

void ProgressSink::set_deadline(std::chrono::steady_clock::time_point at, std::string message) {
  deadline_ = at;
  deadline_message_ = std::move(message);
}

bool ProgressSink::past_deadline() const noexcept {
  return deadline_ && std::chrono::steady_clock::now() > *deadline_;
}

void ProgressSink::check_deadline() const {
  if (past_deadline()) fail(HETERO_TIMEOUT, deadline_message_);
}

ProgressSink* progress_sink() noexcept { return current; }

ProgressScope::ProgressScope(ProgressSink* sink) noexcept : previous_(current) { current = sink; }
ProgressScope::~ProgressScope() { current = previous_; }

void report_progress(const char* stage, uint64_t done, uint64_t total) noexcept {
  if (ProgressSink* sink = current) sink->report(stage, done, total);
}

void check_deadline() {
  if (const ProgressSink* sink = current) sink->check_deadline();
}

}  // namespace hetero::core
