#include "daemon/model_registry.h"

#include <sys/resource.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "core/log.h"
#include "core/progress.h"
#include "daemon/peer_credentials.h"

namespace hetero::daemon {

namespace {

bool under(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/';
}

std::string real_path(const std::string& path) {
  char buffer[PATH_MAX];
  return ::realpath(path.c_str(), buffer) ? std::string(buffer) : std::string();
}

std::string ms_since(std::chrono::steady_clock::time_point start) {
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", ms);
  return text;
}

}  // namespace

ModelRegistry::ModelRegistry(const Config& config, hetero_core_t* core, ServedModel::Threads threads,
                             std::function<void()> trim_heap, std::function<void()> answered)
    : config_(config),
      core_(core),
      threads_(std::move(threads)),
      trim_heap_(std::move(trim_heap)),
      answered_(std::move(answered)),
      sequences_(config_.limits),
      loader_(std::make_unique<core::WorkerThread>()) {}

ModelRegistry::~ModelRegistry() = default;

std::vector<std::shared_ptr<ServedModel>> ModelRegistry::serving() const {
  std::vector<std::shared_ptr<ServedModel>> out;
  for (const auto& [name, entry] : models_)
    if (entry.model) out.push_back(entry.model);
  return out;
}

bool ModelRegistry::healthy() const {
  if (stopping_) return false;
  for (const auto& [name, entry] : models_)
    if (entry.from_config && entry.state != ModelState::Ready) return false;
  return true;
}

size_t ModelRegistry::count(ModelState state) const {
  size_t n = 0;
  for (const auto& [name, entry] : models_) n += entry.state == state;
  return n;
}

std::shared_ptr<ServedModel> ModelRegistry::ready_model(const std::string& name, hetero_status& status,
                                                        std::string& why) const {
  auto it = models_.find(name);
  if (it == models_.end()) {
    status = HETERO_NOT_FOUND;
    why = "model '" + name + "' is not loaded";
    return nullptr;
  }
  if (!it->second.model) {
    const bool loading = it->second.state == ModelState::Loading;
    status = loading ? HETERO_BUSY : HETERO_NOT_FOUND;
    why = "model '" + name + "' is " + (loading ? "still loading" : "failed: " + it->second.error);
  }
  return it->second.model;
}

hetero_status ModelRegistry::check_model_path(const std::string& model, const std::string& path, std::string& real,
                                              std::string& why) const {
  real = real_path(path);
  if (real.empty()) {
    why = "model '" + model + "': " + path + " does not exist";
    return HETERO_NOT_FOUND;
  }
  for (const std::string& dir : config_.model_dirs)
    if (under(real, real_path(dir))) return HETERO_OK;
  why = "model '" + model + "': " + path + " is outside the config's model_dirs";
  return HETERO_PERMISSION_DENIED;
}

hetero_status ModelRegistry::check_owner(const ModelEntry& entry, int64_t requester, const std::string& action,
                                         std::string& why) const {
  const ModelSpec& spec = entry.spec;
  const std::string model = "model '" + spec.name + "'";
  if (entry.from_config || spec.owner == kOwnedByConfig) {
    why = model + " is served from " + config_.file +
          (spec.line ? " (line " + std::to_string(spec.line) + ")" : std::string()) + ": no client may " + action +
          " it; remove it there and reload the daemon";
    return HETERO_PERMISSION_DENIED;
  }
  if (requester == spec.owner || (requester >= 0 && is_admin(static_cast<uid_t>(requester)))) return HETERO_OK;
  why = model + " was loaded by " +
        (spec.owner == kOwnedByTcpClients ? std::string("a v2 client over TCP") : "uid " + std::to_string(spec.owner)) +
        "; only it, root or the daemon's user may " + action + " it";
  return HETERO_PERMISSION_DENIED;
}

LoadResult ModelRegistry::load(const ModelSpec& spec, std::span<const uint8_t> bytes) const {
  LoadResult result{spec, nullptr, {}};
  const auto start = std::chrono::steady_clock::now();
  // A client's upload may be built to compile for ever within every size
  // limit: the compile checks this deadline between units of work (a
  // node's kernels, a tuning candidate) and stops with TIMEOUT.
  // (The limit comes in the spec: this runs on a loader thread, and the
  // config may be replaced meanwhile.)
  core::ProgressSink deadline(nullptr);
  if (spec.max_compile_ms > 0)
    deadline.set_deadline(start + std::chrono::milliseconds(spec.max_compile_ms),
                          "model '" + spec.name + "': compiling took longer than limits.max_compile_ms (" +
                              std::to_string(spec.max_compile_ms) + " ms)");
  core::ProgressScope scope(&deadline);
  try {
    result.model = spec.path.empty() ? ServedModel::load_bytes(core_, spec, bytes, threads_)
                                     : ServedModel::load(core_, spec, threads_);
    core::log(core::LogLevel::Info, "model '" + spec.name + "' ready on " + spec.device + " in " + ms_since(start));
  } catch (const Failure& e) {
    result.error = e.what();
    result.status = e.status();
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  if (!result.model) core::log(core::LogLevel::Error, result.error);
  return result;
}

void ModelRegistry::expire_sequences(Clock::time_point now) {
  sequences_.expire(now, [this](const std::string& name) -> const ServedModel* {
    const auto it = models_.find(name);
    return it == models_.end() ? nullptr : it->second.model.get();
  });
}

void ModelRegistry::load_configured_models() {
  for (const ModelSpec& spec : config_.models) {
    LoadResult r = load(spec);
    ModelEntry& entry = models_[spec.name];
    entry.spec = spec;
    entry.from_config = true;
    entry.model = r.model;
    entry.state = r.model ? ModelState::Ready : ModelState::Failed;
    entry.error = r.error;
  }
}

void ModelRegistry::load_model(const ModelSpec& spec, bool from_config, LoadDone done) {
  start_load(spec, from_config, [this, spec] { return load(spec); }, std::move(done));
}

void ModelRegistry::start_load(const ModelSpec& spec, bool from_config, std::function<LoadResult()> compile,
                               LoadDone done) {
  const uint64_t ticket = ++load_tickets_;
  ModelEntry& entry = models_[spec.name];
  if (!entry.model) entry = ModelEntry{spec, from_config, ModelState::Loading, {}, nullptr, 0};
  entry.load_ticket = ticket;
  core::WorkerThread* loader = loader_.get();
  const int64_t uid = spec.client_uid;
  if (uid != kOwnedByConfig) {
    ClientLoader& mine = client_loaders_[uid];
    if (!mine.thread) {
      mine.thread = std::make_unique<core::WorkerThread>();
      // A client's import and graph work run at the lowest weight: on a busy
      // box they take longer, not the served models' cores (niceness is per
      // thread on Linux; raising it needs no privilege).
      mine.thread->post([] { ::setpriority(PRIO_PROCESS, 0, 19); });
    }
    ++mine.loads;
    loader = mine.thread.get();
  }
  loader->post([this, compile = std::move(compile), done = std::move(done), ticket, from_config, uid]() mutable {
    auto result = std::make_shared<LoadResult>(compile());
    threads_.loop->post([this, result, done = std::move(done), ticket, from_config, uid] {
      // The client's loader ends with its last load (joining a thread whose
      // task has only to return).
      if (auto it = client_loaders_.find(uid); it != client_loaders_.end() && --it->second.loads == 0)
        client_loaders_.erase(it);
      // What a client's import and compile freed (hundreds of MiB for a big
      // model) goes back to the system. Not on that client's loader: a trim
      // locks every arena in turn, and at niceness 19 it could hold one that
      // the loop thread waits for.
      if (uid != kOwnedByConfig) trim_heap_();
      const std::string& name = result->spec.name;
      auto it = models_.find(name);
      // Unloaded, replaced by a reload or by a later load meanwhile.
      if (it == models_.end() || it->second.load_ticket != ticket)
        return done(HETERO_NOT_FOUND, "model '" + name + "' was unloaded or replaced while loading");
      it->second.load_ticket = 0;
      if (!result->model) {
        if (!it->second.model) models_.erase(it);  // else it serves on as it was
        return done(result->status, result->error);
      }
      it->second = ModelEntry{result->spec, from_config, ModelState::Ready, {}, result->model, 0};
      if (!from_config) charge_to_owner(*result->model, result->spec);
      core::log(core::LogLevel::Info, "model '" + name + "' loaded by a client");
      done(HETERO_OK, {});
    });
  });
}

hetero_status ModelRegistry::unload_model(const std::string& name, int64_t requester, std::string& why) {
  auto it = models_.find(name);
  if (it == models_.end()) {
    why = "model '" + name + "' is not loaded";
    return HETERO_NOT_FOUND;
  }
  if (const hetero_status status = check_owner(it->second, requester, "unload", why); status != HETERO_OK)
    return status;
  // Requests already queued or running are answered CANCELLED, the running
  // ones at their next node boundary: they hold the model until then.
  if (it->second.model) it->second.model->cancel_all("model '" + name + "' was unloaded");
  models_.erase(it);
  core::log(core::LogLevel::Info, "model '" + name + "' unloaded by a client");
  // Its memory (freed now, or when its last running job ends) goes back to
  // the system.
  trim_heap_();
  return HETERO_OK;
}

void ModelRegistry::reload(const Config& next, std::function<void(ReloadCounts)> done) {
  std::vector<ModelSpec> to_load;
  std::vector<std::string> removed;
  std::set<std::string> wanted;
  for (const ModelSpec& spec : next.models) {
    wanted.insert(spec.name);
    auto it = models_.find(spec.name);
    if (it == models_.end()) {
      models_[spec.name] = ModelEntry{spec, true, ModelState::Loading, {}, nullptr};
      to_load.push_back(spec);
    } else if (!it->second.model || !spec.same_model(it->second.spec) || it->second.model->file_changed()) {
      to_load.push_back(spec);
    }
  }
  for (const auto& [name, entry] : models_)
    if (entry.from_config && !wanted.count(name)) removed.push_back(name);
  loader_->post([this, to_load = std::move(to_load), removed = std::move(removed), done = std::move(done)]() mutable {
    auto results = std::make_shared<std::vector<LoadResult>>();
    for (const ModelSpec& spec : to_load) results->push_back(load(spec));
    threads_.loop->post([this, results, removed, done = std::move(done)] {
      done(apply_reload(std::move(*results), removed));
    });
  });
}

ReloadCounts ModelRegistry::apply_reload(std::vector<LoadResult> results, const std::vector<std::string>& removed) {
  ReloadCounts counts;
  for (LoadResult& r : results) {
    ModelEntry& entry = models_[r.spec.name];
    const bool existed = entry.model != nullptr;
    if (r.model) {
      // In-flight requests keep the old model alive until they are answered.
      entry = ModelEntry{r.spec, true, ModelState::Ready, {}, std::move(r.model)};
      ++(existed ? counts.changed : counts.added);
    } else if (existed) {
      core::log(core::LogLevel::Warning, "reload: keeping the running version of model '" + r.spec.name + "'");
      ++counts.failed;
    } else {
      entry = ModelEntry{r.spec, true, ModelState::Failed, r.error, nullptr};
      ++counts.failed;
    }
  }
  for (const std::string& name : removed) {
    models_.erase(name);
    ++counts.removed;
  }
  return counts;
}

void ModelRegistry::stop_and_wait() {
  for (auto& [name, entry] : models_)
    if (entry.model) entry.model->cancel_all("heterod is stopping");
  loader_.reset();
  client_loaders_.clear();
  for (auto& [name, entry] : models_)
    if (entry.model) entry.model->wait_idle();
}

}  // namespace hetero::daemon
