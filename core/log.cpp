#include "core/log.h"

#include <atomic>
#include <cstdio>

namespace hetero::core {

namespace {

void to_stderr(LogLevel level, const std::string& message) {
  const char* name = level == LogLevel::Error     ? "error"
                     : level == LogLevel::Warning ? "warning"
                     : level == LogLevel::Info    ? "info"
                                                  : "debug";
  std::fprintf(stderr, "heterod: %s: %s\n", name, message.c_str());
}

std::atomic<LogSink> sink{to_stderr};

}  // namespace

void set_log_sink(LogSink s) { sink.store(s ? s : to_stderr); }

void log(LogLevel level, const std::string& message) { sink.load()(level, message); }

}  // namespace hetero::core
