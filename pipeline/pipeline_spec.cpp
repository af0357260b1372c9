#include "pipeline/pipeline_spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"
#include "core/regular_file.h"
#include "partition/strict_yaml.h"

namespace hetero::pipeline {

namespace {

constexpr uint64_t kMaxPipelineFileBytes = 1u << 20;
constexpr size_t kMaxStages = 256;
// A window this long holds at most this many steps: its buffer is state a
// sequence keeps between calls.
constexpr int64_t kMaxWindowSteps = int64_t{1} << 24;

class Reader {
 public:
  Reader(std::string file, std::string dir) : file_(std::move(file)), dir_(std::move(dir)) {}

  [[noreturn]] void fail_at(const YAML::Node& node, const std::string& what) const {
    const int line = node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
    fail(HETERO_INVALID_ARGUMENT, file_ + ":" + std::to_string(line) + ": " + what);
  }
  static int line_of(const YAML::Node& node) { return node.Mark().line >= 0 ? node.Mark().line + 1 : 0; }

  PipelineSpec read(const YAML::Node& root) {
    PipelineSpec spec;
    spec.file = file_;
    if (!root.IsMap()) fail_at(root, "a pipeline file is a mapping with 'inputs', 'stages' and 'outputs'");
    for (const char* key : {"inputs", "stages", "outputs"})
      if (!root[key]) fail_at(root, std::string("the pipeline has no '") + key + "'");
    for (const auto& kv : root) {
      const std::string key = kv.first.Scalar();
      if (key != "inputs" && key != "stages" && key != "outputs")
        fail_at(kv.first, "unknown key '" + key + "' (keys: inputs, stages, outputs)");
    }
    read_inputs(root["inputs"], spec);
    const YAML::Node stages = root["stages"];
    if (!stages.IsSequence() || stages.size() == 0) fail_at(stages, "'stages' must be a list of one or more stages");
    if (stages.size() > kMaxStages)
      fail_at(stages, "a pipeline has at most " + std::to_string(kMaxStages) + " stages");
    for (const YAML::Node& stage : stages) spec.stages.push_back(read_stage(stage));
    const YAML::Node outputs = root["outputs"];
    if (!outputs.IsMap() || outputs.size() == 0)
      fail_at(outputs, "'outputs' must map each output's name to what it is ('score: scores')");
    std::set<std::string> output_names;
    for (const auto& kv : outputs) {
      const std::string name = checked_name(kv.first, "an output");
      SourceSpec source = read_source(kv.second, "output '" + name + "'", false);
      spec.outputs.emplace_back(name, std::move(source));
    }
    return spec;
  }

 private:
  // A name other names are made of: letters, digits, '_' and '-'.
  std::string checked_name(const YAML::Node& node, const std::string& what) const {
    if (!node.IsScalar()) fail_at(node, what + "'s name must be a string");
    const std::string name = node.Scalar();
    const bool ok = !name.empty() && name.size() <= 128 && std::all_of(name.begin(), name.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
    });
    if (!ok) fail_at(node, what + "'s name '" + name + "' must be 1-128 of letters, digits, '_' and '-'");
    return name;
  }

  void declare(const YAML::Node& node, const std::string& name, bool model_stage) {
    if (!names_.emplace(name, model_stage).second)
      fail_at(node, "'" + name + "' names an input or a stage already");
  }

  void read_inputs(const YAML::Node& inputs, PipelineSpec& spec) {
    if (!inputs.IsMap() || inputs.size() == 0)
      fail_at(inputs, "'inputs' must map each input's name to its {dtype, shape}");
    for (const auto& kv : inputs) {
      InputSpec in;
      in.name = checked_name(kv.first, "an input");
      in.line = line_of(kv.first);
      const YAML::Node& v = kv.second;
      const std::string what = "input '" + in.name + "'";
      if (!v.IsMap() || !v["dtype"] || !v["shape"])
        fail_at(v, what + " must be {dtype: float32, shape: [1, -1]}");
      for (const auto& field : v)
        if (field.first.Scalar() != "dtype" && field.first.Scalar() != "shape")
          fail_at(field.first, what + ": unknown key '" + field.first.Scalar() + "' (keys: dtype, shape)");
      in.dtype = core::dtype_from_name(v["dtype"].IsScalar() ? v["dtype"].Scalar() : std::string());
      if (in.dtype == core::DType::Undefined) fail_at(v["dtype"], what + ": unknown dtype (float32, int64, ...)");
      const YAML::Node shape = v["shape"];
      if (!shape.IsSequence()) fail_at(shape, what + ": 'shape' must be a list of dims, -1 for any size");
      for (const YAML::Node& d : shape) {
        const int64_t dim = integer(d, what + ": a dim", -1, int64_t{1} << 40);
        if (dim == 0) fail_at(d, what + ": a dim is 1 or more, or -1 for any size");
        in.shape.push_back(dim);
      }
      declare(kv.first, in.name, false);
      spec.inputs.push_back(std::move(in));
    }
  }

  int64_t integer(const YAML::Node& node, const std::string& what, int64_t min, int64_t max) const {
    long long v = 0;
    if (!node.IsScalar() || !YAML::convert<long long>::decode(node, v) || v < min || v > max)
      fail_at(node, what + " must be a whole number from " + std::to_string(min) + " to " + std::to_string(max));
    return v;
  }

  double number(const YAML::Node& node, const std::string& what) const {
    double v = 0;
    if (!node.IsScalar() || !YAML::convert<double>::decode(node, v) || !std::isfinite(v))
      fail_at(node, what + " must be a number");
    return v;
  }

  // A stage input: a name defined above, or (`constant_ok`) a number or a
  // list of numbers.
  SourceSpec read_source(const YAML::Node& node, const std::string& what, bool constant_ok) const {
    SourceSpec s;
    s.line = line_of(node);
    if (constant_ok && node.IsSequence()) {
      s.scalar = false;
      for (const YAML::Node& v : node) s.values.push_back(number(v, what + ": a value"));
      if (s.values.empty()) fail_at(node, what + ": a list of values must hold one or more");
      return s;
    }
    if (!node.IsScalar() || node.Scalar().empty())
      fail_at(node, what + " must name an input, a stage or a model stage's output ('mel.output')" +
                        (constant_ok ? std::string(", or be a number") : std::string()));
    double value = 0;
    if (constant_ok && YAML::convert<double>::decode(node, value) && std::isfinite(value)) {
      s.values.push_back(value);
      return s;
    }
    s.name = node.Scalar();
    const size_t dot = s.name.find('.');
    const std::string stage = s.name.substr(0, dot);
    const auto it = names_.find(stage);
    if (it == names_.end())
      fail_at(node, what + " reads '" + s.name + "', but no input or stage above it is called '" + stage + "'");
    if (dot == std::string::npos && it->second)
      fail_at(node, what + " reads model stage '" + stage + "': name one of its outputs ('" + stage + ".OUTPUT')");
    if (dot != std::string::npos && !it->second)
      fail_at(node, what + " reads '" + s.name + "', but only a model stage has outputs by name; '" + stage +
                        "' has one output: read it as '" + stage + "'");
    return s;
  }

  // A model path: relative to the pipeline file, and inside its directory.
  std::string model_path(const YAML::Node& node, const std::string& what) const {
    if (!node.IsScalar() || node.Scalar().empty()) fail_at(node, what + ": 'model' must be a file name");
    const std::string rel = node.Scalar();
    bool escapes = rel.front() == '/';
    for (size_t start = 0; start <= rel.size();) {
      const size_t end = std::min(rel.find('/', start), rel.size());
      if (rel.compare(start, end - start, "..") == 0 && end - start == 2) escapes = true;
      start = end + 1;
    }
    if (escapes)
      fail_at(node, what + ": model '" + rel + "' must be a path relative to the pipeline file, inside its "
                           "directory (no leading '/', no '..')");
    return dir_ + "/" + rel;
  }

  StageSpec read_stage(const YAML::Node& node) {
    if (!node.IsMap() || !node["name"])
      fail_at(node, "a stage is a mapping with 'name' and one of 'model', 'scale', 'window', 'concat'");
    StageSpec st;
    st.line = line_of(node);
    st.name = checked_name(node["name"], "a stage");
    const std::string what = "stage '" + st.name + "'";
    int kinds = 0;
    for (const auto& kv : node) {
      const std::string key = kv.first.Scalar();
      if (key == "model" || key == "scale" || key == "window" || key == "concat") ++kinds;
    }
    if (kinds != 1) fail_at(node, what + " must have one of 'model', 'scale', 'window' or 'concat'");
    if (node["model"]) {
      read_model_stage(node, st, what);
    } else {
      const char* kind = node["scale"] ? "scale" : node["window"] ? "window" : "concat";
      for (const auto& kv : node)
        if (kv.first.Scalar() != "name" && kv.first.Scalar() != kind)
          fail_at(kv.first, what + ": unknown key '" + kv.first.Scalar() + "' (keys: name, " + kind + ")");
      read_builtin(node[kind], kind, st, what);
    }
    declare(node["name"], st.name, st.kind == StageKind::Model);
    return st;
  }

  void read_model_stage(const YAML::Node& node, StageSpec& st, const std::string& what) const {
    st.kind = StageKind::Model;
    for (const auto& kv : node) {
      const std::string key = kv.first.Scalar();
      if (key == "name") continue;
      if (key == "model") {
        st.model = model_path(kv.second, what);
      } else if (key == "device") {
        if (!kv.second.IsScalar() || kv.second.Scalar().empty())
          fail_at(kv.second, what + ": 'device' is a device name");
        st.device = kv.second.Scalar();
      } else if (key == "inputs") {
        if (!kv.second.IsMap()) fail_at(kv.second, what + ": 'inputs' maps the model's inputs to what they read");
        for (const auto& in : kv.second) {
          if (!in.first.IsScalar()) fail_at(in.first, what + ": an input's name must be a string");
          st.inputs.emplace_back(in.first.Scalar(),
                                 read_source(in.second, what + " input '" + in.first.Scalar() + "'", true));
        }
      } else if (key == "state") {
        if (!kv.second.IsMap()) fail_at(kv.second, what + ": 'state' maps outputs to inputs ({stateN: state})");
        for (const auto& pair : kv.second) {
          if (!pair.first.IsScalar() || !pair.second.IsScalar())
            fail_at(pair.first, what + ": 'state' maps an output's name to an input's name");
          st.state[pair.first.Scalar()] = pair.second.Scalar();
        }
      } else {
        fail_at(kv.first, what + ": unknown key '" + key + "' (keys: name, model, device, inputs, state)");
      }
    }
  }

  void read_builtin(const YAML::Node& args, const std::string& kind, StageSpec& st, const std::string& what) const {
    const std::vector<std::string> keys = kind == "scale"    ? std::vector<std::string>{"input", "a", "b"}
                                          : kind == "window" ? std::vector<std::string>{"input", "axis", "size",
                                                                                        "step", "prefill"}
                                                             : std::vector<std::string>{"input", "axis"};
    std::string key_list;
    for (const std::string& k : keys) key_list += (key_list.empty() ? "" : ", ") + k;
    if (!args.IsMap() || !args["input"]) fail_at(args, what + ": '" + kind + "' is a mapping of " + key_list);
    for (const auto& kv : args)
      if (std::find(keys.begin(), keys.end(), kv.first.Scalar()) == keys.end())
        fail_at(kv.first, what + ": unknown " + kind + " key '" + kv.first.Scalar() + "' (keys: " + key_list + ")");
    st.input = read_source(args["input"], what + " input", false);
    if (kind == "scale") {
      st.kind = StageKind::Scale;
      if (args["a"]) st.a = number(args["a"], what + ": 'a'");
      if (args["b"]) st.b = number(args["b"], what + ": 'b'");
      return;
    }
    if (!args["axis"]) fail_at(args, what + ": '" + kind + "' needs 'axis'");
    st.axis = integer(args["axis"], what + ": 'axis'", -64, 63);
    if (kind == "concat") {
      st.kind = StageKind::Concat;
      return;
    }
    st.kind = StageKind::Window;
    if (!args["size"] || !args["step"]) fail_at(args, what + ": 'window' needs 'size' and 'step'");
    st.size = integer(args["size"], what + ": 'size'", 1, kMaxWindowSteps);
    st.step = integer(args["step"], what + ": 'step'", 1, kMaxWindowSteps);
    if (const YAML::Node prefill = args["prefill"]) {
      if (!prefill.IsScalar() || (prefill.Scalar() != "zeros" && prefill.Scalar() != "none"))
        fail_at(prefill, what + ": 'prefill' is 'zeros' (the window starts full of zeros) or 'none'");
      st.prefill = prefill.Scalar() == "zeros";
    }
  }

  std::string file_, dir_;
  std::map<std::string, bool> names_;  // inputs and stages above; true: a model stage
};

}  // namespace

bool is_pipeline_path(const std::string& path) {
  const auto ends = [&](const char* suffix) {
    const size_t n = std::char_traits<char>::length(suffix);
    return path.size() > n && path.compare(path.size() - n, n, suffix) == 0;
  };
  return ends(".yaml") || ends(".yml");
}

PipelineSpec parse_pipeline(const std::string& text, const std::string& file, const std::string& dir) {
  return Reader(file, dir).read(partition::load_strict_yaml(text, file));
}

PipelineSpec read_pipeline_file(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  return parse_pipeline(core::read_regular_file(path, kMaxPipelineFileBytes, "a pipeline file"), path, dir);
}

}  // namespace hetero::pipeline
