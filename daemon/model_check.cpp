#include "daemon/model_check.h"

#include <string>

#include "daemon/compile_args.h"

namespace hetero::daemon {

CorePtr create_core(const Config& c) {
  std::vector<std::string> keys, values;
  auto add = [&](const std::string& k, const std::string& v) {
    keys.push_back(k);
    values.push_back(v);
  };
  if (!c.driver_path.empty()) add("driver_path", c.driver_path);
  if (!c.cache_dir.empty()) {
    add("cache_dir", c.cache_dir);
    add("cache_max_mb", std::to_string(c.cache_max_mb));
  }
  for (const auto& [k, v] : c.driver_config) add(k, v);
  std::vector<const char*> key_ptrs, value_ptrs;
  for (size_t k = 0; k < keys.size(); ++k) {
    key_ptrs.push_back(keys[k].c_str());
    value_ptrs.push_back(values[k].c_str());
  }
  hetero_core_t* core = nullptr;
  check(hetero_core_create(&core, key_ptrs.data(), value_ptrs.data(), keys.size()), c.file + ": drivers");
  return CorePtr(core);
}

namespace {

// The library's messages name the file, input or device already.
void require(hetero_status status) {
  if (status != HETERO_OK) fail(status, hetero_last_error());
}

// Throws what the model's load would, short of compiling it.
void resolve_model(hetero_core_t* core, const ModelSpec& m) {
  hetero_model_format format = HETERO_MODEL_FORMAT_ONNX;
  require(hetero_model_file_format(&format, m.path.c_str()));
  if (format == HETERO_MODEL_FORMAT_PIPELINE) {
    // Its models are named in its file, and their ports wired there: the
    // check of a pipeline is its compile (each model through the cache).
    hetero_compiled_model_t* compiled = nullptr;
    const CompileArgs args(m);
    require(hetero_compiled_model_open_file(&compiled, core, m.path.c_str(), args.shape_names.data(),
                                            args.shape_dims.data(), args.shape_ranks.data(), args.shape_names.size(),
                                            m.device.c_str(), args.key_ptrs.data(), args.value_ptrs.data(),
                                            args.keys.size()));
    hetero_compiled_model_release(compiled);
    return;
  }
  if (format == HETERO_MODEL_FORMAT_BLOB) {
    // A HETERO blob names its devices inside; its import resolves them.
    if (m.device.rfind("HETERO", 0) == 0) return;
    char* name = nullptr;
    require(hetero_core_get_metric(core, &name, m.device.c_str(), "FULL_DEVICE_NAME"));
    hetero_free(name);
    return;
  }
  const CompileArgs args(m);
  hetero_model_t* read = nullptr;
  require(hetero_model_read_file(&read, core, m.path.c_str(), args.shape_names.data(), args.shape_dims.data(),
                                 args.shape_ranks.data(), args.shape_names.size()));
  const ModelPtr model(read);
  hetero_query_result_t* result = nullptr;
  require(hetero_query(&result, core, model.get(), m.device.c_str(), args.key_ptrs.data(), args.value_ptrs.data(),
                       args.keys.size()));
  const QueryResultPtr owned(result);
}

}  // namespace

std::vector<FileProblem> check_models(hetero_core_t* core, const Config& c, const std::set<std::string>& skip) {
  std::vector<FileProblem> problems;
  for (const ModelSpec& m : c.models) {
    if (skip.count(m.name)) continue;
    try {
      resolve_model(core, m);
    } catch (const Failure& e) {
      problems.push_back({model_problem_prefix(c, m) + e.what(), false, m.name});
    }
  }
  return problems;
}

}  // namespace hetero::daemon
