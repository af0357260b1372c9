// The compiled form of a HETERO device: one compiled submodel per subgraph,
// each by its own driver, run in the plan's execution order. Tensors pass
// from one submodel to the next as they are (host memory on both sides; no
// copy). A request's submodels run as pipeline stages on their own
// sub-requests, so with several requests in flight one request's second
// stage overlaps the next request's first on another device.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/driver.h"
#include "core/graph.h"
#include "core/runtime.h"
#include "partition/cut.h"

namespace hetero::partition {

class HeteroCompiledModel final : public driver::CompiledModel {
 public:
  struct Stage {
    std::string device;  // "CPU.1"
    std::string driver, driver_version;  // of the driver that compiled it
    std::shared_ptr<driver::CompiledModel> compiled;
    std::vector<Source> inputs;  // where each submodel input comes from
  };
  // What requests share with the model (and keep alive).
  struct Layout {
    std::vector<driver::Port> inputs, outputs;
    std::vector<Stage> stages;            // execution order
    std::vector<Source> output_sources;   // one per model output
  };

  HeteroCompiledModel(std::string device, Layout layout)
      : device_(std::move(device)), layout_(std::make_shared<const Layout>(std::move(layout))) {}

  const std::vector<driver::Port>& inputs() const override { return layout_->inputs; }
  const std::vector<driver::Port>& outputs() const override { return layout_->outputs; }
  std::unique_ptr<driver::InferRequest> create_infer_request() override;
  // Its own section of its blob, the plan; export_sections() adds each
  // submodel's export (partition/hetero_blob.h).
  std::vector<uint8_t> export_blob() const override;
  std::vector<driver::ExportedSection> export_sections() const override;
  std::string device() const override { return device_; }
  std::vector<std::string> submodel_devices() const override;

  // The compiled submodels, in execution order.
  const std::vector<Stage>& stages() const { return layout_->stages; }
  const std::vector<Source>& output_sources() const { return layout_->output_sources; }

 private:
  std::string device_;
  std::shared_ptr<const Layout> layout_;
};

// Plans (partition/plan.h) and compiles `model` for the HETERO device
// `device`, each submodel by its device's driver.
std::unique_ptr<HeteroCompiledModel> compile_hetero(const core::Runtime& runtime, const core::Model& model,
                                                    const core::DeviceString& device, const driver::Config& config);

}  // namespace hetero::partition
