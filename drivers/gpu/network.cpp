#include "drivers/gpu/network.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace hetero::gpu {

Network::Network(std::shared_ptr<const CompiledProgram> program) : program_(std::move(program)) {
  Device& device = *program_->device;
  const NetworkPlan& plan = program_->plan;
  queue_ = device.queue();
  for (uint64_t bytes : plan.pool_bytes) pool_.push_back(device.allocate(std::max<uint64_t>(bytes, 4)));
  for (uint64_t bytes : plan.input_bytes) inputs_.push_back(bytes ? device.allocate(bytes) : nullptr);
  for (const Step& step : plan.steps) {
    if (step.gemm) {
      if (step.args.size() != 3) fail(HETERO_INTERNAL, "GPU network: a library call needs a, b and c");
      kernels_.push_back(nullptr);
      continue;
    }
    const KernelRef& k = plan.kernels.at(step.kernel);
    auto kernel = device.kernel(*program_->executables.at(k.program), k.name);
    for (size_t i = 0; i < step.args.size(); ++i) kernel->set_arg(static_cast<uint32_t>(i), buffer(step.args[i]));
    kernels_.push_back(std::move(kernel));
  }
}

EventPtr Queue::gemm(const LibraryGemm&, Buffer&, Buffer&, Buffer&, const std::vector<EventPtr>&) {
  fail(HETERO_NOT_SUPPORTED, "this device has no GEMM library");
}

EventPtr Network::launch(size_t s, const std::vector<EventPtr>& deps) {
  const Step& step = program_->plan.steps[s];
  if (step.gemm) return queue_->gemm(*step.gemm, buffer(step.args[0]), buffer(step.args[1]), buffer(step.args[2]), deps);
  return queue_->launch(*kernels_[s], step.range, deps);
}

Buffer& Network::buffer(const Ref& ref) {
  std::shared_ptr<Buffer> b;
  switch (ref.kind) {
    case Ref::Kind::Input: b = inputs_.at(ref.index); break;
    case Ref::Kind::Constant: b = program_->constant_buffers.at(ref.index); break;
    case Ref::Kind::Pool: b = pool_.at(ref.index); break;
  }
  if (!b) fail(HETERO_INTERNAL, "GPU network: a step uses an input the plan gave no buffer");
  return *b;
}

std::vector<core::Tensor> Network::execute(const std::vector<core::Tensor>& inputs) {
  const NetworkPlan& plan = program_->plan;
  if (inputs.size() != inputs_.size()) fail(HETERO_INTERNAL, "GPU network: wrong input count");
  std::vector<EventPtr> input_events(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs_[i]) continue;
    if (inputs[i].nbytes() != plan.input_bytes[i]) fail(HETERO_INTERNAL, "GPU network: input size differs from the plan");
    input_events[i] = queue_->write(*inputs_[i], inputs[i].raw(), inputs[i].nbytes(), {});
  }
  std::vector<EventPtr> events(plan.steps.size());
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& step = plan.steps[s];
    std::vector<EventPtr> deps;
    for (uint32_t d : step.deps) deps.push_back(events[d]);
    for (const Ref& r : step.args)
      if (r.kind == Ref::Kind::Input && input_events[r.index]) deps.push_back(input_events[r.index]);
    events[s] = launch(s, deps);
  }
  std::vector<core::Tensor> outputs;
  std::vector<EventPtr> reads;
  for (const NetworkPlan::Output& o : plan.outputs) {
    if (o.ref.kind == Ref::Kind::Constant) {
      outputs.push_back(plan.constants.at(o.ref.index).clone().reshaped(o.shape));
      continue;
    }
    if (o.ref.kind == Ref::Kind::Input) {
      outputs.push_back(inputs.at(o.ref.index).clone().reshaped(o.shape));
      continue;
    }
    core::Tensor t = core::Tensor::allocate(core::DType::F32, o.shape, false);
    if (t.nbytes()) {
      std::vector<EventPtr> deps;
      if (o.last_writer >= 0) deps.push_back(events[size_t(o.last_writer)]);
      reads.push_back(queue_->read(buffer(o.ref), t.raw(), t.nbytes(), deps));
    }
    outputs.push_back(std::move(t));
  }
  // The one wait: the reads, and every step, so that no kernel outlives the
  // call even on a queue that runs commands out of order.
  reads.insert(reads.end(), events.begin(), events.end());
  for (const EventPtr& e : input_events)
    if (e) reads.push_back(e);
  queue_->wait(reads);
  return outputs;
}

void Network::run_steps(size_t times) {
  const NetworkPlan& plan = program_->plan;
  std::vector<EventPtr> events(plan.steps.size()), all;
  for (size_t t = 0; t < times; ++t)
    for (size_t s = 0; s < plan.steps.size(); ++s) {
      // Each step waits for its own dependencies and for its previous run.
      std::vector<EventPtr> deps;
      for (uint32_t d : plan.steps[s].deps) deps.push_back(events[d]);
      if (events[s]) deps.push_back(events[s]);
      events[s] = launch(s, deps);
      all.push_back(events[s]);
    }
  queue_->wait(all);
}

}  // namespace hetero::gpu
