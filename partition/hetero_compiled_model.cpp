#include "partition/hetero_compiled_model.h"

#include "core/error.h"
#include "core/infer_request.h"
#include "core/ports.h"
#include "core/progress.h"
#include "partition/hetero_blob.h"
#include "partition/plan.h"

namespace hetero::partition {

// One sub-request per stage. Sync infer runs the stages one after the other on
// the caller's thread; async infer chains them: each stage's completion
// callback binds the next stage's inputs and starts it.
namespace {

using Layout = HeteroCompiledModel::Layout;

class HeteroInferStep final : public core::InferStep {
 public:
  explicit HeteroInferStep(std::shared_ptr<const Layout> model) : model_(std::move(model)) {
    for (const auto& stage : model_->stages) {
      stages_.push_back(stage.compiled->create_infer_request());
      if (!stages_.back()) fail(HETERO_DRIVER_ERROR, "the driver of " + stage.device + " returned no infer request");
    }
  }

  const std::vector<driver::Port>& inputs() const override { return model_->inputs; }
  const std::vector<driver::Port>& outputs() const override { return model_->outputs; }

  // Bound at once to every stage that reads it, so the stage's driver checks
  // it too, against its own compiled shapes.
  void input_bound(size_t index, const core::Tensor& tensor) override {
    for (size_t s = 0; s < stages_.size(); ++s) {
      const auto& sources = model_->stages[s].inputs;
      for (size_t i = 0; i < sources.size(); ++i)
        if (sources[i].kind == Source::Kind::GraphInput && sources[i].index == index)
          stages_[s]->set_input(i, tensor);
    }
  }

  std::vector<core::Tensor> run(const std::vector<core::Tensor>& inputs) override {
    inputs_ = inputs;
    for (size_t s = 0; s < stages_.size(); ++s) {
      if (cancel_requested()) core::fail_cancelled();
      bind_stage(s);
      stages_[s]->infer();
    }
    return collect_outputs();
  }

  bool start(const std::vector<core::Tensor>& inputs, Done done) override {
    inputs_ = inputs;
    done_ = std::move(done);
    start_stage(0);
    return true;
  }

  void release_memory() override {
    for (auto& stage : stages_) {
      stage->wait();  // the last callback may still be unwinding
      stage->release_memory();
    }
  }

 protected:
  // The stage running stops at its next boundary; start_stage() starts no
  // other.
  void on_cancel() override {
    for (auto& stage : stages_) stage->cancel();
  }

 private:
  core::Tensor resolve(const Source& source) const {
    switch (source.kind) {
      case Source::Kind::GraphInput: return inputs_[source.index];
      case Source::Kind::PartOutput: return stages_[source.part]->output(source.index);
      case Source::Kind::Constant: return source.constant;
    }
    fail(HETERO_INTERNAL, "unknown tensor source");
  }

  std::vector<core::Tensor> collect_outputs() const {
    std::vector<core::Tensor> outputs;
    for (const Source& source : model_->output_sources) outputs.push_back(resolve(source));
    return outputs;
  }

  // Inputs that come from earlier stages: their outputs of this inference,
  // passed without a copy.
  void bind_stage(size_t s) {
    const auto& sources = model_->stages[s].inputs;
    for (size_t i = 0; i < sources.size(); ++i)
      if (sources[i].kind == Source::Kind::PartOutput) stages_[s]->set_input(i, resolve(sources[i]));
  }

  // Starts stage `s`, whose callback starts the next; after the last, the
  // outputs go to done_.
  void start_stage(size_t s) {
    if (s == stages_.size()) return done_(collect_outputs(), nullptr);
    // A stage whose last callback is still unwinding on another thread is
    // waited for by its start (core/request_state.h).
    if (cancel_requested()) core::fail_cancelled();
    bind_stage(s);
    stages_[s]->start_async([this, s](std::exception_ptr error) {
      if (error) return done_({}, error);
      try {
        start_stage(s + 1);
      } catch (...) {
        done_({}, std::current_exception());
      }
    });
  }

  std::shared_ptr<const Layout> model_;
  std::vector<std::unique_ptr<driver::InferRequest>> stages_;
  std::vector<core::Tensor> inputs_;  // of the inference running
  Done done_;
};

}  // namespace

std::unique_ptr<driver::InferRequest> HeteroCompiledModel::create_infer_request() {
  return core::make_infer_request(std::make_unique<HeteroInferStep>(layout_));
}

std::vector<uint8_t> HeteroCompiledModel::export_blob() const { return encode_hetero_plan(*layout_); }

std::vector<driver::ExportedSection> HeteroCompiledModel::export_sections() const {
  return export_hetero_sections(*layout_);
}

std::vector<std::string> HeteroCompiledModel::submodel_devices() const {
  std::vector<std::string> devices;
  for (const Stage& stage : layout_->stages) devices.push_back(stage.device);
  return devices;
}

std::unique_ptr<HeteroCompiledModel> compile_hetero(const core::Runtime& runtime, const core::Model& model,
                                                    const core::DeviceString& device, const driver::Config& config) {
  Plan plan = make_plan(runtime, model, device, config);
  const std::vector<std::string>& devices = plan.config.policy.devices;
  // Planning trusts the policy's pins to a device that is not here (offline
  // planning for another box); compiling needs it: name the pinned nodes and
  // the device's own reason (a driver with no device says why), before any
  // submodel is compiled.
  for (size_t d = 0; d < devices.size(); ++d) {
      std::vector<std::string> nodes;
    for (const Submodel& sub : plan.cut.parts)
      if (static_cast<size_t>(sub.device) == d) nodes.insert(nodes.end(), sub.node_names.begin(), sub.node_names.end());
    if (nodes.empty()) continue;
    try {
      (void)runtime.resolve(device.devices[d]);
    } catch (const Failure& e) {
      std::string list;
      for (size_t i = 0; i < nodes.size() && i < 8; ++i) list += (i ? ", '" : "'") + nodes[i] + "'";
      if (nodes.size() > 8) list += " and " + std::to_string(nodes.size() - 8) + " more";
      fail(e.status(), "node(s) " + list + " of " + device.to_string() + " are pinned to " + devices[d] + " by " +
                           plan.config.policy.source + ", which is not available here (" + e.what() + ")");
    }
  }
  HeteroCompiledModel::Layout layout;
  // Each submodel's driver reports its own stages in between.
  constexpr const char* kStage = "compiling HETERO submodels";
  const uint64_t parts = plan.cut.parts.size();
  for (Submodel& sub : plan.cut.parts) {
    core::report_progress(kStage, layout.stages.size(), parts);
    HeteroCompiledModel::Stage stage;
    stage.device = devices[sub.device];
    auto [d, id] = runtime.resolve(device.devices[sub.device]);
    stage.driver = d->name();
    stage.driver_version = d->version();
    stage.compiled = d->compile(*sub.model, id, plan.config.device_config[sub.device]);
    stage.inputs = std::move(sub.inputs);
    layout.stages.push_back(std::move(stage));
  }
  core::report_progress(kStage, parts, parts);
  layout.inputs = core::ports_of(model.graph.inputs);
  layout.outputs = core::ports_of(model.graph.outputs);
  layout.output_sources = std::move(plan.cut.outputs);
  return std::make_unique<HeteroCompiledModel>(device.to_string(), std::move(layout));
}

}  // namespace hetero::partition
