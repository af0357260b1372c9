#include "drivers/cpu/width_choice.h"

#include <algorithm>
#include <utility>

namespace hetero::cpu {

namespace {

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// Whether gaps `idle` (ms) between inferences of `inference_ms` are a
// cadence: the caller leaves the model idle kCadenceIdle times as long as an
// inference takes.
bool at_cadence(const std::vector<double>& idle, double inference_ms) {
  return !idle.empty() && median(idle) >= WidthChoice::kCadenceIdle * inference_ms;
}

}  // namespace

WidthChoice::WidthChoice(int threads, bool choose) : threads_(std::max(1, threads)), allowed_(threads_) {
  if (choose)
    for (int w = 1; w < threads_; w *= 2) candidates_.push_back(w);
  candidates_.push_back(threads_);
  if (candidates_.size() == 1) {
    chosen_ = threads_;
    retrial_at_ = Clock::time_point::max();
  } else {
    start_trial();
  }
}

void WidthChoice::start_trial() {
  samples_.assign(candidates_.size(), {});
  unwarmed_.assign(candidates_.size(), 1);
  idle_.clear();
  recent_idle_.clear();
  turn_ = candidates_.size() - 1;  // the compiled width first: a slow model is seen at once
  chosen_ = 0;
}

int WidthChoice::next(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  if (chosen_ && now >= retrial_at_) start_trial();
  int width = chosen_ ? chosen_ : candidates_[turn_];
  // After a cadence's gap the helpers of a wider team are cold.
  if (chosen_ && !chosen_at_cadence_ && judged_ms_ > 0 && last_ended_ != Clock::time_point{} &&
      std::chrono::duration<double, std::milli>(now - last_ended_).count() >= kCadenceIdle * judged_ms_)
    width = after_idle_;
  if (width <= allowed_) return width;
  if (now < probe_at_) return allowed_;
  probe_at_ = now + probe_interval_;  // one probe at a time
  return width;
}

void WidthChoice::record(int width, int ran, Clock::time_point started, Clock::time_point ended) {
  std::lock_guard lock(mutex_);
  // Requests running side by side overlap: no idle time between them.
  const Clock::time_point previous = std::exchange(last_ended_, std::max(last_ended_, ended));
  if (ran < width) {
    // Narrowed by a busy box: newly, or again at a probe.
    probe_interval_ = width <= allowed_ ? kFirstProbe : std::min<Clock::duration>(2 * probe_interval_, kLongestProbe);
    allowed_ = ran;
    probe_at_ = ended + probe_interval_;
  } else if (width > allowed_) {
    allowed_ = threads_;  // a probe ran as wide as it asked
  }
  const double idle_ms =
      std::chrono::duration<double, std::milli>(std::max(started - previous, Clock::duration{})).count();
  if (chosen_) {
    if (previous != Clock::time_point{}) watch_pattern(idle_ms);
    return;
  }
  const Clock::duration wall = ended - started;
  if (previous != Clock::time_point{}) idle_.push_back(idle_ms);
  const auto it = std::find(candidates_.begin(), candidates_.end(), width);
  if (it == candidates_.end()) return;
  const size_t k = static_cast<size_t>(it - candidates_.begin());
  // A warm-up keeps its width's turn; then the next narrower width's (the
  // widest after the narrowest).
  if (ran == width && unwarmed_[k] > 0) {
    --unwarmed_[k];
    return;
  }
  turn_ = (turn_ + candidates_.size() - 1) % candidates_.size();
  // An inference the busy box narrowed (team_width.h) says nothing of `width`.
  if (ran != width) return;
  samples_[k].push_back(std::chrono::duration<double, std::milli>(wall).count());
  const auto now = Clock::now();
  const double always_wide = std::chrono::duration<double, std::milli>(kAlwaysWide).count();
  if (k + 1 == candidates_.size() && *std::min_element(samples_[k].begin(), samples_[k].end()) > always_wide) {
    chosen_ = last_chosen_ = threads_;
    judged_ms_ = 0;  // wide however it is called
    interval_ = kLongestInterval;
    retrial_at_ = now + interval_;
    return;
  }
  if (std::all_of(samples_.begin(), samples_.end(), [](const auto& s) { return s.size() >= kSamples; }) ||
      narrowest_won_early())
    judge(now);
}

bool WidthChoice::narrowest_won_early() const {
  if (samples_[0].size() < kEarlySamples) return false;
  const double narrowest = median(samples_[0]);
  if (!at_cadence(idle_, narrowest)) return false;
  // A wider width must be kCadenceGain faster here; one slower than the
  // narrowest over kEarlySamples is not going to be.
  return std::all_of(samples_.begin() + 1, samples_.end(),
                     [&](const auto& s) { return s.size() >= kEarlySamples && median(s) > narrowest; });
}

void WidthChoice::judge(Clock::time_point now) {
  std::vector<double> medians;
  for (const auto& s : samples_) medians.push_back(median(s));
  const double best = *std::min_element(medians.begin(), medians.end());
  const bool cadence = at_cadence(idle_, best);
  const int width = narrowest_within(medians, cadence ? kCadenceGain : 1.05);
  // The same answer again: the next trial comes twice as late.
  interval_ = width == last_chosen_ ? std::min<Clock::duration>(2 * interval_, kLongestInterval) : kRetrial;
  chosen_ = last_chosen_ = width;
  retrial_at_ = now + interval_;
  chosen_at_cadence_ = cadence;
  judged_ms_ = best;
  // A wider team gains less at a cadence than flat out, never more: where
  // it gained less than kCadenceGain flat out, it gains less at a cadence too.
  after_idle_ = cadence ? width : narrowest_within(medians, kCadenceGain);
}

int WidthChoice::narrowest_within(const std::vector<double>& medians, double margin) const {
  const double best = *std::min_element(medians.begin(), medians.end());
  // Candidates run narrowest first: the first within the margin of the best.
  for (size_t k = 0; k < candidates_.size(); ++k)
    if (medians[k] <= best * margin) return candidates_[k];
  return threads_;
}

void WidthChoice::watch_pattern(double idle_ms) {
  // Only where the other pattern could change the answer: at a cadence a
  // wider team must gain more, and back to back it need gain less.
  // Flat out to a cadence, next() already runs each inference after a gap at
  // the widest a cadence could keep (after_idle_); a trial there can only
  // find a narrower one.
  const bool could_change = chosen_at_cadence_ ? chosen_ < threads_ : after_idle_ > 1;
  if (judged_ms_ <= 0 || !could_change) return;
  recent_idle_.push_back(idle_ms);
  if (recent_idle_.size() < kSamples) return;
  const bool cadence = at_cadence(recent_idle_, judged_ms_);
  recent_idle_.clear();
  if (cadence == chosen_at_cadence_) return;
  interval_ = kRetrial;
  start_trial();
}

int WidthChoice::chosen() const {
  std::lock_guard lock(mutex_);
  return chosen_;
}

}  // namespace hetero::cpu
