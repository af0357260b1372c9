#include "drivers/cpu/graph_passes.h"

#include "drivers/cpu/dnnl_util.h"

namespace hetero::cpu {

void optimize_graph(core::Model& model) {
  // The int8 pass first: it reads the QDQ patterns as the model has them
  // (weights behind constant DequantizeLinear nodes), which folding would
  // turn into float constants.
  passes::to_int8(model.graph, model.opset(""));
  passes::fold_constants(model.graph, model.opset(""));
  passes::fuse_layer_norm(model.graph, model.opset(""));
  passes::fold_and_fuse(model.graph, model.opset(""));
  passes::share_dft(model.graph);
  passes::to_channels_last(model.graph);
  model.opsets[kCpuDomain] = 1;
}

}  // namespace hetero::cpu
