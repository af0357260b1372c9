// Network: one per stream (infer request), the third of the three levels in
// drivers/gpu/README.md. Primitive instances are
// the plan's steps with their kernels' arguments bound once to this
// network's buffers (pooled intermediates, inputs) and the program's shared
// constants. execute() enqueues the input writes, every kernel and the
// output reads with events and waits once, at the end.
#pragma once

#include <memory>
#include <vector>

#include "core/tensor.h"
#include "drivers/gpu/program.h"

namespace hetero::gpu {

class Network {
 public:
  explicit Network(std::shared_ptr<const CompiledProgram> program);

  // Runs one inference; `inputs` in the program's input order, already
  // checked against its ports.
  std::vector<core::Tensor> execute(const std::vector<core::Tensor>& inputs);
  // Enqueues every step `times` times over, on the buffers as they are (no
  // input written, no output read), and waits: how the tuner and the
  // benchmarks time kernels.
  void run_steps(size_t times = 1);

 private:
  Buffer& buffer(const Ref& ref);
  // Enqueues step `s` (a kernel or a library call) after `deps`.
  EventPtr launch(size_t s, const std::vector<EventPtr>& deps);

  std::shared_ptr<const CompiledProgram> program_;
  std::unique_ptr<Queue> queue_;
  std::vector<std::shared_ptr<Buffer>> pool_, inputs_;
  std::vector<std::unique_ptr<Kernel>> kernels_;  // one per step, arguments bound (none for a library call)
};

}  // namespace hetero::gpu
