// Driver config values that are lists ("ops" = "Conv, Relu,MatMul"): the
// items, trimmed of spaces, empty ones dropped. Shared by every driver.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace hetero::core {

inline std::vector<std::string> split_config_list(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const size_t b = text.find_first_not_of(' ', start);
    const size_t e = text.find_last_not_of(' ', comma - 1);
    if (b < comma && e != std::string::npos && e >= b) items.push_back(text.substr(b, e - b + 1));
    start = comma + 1;
  }
  return items;
}

}  // namespace hetero::core
