#include "core/priority.h"

namespace hetero::core {

const char* priority_name(Priority priority) {
  switch (priority) {
    case Priority::Background: return "background";
    case Priority::Normal: return "normal";
    case Priority::Realtime: return "realtime";
  }
  return "normal";
}

bool parse_priority(const std::string& text, Priority& out) {
  for (Priority p : {Priority::Background, Priority::Normal, Priority::Realtime}) {
    if (text == priority_name(p)) {
      out = p;
      return true;
    }
  }
  return false;
}

bool is_scheduling_key(const std::string& key) {
  const size_t colon = key.rfind(':');
  return (colon == std::string::npos ? key : key.substr(colon + 1)) == "priority";
}

}  // namespace hetero::core
