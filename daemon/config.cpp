#include "daemon/config.h"

#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include "core/blob_container.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/regular_file.h"
#include "daemon/log_sink.h"
#include "partition/policy.h"
#include "partition/strict_yaml.h"

namespace hetero::daemon {

namespace {

namespace fs = std::filesystem;

// A config is a page or two; a larger file at its path is not one.
constexpr uint64_t kMaxConfigBytes = uint64_t{16} << 20;

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

  double real(const YAML::Node& node, const std::string& field) const {
    const std::string s = node.IsScalar() ? node.Scalar() : std::string();
    double value = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(value))
      fail_at(node, "'" + field + "' must be a number");
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

mode_t socket_mode(const Reader& r, const YAML::Node& node, const std::string& field) {
  const std::string s = r.text(node, field);
  unsigned mode = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), mode, 8);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || mode > 0777)
    r.fail_at(node, "'" + field + "' must be octal permissions such as \"0660\"");
  return static_cast<mode_t>(mode);
}

void check_socket_path(const Reader& r, const YAML::Node& node, const std::string& field, const std::string& path) {
  if (path.size() >= sizeof(sockaddr_un{}.sun_path))
    r.fail_at(node, "'" + field + "' '" + path + "' is longer than a Unix socket path may be");
}

void read_socket(const Reader& r, const YAML::Node& node, Config& c) {
  r.each(node, "socket", {"path", "mode", "group"}, [&](const std::string& key, const YAML::Node& v) {
    if (key == "path") {
      c.socket_path = r.path(v, "socket.path");
    } else if (key == "mode") {
      c.socket_mode = socket_mode(r, v, "socket.mode");
    } else {
      c.socket_group = r.text(v, "socket.group");
    }
  });
}

// A PEM file the daemon will read at start: a regular file it can open now,
// so that --check catches a wrong path (opened as the daemon will read it,
// core/regular_file.h: a FIFO there is refused, not waited on).
std::string pem_file(const Reader& r, const YAML::Node& node, const std::string& field) {
  const std::string p = r.path(node, field);
  try {
    core::RegularFile file(p);
  } catch (const Failure& e) {
    r.fail_at(node, "'" + field + "' is not a readable file: " + e.what());
  }
  return p;
}

void read_kserve(const Reader& r, const YAML::Node& node, KServeConfig& k) {
  const std::set<std::string> keys = {"socket",  "mode",          "group",   "tcp", "tls_cert", "tls_key", "tls_client_ca",
                                      "allow_insecure_tcp", "max_message_bytes", "idle_timeout_ms"};
  r.each(node, "kserve", keys, [&](const std::string& key, const YAML::Node& v) {
    const std::string field = "kserve." + key;
    if (key == "socket") {
      k.socket_path = r.path(v, field);
      check_socket_path(r, v, field, k.socket_path);
    } else if (key == "mode") {
      k.socket_mode = socket_mode(r, v, field);
    } else if (key == "group") {
      k.socket_group = r.text(v, field);
    } else if (key == "tcp") {
      k.tcp_address = r.text(v, field);
      const size_t colon = k.tcp_address.rfind(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == k.tcp_address.size())
        r.fail_at(v, "'" + field + "' must be HOST:PORT, such as 127.0.0.1:8001");
    } else if (key == "tls_cert") {
      k.tls_cert = pem_file(r, v, field);
    } else if (key == "tls_key") {
      k.tls_key = pem_file(r, v, field);
    } else if (key == "tls_client_ca") {
      k.tls_client_ca = pem_file(r, v, field);
    } else if (key == "allow_insecure_tcp") {
      const std::string b = r.text(v, field);
      if (b != "true" && b != "false") r.fail_at(v, "'" + field + "' must be true or false");
      k.allow_insecure_tcp = b == "true";
    } else if (key == "max_message_bytes") {
      k.max_message_bytes = static_cast<uint32_t>(r.number(v, field, 4096, 1u << 30));
    } else {
      k.idle_timeout_ms = static_cast<uint32_t>(r.number(v, field, 100, 24u * 3600 * 1000));
    }
  });
  if (k.tls_cert.empty() != k.tls_key.empty())
    r.fail_at(node, "'kserve.tls_cert' and 'kserve.tls_key' go together");
  if (!k.tls_client_ca.empty() && k.tls_cert.empty())
    r.fail_at(node, "'kserve.tls_client_ca' needs kserve.tls_cert and kserve.tls_key");
  if (!k.tls_cert.empty() && k.tcp_address.empty())
    r.fail_at(node, "'kserve.tls_cert' is for kserve.tcp, which is not set (the Unix socket needs no TLS)");
  if (!k.tcp_address.empty() && k.tls_cert.empty() && !k.allow_insecure_tcp)
    r.fail_at(node, "'kserve.tcp' without TLS would let anyone on the network run models: set kserve.tls_cert and "
                    "kserve.tls_key, or allow_insecure_tcp: true");
#if !HETEROD_KSERVE
  if (k.enabled()) r.fail_at(node, "'kserve': this heterod was built without gRPC (meson -Dkserve=enabled)");
#endif
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
  const std::set<std::string> keys = {"max_frame_bytes",      "max_connections",  "max_in_flight_per_client",
                                      "request_timeout_ms",   "max_model_bytes",  "shutdown_grace_ms",
                                      "handshake_timeout_ms", "frame_timeout_ms", "idle_timeout_ms",
                                      "max_models_per_client", "max_frame_bytes_in_flight",
                                      "max_model_bytes_per_client", "max_client_priority",
                                      "max_reply_bytes_queued", "max_compile_ms", "max_connections_per_uid",
                                      "max_client_inference_mb", "max_client_memory_mb",
                                      "max_sequences_per_client", "max_sequence_state_mb", "sequence_idle_ms"};
  r.each(node, "limits", keys, [&](const std::string& key, const YAML::Node& v) {
    const std::string field = "limits." + key;
    if (key == "max_frame_bytes")
      l.max_frame_bytes = static_cast<uint32_t>(r.number(v, field, 4096, 1u << 30));
    else if (key == "max_frame_bytes_in_flight")
      l.max_frame_bytes_in_flight = r.number(v, field, 4096, 1ull << 40);
    else if (key == "max_compile_ms")
      l.max_compile_ms = static_cast<uint32_t>(r.number(v, field, 0, 24u * 3600 * 1000));
    else if (key == "max_reply_bytes_queued")
      l.max_reply_bytes_queued = r.number(v, field, 4096, 1ull << 40);
    else if (key == "max_connections")
      l.max_connections = static_cast<uint32_t>(r.number(v, field, 1, 1u << 20));
    else if (key == "max_client_inference_mb")
      l.max_client_inference_mb = static_cast<uint32_t>(r.number(v, field, 1, 1u << 20));
    else if (key == "max_client_memory_mb")
      l.max_client_memory_mb = static_cast<uint32_t>(r.number(v, field, 1, 1u << 20));
    else if (key == "max_sequences_per_client")
      l.max_sequences_per_client = static_cast<uint32_t>(r.number(v, field, 0, 1u << 20));
    else if (key == "max_sequence_state_mb")
      l.max_sequence_state_mb = static_cast<uint32_t>(r.number(v, field, 1, 1u << 20));
    else if (key == "sequence_idle_ms")
      l.sequence_idle_ms = static_cast<uint32_t>(r.number(v, field, 100, 24u * 3600 * 1000));
    else if (key == "max_connections_per_uid")
      l.max_connections_per_uid = static_cast<uint32_t>(r.number(v, field, 1, 1u << 20));
    else if (key == "max_in_flight_per_client")
      l.max_in_flight_per_client = static_cast<uint32_t>(r.number(v, field, 1, 1u << 16));
    else if (key == "request_timeout_ms")
      l.request_timeout_ms = static_cast<uint32_t>(r.number(v, field, 1, 24u * 3600 * 1000));
    else if (key == "max_model_bytes")
      l.max_model_bytes = r.number(v, field, 1, 1ull << 40);
    else if (key == "handshake_timeout_ms")
      l.handshake_timeout_ms = static_cast<uint32_t>(r.number(v, field, 10, 3600u * 1000));
    else if (key == "frame_timeout_ms")
      l.frame_timeout_ms = static_cast<uint32_t>(r.number(v, field, 10, 3600u * 1000));
    else if (key == "max_model_bytes_per_client")
      l.max_model_bytes_per_client = r.number(v, field, 1, 1ull << 40);
    else if (key == "max_models_per_client")
      l.max_models_per_client = static_cast<uint32_t>(r.number(v, field, 0, 4096));
    else if (key == "max_client_priority") {
      if (!core::parse_priority(r.text(v, field), l.max_client_priority))
        r.fail_at(v, "'" + field + "' must be realtime, normal or background");
    } else if (key == "idle_timeout_ms")
      l.idle_timeout_ms = static_cast<uint32_t>(r.number(v, field, 0, 7u * 24 * 3600 * 1000));
    else
      l.shutdown_grace_ms = static_cast<uint32_t>(r.number(v, field, 0, 3600u * 1000));
  });
  // One frame of the largest size must fit, or a client sending one would
  // wait for room that never comes.
  if (l.max_frame_bytes_in_flight < l.max_frame_bytes)
    r.fail_at(node, "limits.max_frame_bytes_in_flight (" + std::to_string(l.max_frame_bytes_in_flight) +
                                  ") must be at least limits.max_frame_bytes (" + std::to_string(l.max_frame_bytes) +
                                  ")");
}

ModelSpec read_model(const Reader& r, const YAML::Node& node) {
  ModelSpec m;
  m.line = node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
  const std::set<std::string> keys = {"name",   "path",     "device",   "policy",           "config", "shapes",
                                      "parallel", "queue", "priority", "max_inference_ms", "state",  "defaults"};
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
    } else if (key == "priority") {
      m.priority = r.text(v, "priority");
      if (m.priority != "realtime" && m.priority != "normal" && m.priority != "background")
        r.fail_at(v, "priority '" + m.priority + "' must be realtime, normal or background");
    } else if (key == "state") {
      m.state = r.string_map(v, "state");
      m.state_set = true;
    } else if (key == "defaults") {
      r.expect_map(v, "defaults");
      for (const auto& kv : v) {
        const std::string input = r.text(kv.first, "defaults");
        const std::string field = "defaults." + input;
        ModelSpec::InputValue& value = m.defaults[input];
        value.scalar = kv.second.IsScalar();
        if (!value.scalar && !kv.second.IsSequence())
          r.fail_at(kv.second, "'" + field + "' must be a number or a list of numbers");
        if (kv.second.IsSequence() && kv.second.size() > 4096)
          r.fail_at(kv.second, "'" + field + "' has more than 4096 values");
        if (value.scalar)
          value.values.push_back(r.real(kv.second, field));
        else
          for (const YAML::Node& n : kv.second) value.values.push_back(r.real(n, field));
      }
    } else if (key == "max_inference_ms") {
      m.max_inference_ms = static_cast<uint32_t>(r.number(v, "max_inference_ms", 0, 24u * 3600 * 1000));
    } else {
      m.queue = static_cast<uint32_t>(r.number(v, "queue", 0, 1u << 16));
    }
  });
  if (m.name.empty()) r.fail_at(node, "model has no 'name'");
  if (m.path.empty()) r.fail_at(node, "model '" + m.name + "' has no 'path'");
  if (!m.priority.empty() && m.config.count("priority"))
    r.fail_at(node, "model '" + m.name + "' gives its priority twice: as 'priority' and in 'config'");
  return m;
}

// Why the core could not keep its blob cache in `dir`, or "" when it can.
// core/blob_cache.cpp creates the directory (not its parents) and writes
// entries into it; this says beforehand what would go wrong, creating
// nothing, so that --check can ask it too.
std::string cache_dir_problem(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) return dir + " is " + core::file_type_name(st.st_mode) + ", not a directory";
    if (::access(dir.c_str(), W_OK | X_OK) != 0) return dir + " is not writable: " + std::strerror(errno);
    return {};
  }
  if (errno != ENOENT) return dir + ": " + std::strerror(errno);
  fs::path p(dir);
  if (!p.has_filename()) p = p.parent_path();  // "cache/"
  const std::string parent = p.parent_path().empty() ? "." : p.parent_path().string();
  if (::stat(parent.c_str(), &st) != 0)
    return dir + " does not exist and cannot be created: " + parent + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode))
    return dir + " does not exist and cannot be created: " + parent + " is " + core::file_type_name(st.st_mode) +
           ", not a directory";
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    return dir + " does not exist and cannot be created in " + parent + ": " + std::strerror(errno);
  return {};
}

// "heterod.yaml:12: " for a line, "heterod.yaml: " without one.
std::string where(const Config& c, int line) {
  // (Appended piece by piece: GCC 12 warns, wrongly, on ":" + std::string.)
  std::string out = c.file;
  if (line > 0) out.append(1, ':').append(std::to_string(line));
  return out.append(": ");
}

}  // namespace

std::string model_problem_prefix(const Config& c, const ModelSpec& m) {
  return where(c, m.line) + "model '" + m.name + "': ";
}

std::vector<FileProblem> check_files(const Config& c, bool thorough) {
  std::vector<FileProblem> problems;
  if (!c.cache_dir.empty()) {
    const std::string why = cache_dir_problem(c.cache_dir);
    if (!why.empty())
      problems.push_back({where(c, c.cache_dir_line) + "cache_dir" +
                              (c.cache_dir_line > 0 ? std::string() : " ($CACHE_DIRECTORY)") + ": " + why,
                          true, {}});
  }
  for (const ModelSpec& m : c.models) {
    const std::string model = model_problem_prefix(c, m);
    // Opened as the loader will open it, so a FIFO is named, not waited on;
    // whether a blob suits this box's driver is the import's to say.
    try {
      if (thorough) {
        const core::MappedBytes bytes = core::map_file(m.path);
        const std::span<const uint8_t> view(bytes.data, bytes.size);
        if (core::has_blob_magic(view)) {
          try {
            core::read_blob(view);
          } catch (const Failure& e) {
            fail(e.status(), m.path + ": " + e.what());
          }
        }
      } else {
        core::RegularFile file(m.path);
      }
    } catch (const Failure& e) {
      problems.push_back({model + e.what(), false, m.name});
    }
    if (!m.policy.empty()) {
      try {
        partition::load_policy(m.policy);
      } catch (const Failure& e) {
        problems.push_back({model + "policy " + e.what(), false, m.name});
      }
    }
  }
  return problems;
}

bool ModelSpec::same_model(const ModelSpec& o) const {
  return name == o.name && path == o.path && device == o.device && policy == o.policy && config == o.config &&
         shapes == o.shapes && parallel == o.parallel && queue == o.queue && priority == o.priority &&
         max_inference_ms == o.max_inference_ms && state == o.state && state_set == o.state_set &&
         defaults == o.defaults;
}

bool valid_model_name(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  for (char ch : name)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-')) return false;
  return true;
}

Config read_config(const std::string& path) {
  Reader r{path, fs::absolute(path).parent_path()};
  // Read as a regular file of bounded size, then parsed: a FIFO, a device or
  // a directory at the config's path (a SIGHUP after a botched deploy) fails
  // at once naming it, where YAML::LoadFile would block or read without end.
  const std::string text = core::read_regular_file(path, kMaxConfigBytes, "a config file");
  const YAML::Node root = partition::load_strict_yaml(text, path);
  // Nothing but comments, or "null": almost surely a file truncated by a
  // failed copy. Read as "all defaults" it would make a reload drop every
  // model and open the access lists; "{}" says that on purpose.
  if (root.IsNull())
    fail(HETERO_INVALID_ARGUMENT, path + ": the file is empty (it sets nothing; write {} for every default)");
  Config c;
  c.file = path;
  const std::set<std::string> keys = {"socket",     "access",     "driver_path", "driver_config", "cache_dir",
                                      "cache_max_mb", "model_dirs", "limits",      "models",        "kserve",
                                      "log_level"};
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
      c.cache_dir_line = v.Mark().line + 1;
    } else if (key == "cache_max_mb") {
      c.cache_max_mb = r.number(v, "cache_max_mb", 1, 1ull << 30);
    } else if (key == "model_dirs") {
      for (const std::string& dir : r.strings(v, "model_dirs")) c.model_dirs.push_back((r.dir / dir).lexically_normal().string());
    } else if (key == "limits") {
      read_limits(r, v, c.limits);
    } else if (key == "kserve") {
      read_kserve(r, v, c.kserve);
    } else if (key == "log_level") {
      const std::optional<core::LogLevel> level = log_level_named(r.text(v, "log_level"));
      if (!level) r.fail_at(v, std::string("'log_level' must be ") + kLogLevelNames);
      c.log_level = *level;
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
