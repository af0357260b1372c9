// What makes a model a client's: the limits it is loaded under, whichever
// front end loads it (ModelRegistry::admit_client_model), and the memory its
// inferences are charged to (ModelRegistry::charge_to_owner).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/priority.h"
#include "daemon/model_registry.h"

namespace hetero::daemon {

namespace {

std::string client_name(int64_t client) {
  return client == kOwnedByTcpClients ? std::string("the TCP clients") : "uid " + std::to_string(client);
}

}  // namespace

hetero_status ModelRegistry::admit_client_model(ModelSpec& spec, int64_t client, uint64_t upload_bytes,
                                                std::string& why) const {
  // What one client may make the daemon hold: a number of models at once
  // (each is also bounded by limits.max_model_bytes)...
  const auto others = [&](const auto& m) { return m.second.spec.client_uid == client && m.first != spec.name; };
  const auto held = std::count_if(models_.begin(), models_.end(), others);
  if (static_cast<uint64_t>(held) >= config_.limits.max_models_per_client) {
    why = client_name(client) + " has " + std::to_string(held) +
          " models loaded (limits.max_models_per_client); unload one first";
    return HETERO_BUSY;
  }
  spec.client_uid = client;
  spec.owner = client;
  spec.max_compile_ms = config_.limits.max_compile_ms;
  // A client's model runs at most at limits.max_client_priority (background
  // by default), whatever it asks for: the models the box's owner put in the
  // config then go first at every node boundary, so an upload that computes
  // forever, or a flood of requests to one, delays them by about one node.
  const core::Priority cap = config_.limits.max_client_priority;
  bool bare_priority = false;
  for (auto& [key, value] : spec.config) {
    if (!core::is_scheduling_key(key)) continue;
    core::Priority asked{};
    if (!core::parse_priority(value, asked)) {
      why = "model '" + spec.name + "': config '" + key + "' must be realtime, normal or background";
      return HETERO_INVALID_ARGUMENT;
    }
    if (asked > cap) value = core::priority_name(cap);
    bare_priority = bare_priority || key == "priority";
  }
  if (!bare_priority && cap < core::Priority::Normal) spec.priority = core::priority_name(cap);
  // ...and one inference of it holds at most limits.max_client_inference_mb
  // for its values (a 125-byte Expand would otherwise take gigabytes, and
  // keep them between inferences). The CPU driver enforces it; other
  // drivers have no such bound yet (docs/limits.md).
  if (spec.device.empty() || spec.device.rfind("CPU", 0) == 0) {
    const uint32_t most = config_.limits.max_client_inference_mb;
    std::string& asked = spec.config["max_inference_mb"];
    const unsigned long long value = std::strtoull(asked.c_str(), nullptr, 10);
    if (asked.empty() || value == 0 || value > most) asked = std::to_string(most);
  }
  if (spec.config.count("policy")) {
    why = "model '" + spec.name + "': a policy file can only be named in the daemon's config";
    return HETERO_INVALID_ARGUMENT;
  }
  // A pipeline holds an infer request of each of its models, each bounded as
  // a model is: a client's pipeline of many stages would hold many times what
  // it is charged. The box's owner serves pipelines from the config.
  hetero_model_format format = HETERO_MODEL_FORMAT_ONNX;
  if (!spec.path.empty() && hetero_model_file_format(&format, spec.path.c_str()) == HETERO_OK &&
      format == HETERO_MODEL_FORMAT_PIPELINE) {
    why = "model '" + spec.name + "': " + spec.path + " is a pipeline, which only the daemon's config serves";
    return HETERO_PERMISSION_DENIED;
  }
  // ...and their bytes together: the file's size for a path, as the model's
  // weights take about that much once compiled.
  if (!spec.path.empty()) {
    std::error_code ec;
    spec.client_bytes = std::filesystem::file_size(spec.path, ec);
    if (ec) spec.client_bytes = 0;  // the load names what is wrong with the file
  } else {
    spec.client_bytes = upload_bytes;
  }
  uint64_t held_bytes = 0;
  for (const auto& entry : models_)
    if (others(entry)) held_bytes += entry.second.spec.client_bytes;
  if (held_bytes + spec.client_bytes > config_.limits.max_model_bytes_per_client) {
    why = "model '" + spec.name + "' (" + std::to_string(spec.client_bytes) + " bytes) would take " +
          client_name(client) + " past limits.max_model_bytes_per_client (" +
          std::to_string(config_.limits.max_model_bytes_per_client) + " bytes; " + std::to_string(held_bytes) +
          " loaded); unload one first";
    return HETERO_BUSY;
  }
  return HETERO_OK;
}

void ModelRegistry::charge_to_owner(ServedModel& model, const ModelSpec& spec) {
  if (spec.owner == kOwnedByConfig) return;
  std::erase_if(client_memory_, [](const auto& entry) { return entry.second.expired(); });
  std::shared_ptr<ClientMemory> account = client_memory_[spec.owner].lock();
  if (!account) {
    account = std::make_shared<ClientMemory>(uint64_t{config_.limits.max_client_memory_mb} << 20, threads_.loop);
    client_memory_[spec.owner] = account;
  }
  // Each request, at the bound one inference of it has: its max_inference_mb
  // where it has one below the client's (a CPU model), else the client's.
  uint64_t mb = config_.limits.max_client_inference_mb;
  if (const auto it = spec.config.find("max_inference_mb"); it != spec.config.end()) {
    const unsigned long long asked = std::strtoull(it->second.c_str(), nullptr, 10);
    if (asked > 0 && asked < mb) mb = asked;
  }
  model.charge_to(std::move(account), mb << 20);
}

}  // namespace hetero::daemon
