// A driver's config keys as one table: each row names a key, what values it
// takes, its default, what it does and the field of the driver's options it
// sets. set_config, get_config, the per-compile config, the list of keys in
// SUPPORTED_PROPERTIES and the help an unknown key gets all come from the
// table, so a key is added in one place and every driver words its errors
// the same way.
//
//   const core::ConfigTable<Options> table("CPU", {
//       core::int_key("num_threads", &Options::num_threads, 0, 0, 1024, "threads per inference; 0: one per core"),
//       core::bool_key("optimize", &Options::optimize, true, "graph passes"),
//   });
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/driver.h"
#include "core/priority.h"

namespace hetero::core {

// Where a key may be given.
enum class ConfigScope {
  Any,     // set_config, or the config of one compile/query/import
  Driver,  // set_config only (DRIVER.key when the core is created): it
           // changes what the driver is, such as how many devices it lists
};

template <typename Options>
struct ConfigKey {
  std::string name;
  std::string kind;  // the values it takes: "an integer 1..16", "true or false"
  std::string default_value;
  std::string help;  // what it does
  ConfigScope scope = ConfigScope::Any;
  // Sets the field from `value`; false when `value` is not of the kind.
  std::function<bool(Options&, const std::string& value)> parse;
  std::function<std::string(const Options&)> print;
};

// Text forms of the values the key makers read and write.
bool parse_config_int(const std::string& value, int min, int max, int& out);
bool parse_config_bool(const std::string& value, bool& out);
std::string print_config_list(const std::vector<std::string>& items);
// Items of a list value ("Conv, Relu,MatMul"): trimmed of spaces, empty ones
// dropped.
std::vector<std::string> split_config_list(const std::string& text);

template <typename Options>
ConfigKey<Options> int_key(std::string name, int Options::*field, int default_value, int min, int max,
                           std::string help, ConfigScope scope = ConfigScope::Any) {
  return {std::move(name),
          "an integer " + std::to_string(min) + ".." + std::to_string(max),
          std::to_string(default_value),
          std::move(help),
          scope,
          [=](Options& o, const std::string& v) { return parse_config_int(v, min, max, o.*field); },
          [=](const Options& o) { return std::to_string(o.*field); }};
}

template <typename Options>
ConfigKey<Options> bool_key(std::string name, bool Options::*field, bool default_value, std::string help,
                            ConfigScope scope = ConfigScope::Any) {
  return {std::move(name),
          "true or false",
          default_value ? "true" : "false",
          std::move(help),
          scope,
          [=](Options& o, const std::string& v) { return parse_config_bool(v, o.*field); },
          [=](const Options& o) { return std::string(o.*field ? "true" : "false"); }};
}

// A comma-separated list, empty by default.
template <typename Options>
ConfigKey<Options> list_key(std::string name, std::vector<std::string> Options::*field, std::string kind,
                            std::string help) {
  return {std::move(name),
          std::move(kind),
          "",
          std::move(help),
          ConfigScope::Any,
          [=](Options& o, const std::string& v) {
            o.*field = split_config_list(v);
            return true;
          },
          [=](const Options& o) { return print_config_list(o.*field); }};
}

// One word of `choices`, stored as the word.
template <typename Options>
ConfigKey<Options> choice_key(std::string name, std::string Options::*field, std::vector<std::string> choices,
                              std::string default_value, std::string help, ConfigScope scope = ConfigScope::Any) {
  std::string kind;
  for (const std::string& c : choices) kind += (kind.empty() ? "" : " or ") + c;
  return {std::move(name),
          std::move(kind),
          std::move(default_value),
          std::move(help),
          scope,
          [=](Options& o, const std::string& v) {
            for (const std::string& c : choices)
              if (v == c) return (o.*field = v, true);
            return false;
          },
          [=](const Options& o) { return o.*field; }};
}

// The "priority" key every driver has (core/priority.h): how a compiled
// model's inferences rank against other models' on the same device.
template <typename Options>
ConfigKey<Options> priority_key(Priority Options::*field, std::string more_help = "") {
  return {"priority",
          "realtime, normal or background",
          "normal",
          "how this model's inferences rank against other models' on the device" + more_help,
          ConfigScope::Any,
          [=](Options& o, const std::string& v) { return parse_priority(v, o.*field); },
          [=](const Options& o) { return std::string(priority_name(o.*field)); }};
}

// The "ops" key every driver has: the op types its devices may run, empty
// for every op they have kernels for.
template <typename Options>
ConfigKey<Options> ops_key(std::vector<std::string> Options::*field, std::string more_help = "") {
  return list_key("ops", field, "a comma-separated list of op types",
                  "the ops the device may run; empty: every op it has kernels for" + more_help);
}
// Whether an "ops" list lets a device run `node`. Constants are copied into
// every submodel that uses them, whatever runs it.
bool ops_allow(const std::vector<std::string>& ops, const Node& node);

// What the table says when a config is refused; fail with INVALID_ARGUMENT.
struct ConfigKeyInfo {
  const std::string& name;
  const std::string& kind;
  const std::string& default_value;
  const std::string& help;
};
[[noreturn]] void fail_unknown_config_key(const std::string& driver, const std::string& key,
                                          const std::vector<ConfigKeyInfo>& keys);
[[noreturn]] void fail_bad_config_value(const std::string& driver, const ConfigKeyInfo& key, const std::string& value);
[[noreturn]] void fail_driver_only_config_key(const std::string& driver, const std::string& key);

template <typename Options>
class ConfigTable {
 public:
  // `driver` names the driver in errors ("CPU", "OPENCL").
  ConfigTable(std::string driver, std::vector<ConfigKey<Options>> keys)
      : driver_(std::move(driver)), keys_(std::move(keys)) {}

  // Options with every key at its default.
  Options defaults() const {
    Options o{};
    for (const ConfigKey<Options>& k : keys_)
      if (!k.parse(o, k.default_value)) fail_bad_config_value(driver_, info(k), k.default_value);
    return o;
  }

  // `options` with `config` applied, for set_config (ConfigScope::Driver) or
  // for one compile (ConfigScope::Any: driver-only keys are refused). Fails
  // with INVALID_ARGUMENT naming an unknown key with the keys there are, or a
  // bad value with what its key takes; `options` is then left as it was.
  Options apply(Options options, const driver::Config& config, ConfigScope scope) const {
    for (const auto& [name, value] : config) {
      const ConfigKey<Options>& k = find(name);
      if (k.scope == ConfigScope::Driver && scope != ConfigScope::Driver) fail_driver_only_config_key(driver_, name);
      if (!k.parse(options, value)) fail_bad_config_value(driver_, info(k), value);
    }
    return options;
  }

  std::string get(const Options& options, const std::string& key) const { return find(key).print(options); }

  // The key names, space-separated, for SUPPORTED_PROPERTIES.
  std::string names() const {
    std::string list;
    for (const ConfigKey<Options>& k : keys_) list += (list.empty() ? "" : " ") + k.name;
    return list;
  }

 private:
  const ConfigKey<Options>& find(const std::string& key) const {
    for (const ConfigKey<Options>& k : keys_)
      if (k.name == key) return k;
    std::vector<ConfigKeyInfo> all;
    for (const ConfigKey<Options>& k : keys_) all.push_back(info(k));
    fail_unknown_config_key(driver_, key, all);
  }
  static ConfigKeyInfo info(const ConfigKey<Options>& k) { return {k.name, k.kind, k.default_value, k.help}; }

  std::string driver_;
  std::vector<ConfigKey<Options>> keys_;
};

}  // namespace hetero::core
