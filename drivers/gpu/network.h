// Network: one per stream (infer request), the third of the three levels in
// drivers/gpu/README.md. Primitive instances are
// the plan's steps with their kernels' arguments bound once to this
// network's buffers (pooled intermediates, inputs) and the program's shared
// constants. execute() enqueues the input writes, every kernel and the
// output reads with events and waits once, at the end. On a device whose
// memory is the host's it writes and reads nothing instead: the inputs'
// memory and fresh host memory for the outputs are lent to the device for
// the one inference (drivers/gpu/README.md, "Zero-copy hand-offs").
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
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
  // Binds `buffer` as input `index` (Ref::Kind::Input) or pool buffer
  // `index` (Ref::Kind::Pool) to every kernel argument that uses it.
  void bind(Ref::Kind kind, uint32_t index, std::shared_ptr<Buffer> buffer);
  // Binds the network's own buffers again where execute() lent others (where
  // the buffer bound is not the network's own).
  void unbind_lent();

  std::shared_ptr<const CompiledProgram> program_;
  std::unique_ptr<Queue> queue_;
  // The buffers the kernels are bound to now: the network's own (own_pool_,
  // own_inputs_) but while execute() lends host memory.
  std::vector<std::shared_ptr<Buffer>> pool_, inputs_, own_pool_, own_inputs_;
  // (step, argument) of every kernel argument bound to each input and pool
  // buffer.
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> input_args_, pool_args_;
  bool host_unified_memory_ = false;
  size_t host_alignment_ = 1;
  std::vector<std::unique_ptr<Kernel>> kernels_;  // one per step, arguments bound (none for a library call)
};

}  // namespace hetero::gpu
