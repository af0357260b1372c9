// Messages the library has for its user but no caller to return them to (a
// cache entry refused and replaced). They go to stderr unless a program (the
// daemon) installs a sink of its own.
#pragma once

#include <string>

namespace hetero::core {

// In increasing severity: a sink may drop those below a threshold.
enum class LogLevel { Debug, Info, Warning, Error };

using LogSink = void (*)(LogLevel level, const std::string& message);

// nullptr restores the default (stderr, "heterod: warning: ...").
void set_log_sink(LogSink sink);
void log(LogLevel level, const std::string& message);

}  // namespace hetero::core
