#include "drivers/cpu/team_width.h"

#include <fcntl.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace hetero::cpu {

namespace {

thread_local TeamWidth* tls_team = nullptr;

// Over an inference, the team's summed run-queue waits above this share of
// its time narrow it. On a quiet box they are a few microseconds (a client's
// or the daemon's thread woken on a core for a moment).
constexpr double kNarrowAt = 0.25;
// Judged over at least this much inference time, so that a tiny model's
// inferences are judged a few together; then as long unmeasured.
constexpr std::chrono::microseconds kJudgeOver{1000};
// While narrower than compiled: how often it looks for an idle core, and
// the longest it waits after widenings that were undone at once.
constexpr std::chrono::milliseconds kLookEvery{50};
constexpr std::chrono::milliseconds kLongestBackOff{1600};

// A small /proc file, read again from its start; false when unreadable.
bool read_proc(int fd, char (&buf)[128]) {
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return false;
  buf[n] = '\0';
  return true;
}

}  // namespace

TeamWidth::TeamWidth(int cores)
    : cores_(std::max(1, cores)), limit_(std::max(1, cores)), widen_interval_(kLookEvery) {
  loadavg_fd_ = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
}

TeamWidth::~TeamWidth() {
  for (int fd : schedstat_fds_) close(fd);
  if (loadavg_fd_ >= 0) close(loadavg_fd_);
}

TeamWidth* TeamWidth::current() { return tls_team; }
void TeamWidth::set_current(TeamWidth* team) { tls_team = team; }

void TeamWidth::learn_team(int width) {
  // The team's threads are libgomp's pool for this thread, the same ones
  // region after region: ask each for its id once.
  std::vector<pid_t> tids(static_cast<size_t>(width), 0);
#pragma omp parallel num_threads(width)
  tids[static_cast<size_t>(omp_get_thread_num())] = static_cast<pid_t>(syscall(SYS_gettid));
  for (pid_t tid : tids) {
    if (tid == 0 || std::find(known_tids_.begin(), known_tids_.end(), tid) != known_tids_.end()) continue;
    const std::string path = "/proc/self/task/" + std::to_string(tid) + "/schedstat";
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // no schedstat (a kernel without it): the team keeps its width
    schedstat_fds_.push_back(fd);
    known_tids_.push_back(tid);
  }
  known_ = std::max(known_, width);
}

int64_t TeamWidth::team_wait_ns() {
  int64_t total = 0;
  for (int fd : schedstat_fds_) {
    char buf[128];
    long long run_ns = 0, wait_ns = 0;  // "run_ns wait_ns slices"
    if (read_proc(fd, buf) && std::sscanf(buf, "%lld %lld", &run_ns, &wait_ns) == 2) total += wait_ns;
  }
  return total;
}

int TeamWidth::runnable_now() {
  // "0.52 0.58 0.59 3/467 12345": the fourth figure is runnable/total.
  char buf[128];
  int runnable = -1;
  if (loadavg_fd_ < 0 || !read_proc(loadavg_fd_, buf) || std::sscanf(buf, "%*s %*s %*s %d/", &runnable) != 1) return -1;
  return runnable;
}

void TeamWidth::maybe_widen(int threads, Clock::time_point now) {
  if (now < next_widen_) return;
  next_widen_ = now + kLookEvery;
  // Runnable threads count this one: fewer than the cores leaves one idle.
  const int runnable = runnable_now();
  if (runnable < 0 || runnable >= cores_) return;
  limit_ = std::min(threads, limit_ + 1);
  widened_at_ = now;
}

int TeamWidth::begin(int threads) {
  // A job run at a node boundary of another keeps to the limit and to its
  // own compiled width, and is not measured.
  if (depth_++ > 0) return std::max(1, std::min(threads, limit_));
  const Clock::time_point now = Clock::now();
  if (limit_ < threads) maybe_widen(threads, now);
  width_ = std::max(1, std::min(threads, limit_));
  measuring_ = false;
  if (width_ > 1 && now >= next_judgement_) {
    // New threads' files bring their whole past waits: judge afresh.
    if (known_ < width_) learn_team(width_), busy_ = Clock::duration::zero(), waited_ns_ = 0;
    wait_at_start_ = team_wait_ns();
    measuring_ = true;
  }
  started_ = now;
  return width_;
}

void TeamWidth::end() {
  if (--depth_ > 0 || !measuring_) return;
  // Only the waits inside inferences count: between two of them the
  // stream's and the team's idle threads spin beside a client's thread, and
  // that waiting delays nothing.
  const Clock::time_point now = Clock::now();
  waited_ns_ += team_wait_ns() - wait_at_start_;
  busy_ += now - started_;
  if (busy_ < kJudgeOver) return;
  const double busy_ns = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(busy_).count());
  const double waited = static_cast<double>(waited_ns_);
  busy_ = Clock::duration::zero();
  waited_ns_ = 0;
  // Judged, the next inferences over as long again run unmeasured: a tiny
  // model's inference then pays for reading the waits only half the time.
  next_judgement_ = now + kJudgeOver;
  // Two judgements running: a burst of the box's own work (an interrupt, a
  // kernel thread) makes one now and then on a quiet box; a co-tenant makes
  // every one.
  const bool crowded = waited > kNarrowAt * busy_ns;
  const bool again = crowded && crowded_before_;
  crowded_before_ = crowded;
  if (!again) return;
  crowded_before_ = false;
  const int lose = std::max(1, static_cast<int>(std::ceil(waited / busy_ns)));
  limit_ = std::max(1, width_ - lose);
  // Narrowed right after widening: the box is still busy, try less often.
  widen_interval_ = now - widened_at_ < 2 * widen_interval_ ? std::min(widen_interval_ * 2, kLongestBackOff)
                                                             : kLookEvery;
  next_widen_ = now + widen_interval_;
}

}  // namespace hetero::cpu
