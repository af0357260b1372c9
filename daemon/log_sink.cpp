#include "daemon/log_sink.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>

namespace hetero::daemon {

namespace {

constexpr double kLinesPerSecond = 20;
constexpr double kBurstLines = 200;

bool to_journal = false;
std::mutex sink_mutex;  // the loop, loader and gRPC threads all log
LogRateLimit rate_limit(kLinesPerSecond, kBurstLines);
std::atomic<core::LogLevel> least_level{core::LogLevel::Info};
std::atomic<bool> level_pinned{false};

void write_line(core::LogLevel level, const std::string& text) {
  const char* name = "info";
  int priority = 6;
  if (level == core::LogLevel::Debug) {
    name = "debug";
    priority = 7;
  } else if (level == core::LogLevel::Warning) {
    name = "warning";
    priority = 4;
  } else if (level == core::LogLevel::Error) {
    name = "error";
    priority = 3;
  }
  if (to_journal)
    std::fprintf(stderr, "<%d>%s\n", priority, text.c_str());
  else
    std::fprintf(stderr, "heterod: %s: %s\n", name, text.c_str());
}

void log_line(core::LogLevel level, const std::string& message) {
  if (level < least_level.load(std::memory_order_relaxed)) return;  // before the rate limit: not counted
  std::lock_guard lock(sink_mutex);
  uint64_t dropped = 0;
  if (!rate_limit.admit(LogRateLimit::Clock::now(), dropped)) return;
  if (dropped)
    write_line(core::LogLevel::Warning, std::to_string(dropped) + " log lines dropped (more than " +
                                            std::to_string(static_cast<int>(kLinesPerSecond)) + " a second)");
  write_line(level, escape_log_text(message));
}

}  // namespace

std::string escape_log_text(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (const char ch : message) {
    const auto byte = static_cast<unsigned char>(ch);
    if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if ((byte < 0x20 && ch != '\t') || byte == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

bool LogRateLimit::admit(Clock::time_point now, uint64_t& dropped) {
  if (last_ != Clock::time_point{})
    tokens_ = std::min(burst_, tokens_ + std::chrono::duration<double>(now - last_).count() * per_second_);
  last_ = now;
  if (tokens_ < 1) {
    ++dropped_;
    return false;
  }
  tokens_ -= 1;
  dropped = dropped_;
  dropped_ = 0;
  return true;
}

void install_log_sink(bool journal) {
  to_journal = journal;
  core::set_log_sink(&log_line);
}

void set_log_level(core::LogLevel least) {
  if (!level_pinned.load()) least_level.store(least);
}

void pin_log_level(core::LogLevel least) {
  least_level.store(least);
  level_pinned.store(true);
}

std::optional<core::LogLevel> log_level_named(std::string_view name) {
  if (name == "debug") return core::LogLevel::Debug;
  if (name == "info") return core::LogLevel::Info;
  if (name == "warning") return core::LogLevel::Warning;
  if (name == "error") return core::LogLevel::Error;
  return std::nullopt;
}

}  // namespace hetero::daemon
