#include "core/config_table.h"

#include <algorithm>
#include <charconv>

#include "core/error.h"

namespace hetero::core {

bool parse_config_int(const std::string& value, int min, int max, int& out) {
  int n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size() || n < min || n > max) return false;
  out = n;
  return true;
}

bool parse_config_bool(const std::string& value, bool& out) {
  if (value != "true" && value != "false") return false;
  out = value == "true";
  return true;
}

std::string print_config_list(const std::vector<std::string>& items) {
  std::string list;
  for (const std::string& item : items) list += (list.empty() ? "" : ",") + item;
  return list;
}

std::vector<std::string> split_config_list(const std::string& text) {
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

bool ops_allow(const std::vector<std::string>& ops, const Node& node) {
  return ops.empty() || node.op_type == "Constant" || std::find(ops.begin(), ops.end(), node.op_type) != ops.end();
}

void fail_unknown_config_key(const std::string& driver, const std::string& key,
                             const std::vector<ConfigKeyInfo>& keys) {
  std::string list;
  for (const ConfigKeyInfo& k : keys)
    list += (list.empty() ? "" : "; ") + k.name + ": " + k.kind + ", default " +
            (k.default_value.empty() ? "none" : k.default_value);
  fail(HETERO_INVALID_ARGUMENT, "the " + driver + " driver has no config key '" + key + "' (keys: " + list + ")");
}

void fail_bad_config_value(const std::string& driver, const ConfigKeyInfo& key, const std::string& value) {
  fail(HETERO_INVALID_ARGUMENT, driver + " config " + key.name + " must be " + key.kind + ", got '" + value + "' (" +
                                    key.name + ": " + key.help + ")");
}

void fail_driver_only_config_key(const std::string& driver, const std::string& key) {
  fail(HETERO_INVALID_ARGUMENT, driver + " config " + key + " is a driver setting (" + driver + "." + key +
                                    " when the core is created), not a compile setting");
}

}  // namespace hetero::core
