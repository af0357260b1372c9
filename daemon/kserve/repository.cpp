#include "daemon/kserve/repository.h"

#include <dirent.h>

#include <algorithm>
#include <memory>

#include "daemon/model_registry.h"

namespace hetero::daemon::kserve {

namespace {

// The model files in `dir`: name -> path, a blob before an ONNX file of
// the same name (a fleet ships blobs compiled once, next to their source).
std::map<std::string, std::string> model_files(const std::string& dir) {
  std::map<std::string, std::string> files;
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), &::closedir);
  if (!d) return files;
  size_t seen = 0;
  while (const dirent* e = ::readdir(d.get())) {
    if (++seen > kMaxIndexedFiles) break;
    if (e->d_type != DT_REG && e->d_type != DT_LNK && e->d_type != DT_UNKNOWN) continue;
    const std::string file = e->d_name;
    for (const char* extension : {".blob", ".onnx"}) {
      const std::string ext = extension;
      if (file.size() <= ext.size() || file.compare(file.size() - ext.size(), ext.size(), ext) != 0) continue;
      const std::string name = file.substr(0, file.size() - ext.size());
      if (!valid_model_name(name)) continue;
      auto [it, added] = files.emplace(name, dir + "/" + file);
      if (!added && ext == ".blob") it->second = dir + "/" + file;
    }
  }
  return files;
}

// Whether `dir` is in the repository a request names ("": all of them).
bool in_repository(const std::string& dir, const std::string& repository) {
  return repository.empty() || repository == dir;
}

}  // namespace

bool known_repository(const Config& config, const std::string& repository) {
  return repository.empty() ||
         std::find(config.model_dirs.begin(), config.model_dirs.end(), repository) != config.model_dirs.end();
}

std::vector<IndexEntry> repository_index(const ModelRegistry& registry, const std::string& repository, bool ready_only) {
  std::map<std::string, IndexEntry> index;
  if (repository.empty()) {
    for (const auto& [name, entry] : registry.models()) {
      IndexEntry& e = index[name];
      e.name = name;
      if (entry.state == ModelState::Ready) {
        e.state = "READY";
      } else if (entry.state == ModelState::Loading) {
        e.state = "LOADING";
      } else {
        e.state = "UNAVAILABLE";
        e.reason = entry.error;
      }
    }
    for (const ModelSpec& spec : registry.config().models)
      if (!index.count(spec.name)) index[spec.name] = {spec.name, "UNAVAILABLE", "unloaded"};
  }
  for (const std::string& dir : registry.config().model_dirs) {
    if (!in_repository(dir, repository)) continue;
    for (const auto& [name, path] : model_files(dir)) {
      if (index.count(name)) continue;
      const auto loaded = registry.models().find(name);
      if (loaded != registry.models().end())
        index[name] = {name, loaded->second.state == ModelState::Ready ? "READY" : "UNAVAILABLE", ""};
      else
        index[name] = {name, "UNAVAILABLE", "unloaded"};
    }
  }
  std::vector<IndexEntry> out;
  for (auto& [name, entry] : index)
    if (!ready_only || entry.state == "READY") out.push_back(std::move(entry));
  return out;
}

hetero_status resolve_load(const ModelRegistry& registry, const inference::RepositoryModelLoadRequest& request,
                           int64_t requester, LoadTarget& target, std::string& why) {
  const std::string& name = request.model_name();
  if (!valid_model_name(name)) {
    why = "model name '" + name + "' must be 1-128 of A-Z a-z 0-9 . _ -";
    return HETERO_INVALID_ARGUMENT;
  }
  const Config& config = registry.config();
  const std::string& repository = request.repository_name();
  if (!known_repository(config, repository)) {
    why = "repository '" + repository + "' is not one of the config's model_dirs";
    return HETERO_NOT_FOUND;
  }
  const auto loaded = registry.models().find(name);
  const auto configured = std::find_if(config.models.begin(), config.models.end(),
                                       [&](const ModelSpec& spec) { return spec.name == name; });
  if (loaded != registry.models().end()) {
    if (loaded->second.state == ModelState::Loading) {
      why = "model '" + name + "' is loading already";
      return HETERO_BUSY;
    }
    if (loaded->second.model)
      if (const hetero_status status = registry.check_owner(loaded->second, requester, "replace", why);
          status != HETERO_OK)
        return status;
    if (loaded->second.spec.path.empty()) {
      why = "model '" + name + "' was uploaded through the native protocol: there is no file to reload it from";
      return HETERO_INVALID_ARGUMENT;
    }
    target = {loaded->second.spec, loaded->second.from_config};
  } else if (configured != config.models.end()) {
    target = {*configured, true};
  } else {
    std::string path;
    for (const std::string& dir : config.model_dirs) {
      if (!in_repository(dir, repository)) continue;
      const auto files = model_files(dir);
      if (auto it = files.find(name); it != files.end()) {
        path = it->second;
        break;
      }
    }
    if (path.empty()) {
      why = "model '" + name + "' is neither loaded, in the config, nor a file " + name + ".blob or " + name +
            ".onnx under the config's model_dirs";
      return HETERO_NOT_FOUND;
    }
    target = {};
    target.spec.name = name;
    target.spec.owner = requester;
    // A symbolic link out of model_dirs is refused as the native load refuses it.
    if (const hetero_status status = registry.check_model_path(name, path, target.spec.path, why); status != HETERO_OK)
      return status;
  }
  for (const auto& [key, value] : request.parameters()) {
    if (target.from_config && (key == "device" || key == "parallel")) {
      why = "model '" + name + "': its " + key + " is set in " + config.file;
      return HETERO_INVALID_ARGUMENT;
    }
    if (key == "device" && value.parameter_choice_case() == inference::ModelRepositoryParameter::kStringParam) {
      target.spec.device = value.string_param();
    } else if (key == "parallel" && value.parameter_choice_case() == inference::ModelRepositoryParameter::kInt64Param &&
               value.int64_param() >= 1 && value.int64_param() <= 64) {
      target.spec.parallel = static_cast<uint32_t>(value.int64_param());
    } else {
      why = "model '" + name + "': parameter '" + key +
            "' is not one heterod takes (device: a string; parallel: an int64 from 1 to 64)";
      return HETERO_INVALID_ARGUMENT;
    }
  }
  // A client's model is loaded under a client's limits, as the native
  // protocol's LoadModel is; one it replaces stays its owner's.
  if (!target.from_config)
    return registry.admit_client_model(target.spec, loaded != registry.models().end() ? target.spec.owner : requester, 0,
                                     why);
  return HETERO_OK;
}

}  // namespace hetero::daemon::kserve
