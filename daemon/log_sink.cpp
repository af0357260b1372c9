#include "daemon/log_sink.h"

#include <algorithm>
#include <cstdio>
#include <mutex>

#include "core/log.h"

namespace hetero::daemon {

namespace {

constexpr double kLinesPerSecond = 20;
constexpr double kBurstLines = 200;

bool to_journal = false;
std::mutex sink_mutex;  // the loop, loader and gRPC threads all log
LogRateLimit rate_limit(kLinesPerSecond, kBurstLines);

void write_line(core::LogLevel level, const std::string& text) {
  const char* name = "info";
  int priority = 6;
  if (level == core::LogLevel::Warning) {
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

}  // namespace hetero::daemon
