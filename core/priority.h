// How urgent a compiled model's inferences are, against the other models that
// share a device: the `priority` config key every driver takes.
//
// realtime   runs before anything else waiting for the device; on the CPU a
//            running inference of lower priority lets it run at its next node
//            boundary (drivers/cpu/scheduler.h), so a realtime request waits
//            for about one node of another model, not for a whole inference.
// normal     the default.
// background runs when nothing else waits.
#pragma once

#include <cstdint>
#include <string>

namespace hetero::core {

enum class Priority : uint8_t { Background = 0, Normal = 1, Realtime = 2 };
inline constexpr int kPriorityLevels = 3;

const char* priority_name(Priority priority);
// "realtime", "normal" or "background"; false for anything else.
bool parse_priority(const std::string& text, Priority& out);

// Whether a compile config key decides how a compiled model is scheduled
// rather than what it computes ("priority", or "DEVICE:priority" under
// HETERO): such a key is not part of a blob's identity, so a blob or cache
// entry serves every priority and an import may set it freely.
bool is_scheduling_key(const std::string& key);

}  // namespace hetero::core
