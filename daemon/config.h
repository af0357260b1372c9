// heterod's configuration file (conf/heterod.yaml documents every key). The
// whole file is checked when it is read; an error names file:line and the
// key, and a daemon reloading a bad file keeps running on the old one.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/priority.h"

namespace hetero::daemon {

// The unsent reply bytes one connection may hold, on either front end, for
// a protocol whose largest message is `max_message` bytes (native:
// limits.max_frame_bytes, v2: kserve.max_message_bytes): two of the largest
// replies, and never less than 8 MiB.
inline uint64_t connection_reply_bytes(uint64_t max_message) {
  return std::max<uint64_t>(uint64_t{8} << 20, 2 * max_message);
}

struct Limits {
  uint32_t max_frame_bytes = 16u << 20;         // one protocol frame (large tensors go as memfds)
  uint64_t max_frame_bytes_in_flight = 256u << 20;  // large frames being received, all clients together
  // Replies queued for clients that have not read them yet, all clients
  // together; one connection holds at most connection_reply_bytes().
  uint64_t max_reply_bytes_queued = 64u << 20;
  uint32_t max_connections = 256;
  // One uid's connections at once, each front end (native, v2) counted on
  // its own: one user reconnecting, or connecting and idling, cannot hold
  // every slot. Root and the daemon's user are not counted.
  uint32_t max_connections_per_uid = 64;
  uint32_t max_in_flight_per_client = 64;       // infer requests running or queued, or answers unread
  uint32_t request_timeout_ms = 30000;          // in a model's queue
  uint64_t max_model_bytes = 256ull << 20;      // LoadModel uploads
  uint32_t max_models_per_client = 16;          // loaded through LoadModel by one uid, at once
  uint32_t max_compile_ms = 60000;              // one LoadModel's import and compile (0: no limit)
  uint64_t max_model_bytes_per_client = 512ull << 20;  // their model files' bytes together
  // The highest priority a client's LoadModel may give its model: a higher
  // one asked for (or the default, normal) runs at this.
  core::Priority max_client_priority = core::Priority::Background;
  // What one inference of a client's CPU model may hold for its values (its
  // intermediates and outputs), in MiB: the CPU config max_inference_mb it
  // is compiled with, whatever the client asks for.
  uint32_t max_client_inference_mb = 256;
  // What all the models of one client (a uid; the v2 listener's TCP clients
  // together) may hold for their inferences at once, in MiB: each of their
  // infer requests is charged max_client_inference_mb (or its model's
  // smaller max_inference_mb) while it runs or keeps its buffers
  // (daemon/client_memory.h).
  uint32_t max_client_memory_mb = 512;
  uint32_t shutdown_grace_ms = 10000;           // SIGTERM: in-flight requests finish
  uint32_t handshake_timeout_ms = 5000;         // from connect to a complete Hello
  uint32_t frame_timeout_ms = 30000;            // from a frame's first byte to its last, either way
  uint32_t idle_timeout_ms = 300000;            // nothing asked or pending this long: closed (0: never)
  // Sequences of stateful models (daemon/sequences.h): how many one client
  // (a uid; the v2 listener's TCP clients together) keeps open at once, the
  // state they hold together, and how long one lives with no call.
  uint32_t max_sequences_per_client = 256;
  uint32_t max_sequence_state_mb = 64;
  uint32_t sequence_idle_ms = 60000;
};

// Who owns a model, or who asks to unload or replace one: a uid (>= 0),
// or one of these.
constexpr int64_t kOwnedByConfig = -1;      // the config's: only a reload unloads it
constexpr int64_t kOwnedByTcpClients = -2;  // a v2 client over TCP, which has no uid
constexpr int64_t kUnknownRequester = -3;   // a request whose connection has gone: owns nothing

// One model to serve.
struct ModelSpec {
  std::string name;
  std::string path;      // absolute: an ONNX file or a compiled blob
  std::string device = "CPU";
  std::string policy;    // absolute path of a HETERO affinity policy, or empty
  std::map<std::string, std::string> config;       // compile config
  std::map<std::string, std::vector<int64_t>> shapes;  // dynamic input dims fixed
  uint32_t parallel = 1;  // infer requests
  uint32_t queue = 64;    // requests waiting for one of them; more get "busy"
  std::string priority;   // realtime, normal or background; empty: the device's default
  int line = 0;           // of its entry in the config file, for messages; 0: not from the file
  uint32_t max_inference_ms = 0;  // a running inference longer is cancelled: TIMEOUT (0: no limit)
  int64_t client_uid = -1;        // the client that loaded it (a uid, or kOwnedByTcpClients); -1: the config's
  int64_t owner = kOwnedByConfig;  // who may unload or replace it (ModelRegistry::check_owner)
  uint64_t client_bytes = 0;      // its model file's size, charged to client_uid
  uint32_t max_compile_ms = 0;    // its load's time limit, limits.max_compile_ms for a client's (0: none)
  // Its state pairs, output -> input, fed back by a sequence
  // (daemon/sequences.h). Unset (state_set false): detected from the names.
  std::map<std::string, std::string> state;
  bool state_set = false;
  // Inputs the config gives a value, which a call may then leave out (a
  // stream's constants: Silero VAD's sample rate `sr`): a number, or a list
  // of numbers for an input of one dim.
  struct InputValue {
    std::vector<double> values;
    bool scalar = true;
    bool operator==(const InputValue&) const = default;
  };
  std::map<std::string, InputValue> defaults;

  // Equal for specs that compile to the same model (a reload keeps it).
  bool same_model(const ModelSpec& other) const;
};

// The Open Inference Protocol (KServe v2) over gRPC (daemon/kserve/): off
// unless a socket or a TCP address is set.
struct KServeConfig {
  std::string socket_path;   // a Unix socket, access checked as the native one's
  mode_t socket_mode = 0660;
  std::string socket_group;  // empty: the daemon's own group
  std::string tcp_address;   // "127.0.0.1:8001"; TLS unless allow_insecure_tcp
  std::string tls_cert, tls_key;  // PEM files, the server's
  std::string tls_client_ca;      // PEM: clients must present a certificate it signed
  bool allow_insecure_tcp = false;
  uint32_t max_message_bytes = 64u << 20;  // one request (its tensors travel inside it)
  uint32_t idle_timeout_ms = 300000;       // a connection with no call this long is closed

  bool enabled() const { return !socket_path.empty() || !tcp_address.empty(); }
  bool operator==(const KServeConfig&) const = default;
};

struct Config {
  std::string file;  // where it was read from

  std::string socket_path;
  mode_t socket_mode = 0660;
  std::string socket_group;  // empty: the daemon's own group
  std::vector<uid_t> allowed_uids;  // both empty: whoever can open the socket
  std::vector<gid_t> allowed_gids;

  std::string driver_path;  // colon-separated, searched before the defaults
  std::map<std::string, std::string> driver_config;  // "CPU.num_threads" = "2"
  std::string cache_dir;    // empty: no cache
  int cache_dir_line = 0;   // in the file; 0: from $CACHE_DIRECTORY or unset
  uint64_t cache_max_mb = 1024;

  core::LogLevel log_level = core::LogLevel::Info;  // the least severe line logged

  std::vector<std::string> model_dirs;  // where LoadModel may read paths from
  Limits limits;
  std::vector<ModelSpec> models;
  KServeConfig kserve;
};

// Reads and checks `path`. Relative paths in it are relative to the file's
// directory. Unset socket and cache paths fall back to systemd's
// $RUNTIME_DIRECTORY and $CACHE_DIRECTORY. Fails with INVALID_ARGUMENT
// ("heterod.yaml:12: ...", "heterod.yaml: the file is empty", a file over
// 16 MiB) or NOT_FOUND / PERMISSION_DENIED / IO_ERROR for the file (a
// directory or a FIFO at `path` is refused at once: core/regular_file.h).
// The kserve PEM files are opened here already, so a wrong one is an error
// with its line.
Config read_config(const std::string& path);

// A problem with a file or directory the config names.
struct FileProblem {
  std::string message;  // "heterod.yaml:12: model 'a': /m/a.onnx: No such file or directory"
  // The daemon refuses to start over it (the cache directory). A model's
  // file or policy is not: that model fails to load, the others serve.
  bool fatal = false;
  std::string model;  // the model it is about; empty for the config's own files
};

// The files and directories `c` names, checked as the daemon will use them
// and without changing any: the cache directory (there or creatable, a
// directory, writable), each model's file (a regular file) and policy (read
// and parsed). `heterod --check` reports every problem; the daemon refuses
// to start on a fatal one. `thorough` (--check) also reads each model file
// whole and checks a compiled blob's structure and checksums, as its import
// would (at a start, the import itself does).
std::vector<FileProblem> check_files(const Config& c, bool thorough = false);

// "heterod.yaml:12: model 'det': ", what a problem with model `m` starts with.
std::string model_problem_prefix(const Config& c, const ModelSpec& m);

// A model name the protocol accepts: 1-128 of [A-Za-z0-9._-].
bool valid_model_name(const std::string& name);

}  // namespace hetero::daemon
