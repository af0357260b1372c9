#include "daemon/config.h"

#include <sys/un.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "core/error.h"

namespace hetero::daemon {

namespace {

namespace fs = std::filesystem;

// The file being read and the helpers that report against it.
struct Reader {
  std::string file;
  fs::path dir;

  [[noreturn]] void fail_at(const YAML::Node& node, const std::string& what) const {
    const int line = node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
    fail(HETERO_INVALID_ARGUMENT, file + ":" + std::to_string(line) + ": " + what);
  }

  void expect_map(const YAML::Node& node, const std::string& field) const {
    if (!node.IsMap()) fail_at(node, "'" + field + "' must be a mapping");
  }

  std::string text(const YAML::Node& node, const std::string& field) const {
    if (!node.IsScalar()) fail_at(node, "'" + field + "' must be a string");
    return node.Scalar();
  }

  uint64_t number(const YAML::Node& node, const std::string& field, uint64_t min, uint64_t max) const {
    const std::string s = node.IsScalar() ? node.Scalar() : std::string();
    uint64_t value = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || value < min || value > max)
      fail_at(node, "'" + field + "' must be a whole number from " + std::to_string(min) + " to " +
                        std::to_string(max));
    return value;
  }

  std::string path(const YAML::Node& node, const std::string& field) const {
    const std::string p = text(node, field);
    if (p.empty()) fail_at(node, "'" + field + "' is empty");
    return (dir / p).lexically_normal().string();
  }

  std::vector<std::string> strings(const YAML::Node& node, const std::string& field) const {
    if (!node.IsSequence()) fail_at(node, "'" + field + "' must be a list");
    std::vector<std::string> out;
    for (const YAML::Node& item : node) out.push_back(text(item, field));
    return out;
  }

  std::map<std::string, std::string> string_map(const YAML::Node& node, const std::string& field) const {
    expect_map(node, field);
    std::map<std::string, std::string> out;
    for (const auto& kv : node) out[text(kv.first, field)] = text(kv.second, field + "." + kv.first.Scalar());
    return out;
  }

  // Calls `handle(key, value)` for each entry, after checking the key is one
  // of `known`.
  template <typename Handle>
  void each(const YAML::Node& node, const std::string& field, const std::set<std::string>& known,
            Handle&& handle) const {
    expect_map(node, field);
    for (const auto& kv : node) {
      const std::string key = text(kv.first, field + " key");
      if (!known.count(key)) {
        std::string keys;
        for (const std::string& k : known) {
          if (!keys.empty()) keys += ", ";
          keys += k;
        }
        fail_at(kv.first, "unknown key '" + key + "' in " + field + " (keys: " + keys + ")");
      }
      handle(key, kv.second);
    }
  }
};

std::string env_dir(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) return {};
  // systemd lists several directories separated by ':' when there are more.
  std::string s = value;
  return s.substr(0, s.find(':'));
}

void read_socket(const Reader& r, const YAML::Node& node, Config& c) {
  r.each(node, "socket", {"path", "mode", "group"}, [&](const std::string& key, const YAML::Node& v) {
    if (key == "path") {
      c.socket_path = r.path(v, "socket.path");
    } else if (key == "mode") {
      const std::string s = r.text(v, "socket.mode");
      unsigned mode = 0;
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), mode, 8);
      if (s.empty() || ec != std::errc() || end != s.data() + s.size() || mode > 0777)
        r.fail_at(v, "'socket.mode' must be octal permissions such as \"0660\"");
      c.socket_mode = static_cast<mode_t>(mode);
    } else {
      c.socket_group = r.text(v, "socket.group");
    }
  });
}

void read_access(const Reader& r, const YAML::Node& node, Config& c) {
  r.each(node, "access", {"allowed_uids", "allowed_gids"}, [&](const std::string& key, const YAML::Node& v) {
    if (!v.IsSequence()) r.fail_at(v, "'access." + key + "' must be a list of numeric ids");
    for (const YAML::Node& id : v) {
      const auto n = r.number(id, "access." + key, 0, UINT32_MAX - 1);
      if (key == "allowed_uids")
        c.allowed_uids.push_back(static_cast<uid_t>(n));
      else
        c.allowed_gids.push_back(static_cast<gid_t>(n));
    }
  });
}

void read_limits(const Reader& r, const YAML::Node& node, Limits& l) {
  const std::set<std::string> keys = {"max_frame_bytes",    "max_connections",   "max_in_flight_per_client",
                                      "request_timeout_ms", "max_model_bytes",   "shutdown_grace_ms"};
  r.each(node, "limits", keys, [&](const std::string& key, const YAML::Node& v) {
    const std::string field = "limits." + key;
    if (key == "max_frame_bytes")
      l.max_frame_bytes = static_cast<uint32_t>(r.number(v, field, 4096, 1u << 30));
    else if (key == "max_connections")
      l.max_connections = static_cast<uint32_t>(r.number(v, field, 1, 1u << 20));
    else if (key == "max_in_flight_per_client")
      l.max_in_flight_per_client = static_cast<uint32_t>(r.number(v, field, 1, 1u << 16));
    else if (key == "request_timeout_ms")
      l.request_timeout_ms = static_cast<uint32_t>(r.number(v, field, 1, 24u * 3600 * 1000));
    else if (key == "max_model_bytes")
      l.max_model_bytes = r.number(v, field, 1, 1ull << 40);
    else
      l.shutdown_grace_ms = static_cast<uint32_t>(r.number(v, field, 0, 3600u * 1000));
  });
}

ModelSpec read_model(const Reader& r, const YAML::Node& node) {
  ModelSpec m;
  const std::set<std::string> keys = {"name", "path", "device", "policy", "config", "shapes", "parallel", "queue"};
  r.each(node, "a model", keys, [&](const std::string& key, const YAML::Node& v) {
    if (key == "name") {
      m.name = r.text(v, "name");
      if (!valid_model_name(m.name)) r.fail_at(v, "model name '" + m.name + "' must be 1-128 of A-Z a-z 0-9 . _ -");
    } else if (key == "path") {
      m.path = r.path(v, "path");
    } else if (key == "device") {
      m.device = r.text(v, "device");
    } else if (key == "policy") {
      m.policy = r.path(v, "policy");
    } else if (key == "config") {
      m.config = r.string_map(v, "config");
    } else if (key == "shapes") {
      r.expect_map(v, "shapes");
      for (const auto& kv : v) {
        const std::string input = r.text(kv.first, "shapes");
        if (!kv.second.IsSequence()) r.fail_at(kv.second, "shape of '" + input + "' must be a list of dims");
        std::vector<int64_t> dims;
        for (const YAML::Node& d : kv.second) dims.push_back(static_cast<int64_t>(r.number(d, "shapes." + input, 0, INT32_MAX)));
        m.shapes[input] = dims;
      }
    } else if (key == "parallel") {
      m.parallel = static_cast<uint32_t>(r.number(v, "parallel", 1, 64));
    } else {
      m.queue = static_cast<uint32_t>(r.number(v, "queue", 0, 1u << 16));
    }
  });
  if (m.name.empty()) r.fail_at(node, "model has no 'name'");
  if (m.path.empty()) r.fail_at(node, "model '" + m.name + "' has no 'path'");
  return m;
}

}  // namespace

bool ModelSpec::same_model(const ModelSpec& o) const {
  return name == o.name && path == o.path && device == o.device && policy == o.policy && config == o.config &&
         shapes == o.shapes && parallel == o.parallel && queue == o.queue;
}

bool valid_model_name(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  for (char ch : name)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-')) return false;
  return true;
}

Config read_config(const std::string& path) {
  Reader r{path, fs::absolute(path).parent_path()};
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    fail(HETERO_NOT_FOUND, path + ": cannot open the config file");
  } catch (const YAML::ParserException& e) {
    fail(HETERO_INVALID_ARGUMENT, path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  Config c;
  c.file = path;
  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  const std::set<std::string> keys = {"socket", "access", "driver_path", "driver_config", "cache_dir",
                                      "cache_max_mb", "model_dirs", "limits", "models"};
  r.each(root, "the config", keys, [&](const std::string& key, const YAML::Node& v) {
    if (key == "socket") {
      read_socket(r, v, c);
    } else if (key == "access") {
      read_access(r, v, c);
    } else if (key == "driver_path") {
      for (const std::string& dir : r.strings(v, "driver_path")) {
        if (!c.driver_path.empty()) c.driver_path += ':';
        c.driver_path += (r.dir / dir).lexically_normal().string();
      }
    } else if (key == "driver_config") {
      c.driver_config = r.string_map(v, "driver_config");
    } else if (key == "cache_dir") {
      c.cache_dir = r.path(v, "cache_dir");
    } else if (key == "cache_max_mb") {
      c.cache_max_mb = r.number(v, "cache_max_mb", 1, 1ull << 30);
    } else if (key == "model_dirs") {
      for (const std::string& dir : r.strings(v, "model_dirs")) c.model_dirs.push_back((r.dir / dir).lexically_normal().string());
    } else if (key == "limits") {
      read_limits(r, v, c.limits);
    } else {
      if (!v.IsSequence()) r.fail_at(v, "'models' must be a list");
      std::set<std::string> names;
      for (const YAML::Node& m : v) {
        c.models.push_back(read_model(r, m));
        if (!names.insert(c.models.back().name).second) r.fail_at(m, "model '" + c.models.back().name + "' is listed twice");
      }
    }
  });
  if (c.socket_path.empty()) {
    const std::string run = env_dir("RUNTIME_DIRECTORY");
    c.socket_path = (run.empty() ? std::string("/run/heterod") : run) + "/heterod.sock";
  }
  if (c.socket_path.size() >= sizeof(sockaddr_un{}.sun_path))
    fail(HETERO_INVALID_ARGUMENT, path + ": socket.path '" + c.socket_path + "' is longer than a Unix socket path may be");
  if (c.cache_dir.empty()) c.cache_dir = env_dir("CACHE_DIRECTORY");
  return c;
}

}  // namespace hetero::daemon
