#include "pipeline/pipeline_model.h"

#include <map>
#include <vector>

#include "core/blob_container.h"
#include "core/device_string.h"
#include "core/error.h"
#include "core/infer_request.h"
#include "core/mapped_file.h"
#include "core/onnx_import.h"
#include "pipeline/pipeline_spec.h"
#include "pipeline/stream_stages.h"

namespace hetero::pipeline {

namespace {

// The windows one window stage may emit in one call: each is a run of every
// stage after it, so a client's one large call is bounded in time and in the
// outputs it holds.
constexpr size_t kMaxWindowsPerCall = 16384;

// A tensor the stages make: a pipeline input, a built-in stage's output, or
// a model stage's output. `many`: a window upstream makes it once per
// window, so a call holds any number of it; else exactly one.
struct Value {
  driver::Port port;
  bool many = false;
};

// What a model input reads.
struct Wire {
  int value = -1;            // a Value, or
  core::Tensor constant;     // a number the file gives, or
  int state = -1;            // its state link
};

struct StateLink {
  size_t model_input = 0, model_output = 0;
  size_t pipeline_input = 0, pipeline_output = 0;
};

struct Stage {
  StageKind kind = StageKind::Model;
  std::string what;  // "FILE:LINE: stage 'mel'", for messages
  // A model stage.
  std::shared_ptr<driver::CompiledModel> model;
  std::vector<Wire> inputs;   // one per model input
  std::vector<core::Shape> input_views;  // the shape a tensor of the input's size is viewed as
  std::vector<int> outputs;   // the Value of each model output
  std::vector<StateLink> state;
  // A built-in stage: what it reads and makes.
  int input = -1, output = -1;
  float a = 1, b = 0;
  Window window;
  size_t buffer_input = 0, buffer_output = 0;  // its buffer's ports; the step count's follow
  int64_t axis = 0;
  core::DType dtype = core::DType::Undefined;
  core::Shape empty_shape;  // a concat of nothing
};

struct Layout {
  std::vector<driver::Port> inputs, outputs;
  std::vector<Value> values;
  std::vector<int> input_values;   // the Value of each declared input
  std::vector<int> output_values;  // the Value of each declared output
  std::vector<Stage> stages;
  std::vector<std::string> devices;  // of the model stages
};

// A port's shape with its unknown dims 1: what a tensor of its size is viewed as.
core::Shape concrete(const std::vector<core::Dim>& dims) {
  core::Shape shape;
  for (const core::Dim& d : dims) shape.push_back(d.known() ? d.size : 1);
  return shape;
}

// `t` as `port` takes it: as it is when it fits, else viewed in `view`
// when it has that many elements (a window of 1x1x76x32 frames for a model
// input of ?x76x32x1). Anything else goes as it is, for the driver to refuse.
core::Tensor fit(const core::Tensor& t, const driver::Port& port, const core::Shape& view) {
  bool fits = port.has_rank && port.shape.size() == t.rank();
  for (size_t d = 0; fits && d < t.rank(); ++d)
    fits = !port.shape[d].known() || port.shape[d].size == t.dim(d);
  if (fits || !port.has_rank) return t;
  size_t n = 1;
  for (int64_t d : view) n *= static_cast<size_t>(d);
  return n == t.numel() ? t.reshaped(view) : t;
}

class PipelineStep final : public core::InferStep {
 public:
  explicit PipelineStep(std::shared_ptr<const Layout> layout) : layout_(std::move(layout)) {
    for (const Stage& stage : layout_->stages) {
      requests_.emplace_back();
      if (stage.kind != StageKind::Model) continue;
      requests_.back() = stage.model->create_infer_request();
      if (!requests_.back()) fail(HETERO_DRIVER_ERROR, stage.what + ": its driver returned no infer request");
    }
  }

  const std::vector<driver::Port>& inputs() const override { return layout_->inputs; }
  const std::vector<driver::Port>& outputs() const override { return layout_->outputs; }

  std::vector<core::Tensor> run(const std::vector<core::Tensor>& inputs) override {
    const Layout& l = *layout_;
    std::vector<std::vector<core::Tensor>> values(l.values.size());
    for (size_t i = 0; i < l.input_values.size(); ++i) values[l.input_values[i]] = {inputs[i]};
    std::vector<core::Tensor> outputs(l.outputs.size());
    for (size_t s = 0; s < l.stages.size(); ++s) {
      const Stage& stage = l.stages[s];
      switch (stage.kind) {
        case StageKind::Model: run_model(stage, *requests_[s], inputs, values, outputs); break;
        case StageKind::Scale:
          for (const core::Tensor& x : values[stage.input]) values[stage.output].push_back(scale(x, stage.a, stage.b));
          break;
        case StageKind::Window: run_window(stage, inputs, values, outputs); break;
        case StageKind::Concat:
          values[stage.output] = {concat(values[stage.input], stage.axis, stage.dtype, stage.empty_shape, stage.what)};
          break;
      }
    }
    for (size_t k = 0; k < l.output_values.size(); ++k) outputs[k] = values[l.output_values[k]].front();
    return outputs;
  }

  void release_memory() override {
    for (auto& request : requests_)
      if (request) request->release_memory();
  }

 protected:
  void on_cancel() override {
    for (auto& request : requests_)
      if (request) request->cancel();
  }

 private:
  using Values = std::vector<std::vector<core::Tensor>>;

  // Once per tensor its `many` inputs hold (all the same count), or once.
  void run_model(const Stage& stage, driver::InferRequest& request, const std::vector<core::Tensor>& inputs,
                 Values& values, std::vector<core::Tensor>& outputs) {
    size_t runs = 1;
    bool counted = false;
    for (const Wire& w : stage.inputs) {
      if (w.value < 0 || !layout_->values[w.value].many) continue;
      const size_t n = values[w.value].size();
      if (counted && n != runs)
        fail(HETERO_INVALID_ARGUMENT, stage.what + ": its inputs hold " + std::to_string(runs) + " and " +
                                          std::to_string(n) + " tensors this call; they must hold as many");
      runs = n;
      counted = true;
    }
    std::vector<core::Tensor> carry;
    for (const StateLink& link : stage.state) carry.push_back(inputs[link.pipeline_input]);
    const auto& model_inputs = stage.model->inputs();
    for (size_t k = 0; k < runs; ++k) {
      if (cancel_requested()) core::fail_cancelled();
      try {
        for (size_t i = 0; i < stage.inputs.size(); ++i) {
          const Wire& w = stage.inputs[i];
          const core::Tensor& t = w.state >= 0       ? carry[w.state]
                                  : w.value < 0      ? w.constant
                                  : layout_->values[w.value].many ? values[w.value][k]
                                                                  : values[w.value].front();
          request.set_input(i, fit(t, model_inputs[i], stage.input_views[i]));
        }
        request.infer();
      } catch (const Failure& e) {
        if (e.status() == HETERO_CANCELLED) throw;
        fail(e.status(), stage.what + ": " + e.what());
      }
      for (size_t o = 0; o < stage.outputs.size(); ++o) values[stage.outputs[o]].push_back(request.output(o));
      for (size_t j = 0; j < stage.state.size(); ++j) carry[j] = request.output(stage.state[j].model_output);
    }
    // Not run: the state goes on as it came (a copy: an output must not
    // alias the caller's input).
    for (size_t j = 0; j < stage.state.size(); ++j)
      outputs[stage.state[j].pipeline_output] = runs ? carry[j] : carry[j].clone();
  }

  void run_window(const Stage& stage, const std::vector<core::Tensor>& inputs, Values& values,
                  std::vector<core::Tensor>& outputs) {
    const core::Tensor& steps = inputs[stage.buffer_input + 1];
    if (steps.numel() != 1)
      fail(HETERO_INVALID_ARGUMENT, stage.what + ": its step count is " + core::shape_to_string(steps.shape()) +
                                        "; it holds one number");
    Window::State state{inputs[stage.buffer_input], steps.data<int64_t>()[0]};
    std::vector<core::Tensor>& out = values[stage.output];
    for (const core::Tensor& x : values[stage.input]) {
      std::vector<core::Tensor> windows = stage.window.push(state, x, kMaxWindowsPerCall - out.size(), stage.what);
      out.insert(out.end(), std::make_move_iterator(windows.begin()), std::make_move_iterator(windows.end()));
    }
    outputs[stage.buffer_output] = values[stage.input].empty() ? state.buffer.clone() : state.buffer;
    outputs[stage.buffer_output + 1] = core::Tensor::from_vector<int64_t>({state.steps}, {1});
  }

  std::shared_ptr<const Layout> layout_;
  std::vector<std::unique_ptr<driver::InferRequest>> requests_;  // per stage; null for a built-in one
};

class PipelineCompiledModel final : public driver::CompiledModel {
 public:
  PipelineCompiledModel(std::string file, std::string device, std::shared_ptr<const Layout> layout)
      : file_(std::move(file)), device_(std::move(device)), layout_(std::move(layout)) {}

  const std::vector<driver::Port>& inputs() const override { return layout_->inputs; }
  const std::vector<driver::Port>& outputs() const override { return layout_->outputs; }
  std::unique_ptr<driver::InferRequest> create_infer_request() override {
    return core::make_infer_request(std::make_unique<PipelineStep>(layout_));
  }
  std::vector<uint8_t> export_blob() const override {
    fail(HETERO_NOT_SUPPORTED, "pipeline " + file_ + " is not exported as a blob: the core's cache keeps each of "
                               "its models' blobs, and `hetero compile` makes a model's blob for another box");
  }
  std::string device() const override { return device_; }
  std::vector<std::string> submodel_devices() const override { return layout_->devices; }

 private:
  std::string file_, device_;
  std::shared_ptr<const Layout> layout_;
};

// `values` in a tensor of `port`'s dtype: a rank-0 (or all-ones) tensor
// for one number, a 1-D one for a list.
core::Tensor constant_tensor(const SourceSpec& source, const driver::Port& port, const std::string& what) {
  core::Shape shape{static_cast<int64_t>(source.values.size())};
  if (source.scalar) {
    shape = concrete(port.shape);
    if (core::shape_numel(shape) != 1)
      fail(HETERO_INVALID_ARGUMENT, what + " is one number, but the model's input is " +
                                        core::shape_to_string(shape) + "; give a list");
  } else if (port.has_rank && port.shape.size() != 1) {
    fail(HETERO_INVALID_ARGUMENT, what + " is a list, but the model's input has " +
                                      std::to_string(port.shape.size()) + " dims; a list fills an input of one");
  }
  core::Tensor t = core::Tensor::allocate(port.dtype, shape);
  for (size_t i = 0; i < source.values.size(); ++i) {
    const double v = source.values[i];
    switch (port.dtype) {
      case core::DType::F32: t.data<float>()[i] = static_cast<float>(v); break;
      case core::DType::F64: t.data<double>()[i] = v; break;
      case core::DType::I64: t.data<int64_t>()[i] = static_cast<int64_t>(v); break;
      case core::DType::I32: t.data<int32_t>()[i] = static_cast<int32_t>(v); break;
      case core::DType::Bool: t.data<uint8_t>()[i] = v != 0; break;
      default:
        fail(HETERO_INVALID_ARGUMENT, what + ": a number cannot be given to an input of " +
                                          core::dtype_name(port.dtype) + " (float32, float64, int64, int32, bool)");
    }
  }
  return t;
}

class Compiler {
 public:
  Compiler(const core::Runtime& runtime, const std::string& device, const driver::Config& config)
      : runtime_(runtime), device_(device), config_(config) {}

  std::shared_ptr<const Layout> compile(const PipelineSpec& spec) {
    for (const InputSpec& in : spec.inputs) {
      driver::Port port{in.name, in.dtype, {}, true};
      for (int64_t d : in.shape) port.shape.push_back(core::Dim{d, {}});
      layout_.inputs.push_back(port);
      layout_.input_values.push_back(add_value(in.name, port, false));
    }
    // The state ports follow the declared ones, in stage order.
    std::vector<driver::Port> state_inputs, state_outputs;
    for (const StageSpec& st : spec.stages) {
      Stage stage;
      stage.kind = st.kind;
      stage.what = spec.file + ":" + std::to_string(st.line) + ": stage '" + st.name + "'";
      if (st.kind == StageKind::Model)
        compile_model(st, stage, state_inputs, state_outputs);
      else
        compile_builtin(st, stage, state_inputs, state_outputs);
      layout_.stages.push_back(std::move(stage));
    }
    const size_t declared_inputs = layout_.inputs.size();
    for (auto& stage : layout_.stages) {
      for (StateLink& link : stage.state) link.pipeline_input += declared_inputs;
      if (stage.kind == StageKind::Window) stage.buffer_input += declared_inputs;
    }
    layout_.inputs.insert(layout_.inputs.end(), state_inputs.begin(), state_inputs.end());
    for (const auto& [name, source] : spec.outputs) {
      const int v = value_of(source, spec.file + ":" + std::to_string(source.line) + ": output '" + name + "'");
      if (layout_.values[v].many)
        fail(HETERO_INVALID_ARGUMENT, spec.file + ":" + std::to_string(source.line) + ": output '" + name +
                                          "' reads '" + source.name + "', which a window upstream makes any number "
                                          "of times a call: gather them with a concat stage");
      driver::Port port = layout_.values[v].port;
      port.name = name;
      layout_.outputs.push_back(port);
      layout_.output_values.push_back(v);
    }
    const size_t declared_outputs = layout_.outputs.size();
    for (auto& stage : layout_.stages) {
      for (StateLink& link : stage.state) link.pipeline_output += declared_outputs;
      if (stage.kind == StageKind::Window) stage.buffer_output += declared_outputs;
    }
    layout_.outputs.insert(layout_.outputs.end(), state_outputs.begin(), state_outputs.end());
    return std::make_shared<const Layout>(std::move(layout_));
  }

 private:
  // The value `source` reads. The file's reader checked that its stage is
  // above; a model stage's output name is checked here, with the model's.
  int value_of(const SourceSpec& source, const std::string& what) const {
    const auto it = values_.find(source.name);
    if (it != values_.end()) return it->second;
    const std::string stage = source.name.substr(0, source.name.find('.'));
    std::string names;
    for (const auto& [name, index] : values_)
      if (name.rfind(stage + ".", 0) == 0) names += (names.empty() ? "'" : ", '") + name + "'";
    std::string message = what + " reads '" + source.name + "', which stage '" + stage + "' does not make (";
    message += names.empty() ? "it makes nothing by that name)" : "it makes " + names + ")";
    fail(HETERO_INVALID_ARGUMENT, message);
  }

  int add_value(const std::string& name, driver::Port port, bool many) {
    port.name = name;
    layout_.values.push_back({std::move(port), many});
    const int index = static_cast<int>(layout_.values.size()) - 1;
    values_[name] = index;
    return index;
  }

  // A state the pipeline carries: input `name`, output `name`_next.
  static size_t add_state(std::vector<driver::Port>& ports, driver::Port port, const std::string& name) {
    port.name = name;
    ports.push_back(std::move(port));
    return ports.size() - 1;
  }

  // A blob must be one for the stage's device, as hetero_compiled_model_open_file() has it.
  std::unique_ptr<driver::CompiledModel> load(const std::string& path, const std::string& device) const {
    const core::MappedBytes bytes = core::map_file(path);
    if (!core::has_blob_magic({bytes.data, bytes.size}))
      return runtime_.load_file(path, core::ImportOptions{}, device, config_).compiled;
    std::unique_ptr<driver::CompiledModel> blob = runtime_.import_blob({bytes.data, bytes.size}, config_);
    core::check_blob_device(blob->device(), device);
    return blob;
  }

  void compile_model(const StageSpec& st, Stage& stage, std::vector<driver::Port>& state_inputs,
                     std::vector<driver::Port>& state_outputs) {
    const std::string device = st.device.empty() ? device_ : st.device;
    try {
      stage.model = load(st.model, device);
    } catch (const Failure& e) {
      fail(e.status(), stage.what + ": " + e.what());
    }
    layout_.devices.push_back(stage.model->device());
    const auto& ins = stage.model->inputs();
    const auto& outs = stage.model->outputs();
    const auto index_of = [&](const std::vector<driver::Port>& ports, const std::string& name,
                              const char* kind) -> size_t {
      for (size_t i = 0; i < ports.size(); ++i)
        if (ports[i].name == name) return i;
      std::string names;
      for (const auto& p : ports) names += (names.empty() ? "'" : ", '") + p.name + "'";
      fail(HETERO_INVALID_ARGUMENT, stage.what + ": " + st.model + " has no " + kind + " '" + name + "' (its " +
                                        kind + "s: " + names + ")");
    };
    stage.inputs.resize(ins.size());
    std::vector<bool> wired(ins.size(), false);
    bool many = false;
    for (const auto& [name, source] : st.inputs) {
      const size_t i = index_of(ins, name, "input");
      if (wired[i]) fail(HETERO_INVALID_ARGUMENT, stage.what + ": input '" + name + "' is wired twice");
      wired[i] = true;
      const std::string what = stage.what + " input '" + name + "'";
      if (source.constant()) {
        stage.inputs[i].constant = constant_tensor(source, ins[i], what);
        continue;
      }
      const int v = value_of(source, what);
      if (layout_.values[v].port.dtype != ins[i].dtype)
        fail(HETERO_INVALID_ARGUMENT, what + " is " + core::dtype_name(ins[i].dtype) + ", but '" + source.name +
                                          "' is " + core::dtype_name(layout_.values[v].port.dtype));
      stage.inputs[i].value = v;
      many = many || layout_.values[v].many;
    }
    for (const auto& [output, input] : st.state) {
      StateLink link;
      link.model_output = index_of(outs, output, "output");
      link.model_input = index_of(ins, input, "input");
      if (wired[link.model_input])
        fail(HETERO_INVALID_ARGUMENT, stage.what + ": input '" + input + "' is state and wired in 'inputs' too");
      if (ins[link.model_input].dtype != outs[link.model_output].dtype)
        fail(HETERO_INVALID_ARGUMENT, stage.what + ": state output '" + output + "' and input '" + input +
                                          "' differ in dtype");
      wired[link.model_input] = true;
      const std::string name = st.name + "." + input;
      link.pipeline_input = add_state(state_inputs, ins[link.model_input], name);
      link.pipeline_output = add_state(state_outputs, ins[link.model_input], name + "_next");
      stage.inputs[link.model_input].state = static_cast<int>(stage.state.size());
      stage.state.push_back(link);
    }
    for (size_t i = 0; i < ins.size(); ++i) {
      if (!wired[i])
        fail(HETERO_INVALID_ARGUMENT, stage.what + ": model input '" + ins[i].name +
                                          "' reads nothing: wire it in 'inputs' (a source or a number)");
      stage.input_views.push_back(concrete(ins[i].shape));
    }
    for (const auto& port : outs) stage.outputs.push_back(add_value(st.name + "." + port.name, port, many));
  }

  void compile_builtin(const StageSpec& st, Stage& stage, std::vector<driver::Port>& state_inputs,
                       std::vector<driver::Port>& state_outputs) {
    stage.input = value_of(st.input, stage.what);
    const Value in = layout_.values[stage.input];
    driver::Port port = in.port;
    const auto axis = [&](int64_t axis) {
      const auto rank = static_cast<int64_t>(port.shape.size());
      if (!port.has_rank || axis < -rank || axis >= rank)
        fail(HETERO_INVALID_ARGUMENT, stage.what + ": axis " + std::to_string(axis) + " is not an axis of '" +
                                          st.input.name + "' (" + std::to_string(rank) + " dims)");
      return axis < 0 ? axis + rank : axis;
    };
    bool many = in.many;
    switch (st.kind) {
      case StageKind::Scale:
        if (port.dtype != core::DType::F32)
          fail(HETERO_INVALID_ARGUMENT, stage.what + ": scale takes float32, and '" + st.input.name + "' is " +
                                            core::dtype_name(port.dtype));
        stage.a = static_cast<float>(st.a);
        stage.b = static_cast<float>(st.b);
        break;
      case StageKind::Window: {
        stage.window = Window{axis(st.axis), st.size, st.step, st.prefill};
        port.shape[stage.window.axis] = core::Dim{st.size, {}};
        stage.buffer_input = add_state(state_inputs, port, st.name + ".window");
        stage.buffer_output = add_state(state_outputs, port, st.name + ".window_next");
        const driver::Port steps{"", core::DType::I64, {core::Dim{1, {}}}, true};
        add_state(state_inputs, steps, st.name + ".steps");
        add_state(state_outputs, steps, st.name + ".steps_next");
        many = true;
        break;
      }
      case StageKind::Concat:
        stage.axis = axis(st.axis);
        stage.dtype = port.dtype;
        port.shape[stage.axis] = core::Dim{};
        stage.empty_shape = concrete(port.shape);
        stage.empty_shape[stage.axis] = 0;
        many = false;
        break;
      case StageKind::Model: break;
    }
    stage.output = add_value(st.name, port, many);
  }

  const core::Runtime& runtime_;
  std::string device_;
  driver::Config config_;
  Layout layout_;
  std::map<std::string, int> values_;
};

}  // namespace

std::unique_ptr<driver::CompiledModel> compile_pipeline(const core::Runtime& runtime, const std::string& path,
                                                        const std::string& device, const driver::Config& config) {
  const PipelineSpec spec = read_pipeline_file(path);
  return std::make_unique<PipelineCompiledModel>(path, device, Compiler(runtime, device, config).compile(spec));
}

}  // namespace hetero::pipeline
