// The daemon's log: one line per message on stderr, which systemd sends to
// the journal. Clients put text into it (model names, gRPC metadata, peer
// credentials in a refusal) and can make it speak at will (a connect storm
// from a refused uid), so the sink guards every line, whatever its source:
// - control characters are escaped, so that no message spans two lines or
//   forges a "heterod: error:" line of its own;
// - lines are rate limited (a token bucket: a burst, then a steady rate);
//   what was dropped is counted and said with the next line let through.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/log.h"

namespace hetero::daemon {

// `message` with each byte below 0x20 (but tab) and 0x7f written as \n, \r
// or \xNN.
std::string escape_log_text(std::string_view message);

// Lets through `burst` lines at once and `per_second` after that.
class LogRateLimit {
 public:
  using Clock = std::chrono::steady_clock;
  LogRateLimit(double per_second, double burst) : per_second_(per_second), burst_(burst), tokens_(burst) {}
  // Whether a line at `now` may be written; when it may, `dropped` is how
  // many were refused since the last one let through.
  bool admit(Clock::time_point now, uint64_t& dropped);

 private:
  const double per_second_, burst_;
  double tokens_;
  Clock::time_point last_{};
  uint64_t dropped_ = 0;
};

// Installs the sink (core::set_log_sink): "heterod: LEVEL: message", or
// "<N>message" (a syslog priority) when `to_journal`. 200 lines at once,
// then 20 a second.
void install_log_sink(bool to_journal);

// The least severe level written (default info): the config's log_level,
// at start and at each reload, unless the command line pinned one
// (--log-level), which later calls leave alone.
void set_log_level(core::LogLevel least);
void pin_log_level(core::LogLevel least);

// "debug", "info", "warning" or "error"; nullopt for anything else.
std::optional<core::LogLevel> log_level_named(std::string_view name);
inline constexpr const char* kLogLevelNames = "debug, info, warning or error";

}  // namespace hetero::daemon
