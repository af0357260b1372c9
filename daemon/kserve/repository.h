// The model repository extension on heterod's terms. The repository is what
// a client may serve: the models the daemon holds (from its config, or
// loaded by clients), the config's models a client has unloaded, and the
// model files under the config's model_dirs, named after their file:
// DIR/NAME.blob (compiled with `hetero compile`) or DIR/NAME.onnx. Loading
// by name follows the native LoadModel's rule: nothing outside model_dirs.
// Loop thread only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/kserve/grpc_predict_v2.pb.h"
#include "hetero/hetero.h"

namespace hetero::daemon {
class ModelRegistry;
}

namespace hetero::daemon::kserve {

// Files looked at per model_dirs entry, at most: an index stays cheap
// whatever a directory holds.
inline constexpr size_t kMaxIndexedFiles = 4096;

struct IndexEntry {
  std::string name;
  std::string state;   // "READY", "LOADING", "UNAVAILABLE"
  std::string reason;  // why UNAVAILABLE
};

// Whether a request's repository_name names one: "" (all of them) or one
// of the config's model_dirs, as the config resolves it.
bool known_repository(const Config& config, const std::string& repository);

// Sorted by name. `repository` (known_repository): "" for all, or one
// directory for the model files under it.
std::vector<IndexEntry> repository_index(const ModelRegistry& registry, const std::string& repository, bool ready_only);

// What RepositoryModelLoad(name) loads: the model as it is served now (a
// reload), the config's entry for it, or NAME.blob / NAME.onnx under
// model_dirs. The parameters "device" (string) and "parallel" (int64) set
// those of a model that is not from the config. A model `requester` loads
// from model_dirs is its own; one that serves is replaced only as
// ModelRegistry::check_owner allows (a config's model that failed may be tried
// again by anyone). Fails with NOT_FOUND, INVALID_ARGUMENT,
// PERMISSION_DENIED or BUSY (already loading), and why.
struct LoadTarget {
  ModelSpec spec;
  bool from_config = false;
};
hetero_status resolve_load(const ModelRegistry& registry, const inference::RepositoryModelLoadRequest& request,
                           int64_t requester, LoadTarget& target, std::string& why);

}  // namespace hetero::daemon::kserve
