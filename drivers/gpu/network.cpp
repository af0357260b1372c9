#include "drivers/gpu/network.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace hetero::gpu {

Network::Network(std::shared_ptr<const CompiledProgram> program) : program_(std::move(program)) {
  Device& device = *program_->device;
  const NetworkPlan& plan = program_->plan;
  queue_ = device.queue();
  const DeviceTraits traits = device.traits();
  host_unified_memory_ = traits.host_unified_memory;
  host_alignment_ = std::max<size_t>(traits.host_alignment, 1);
  for (uint64_t bytes : plan.pool_bytes) pool_.push_back(device.allocate(std::max<uint64_t>(bytes, 4)));
  for (uint64_t bytes : plan.input_bytes) inputs_.push_back(bytes ? device.allocate(bytes) : nullptr);
  own_pool_ = pool_;
  own_inputs_ = inputs_;
  pool_args_.resize(pool_.size());
  input_args_.resize(inputs_.size());
  for (const Step& step : plan.steps) {
    const uint32_t s = static_cast<uint32_t>(kernels_.size());
    for (uint32_t i = 0; i < step.args.size() && !step.gemm; ++i) {
      const Ref& r = step.args[i];
      if (r.kind == Ref::Kind::Pool) pool_args_.at(r.index).emplace_back(s, i);
      if (r.kind == Ref::Kind::Input) input_args_.at(r.index).emplace_back(s, i);
    }
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

EventPtr Queue::sync_to_host(Buffer&, size_t, const std::vector<EventPtr>&) {
  fail(HETERO_NOT_SUPPORTED, "this device lends no host memory");
}

void Network::bind(Ref::Kind kind, uint32_t index, std::shared_ptr<Buffer> buffer) {
  const bool input = kind == Ref::Kind::Input;
  for (const auto& [step, arg] : (input ? input_args_ : pool_args_).at(index)) kernels_.at(step)->set_arg(arg, *buffer);
  (input ? inputs_ : pool_).at(index) = std::move(buffer);
}

void Network::unbind_lent() {
  for (uint32_t i = 0; i < inputs_.size(); ++i)
    if (inputs_[i] != own_inputs_[i]) bind(Ref::Kind::Input, i, own_inputs_[i]);
  for (uint32_t i = 0; i < pool_.size(); ++i)
    if (pool_[i] != own_pool_[i]) bind(Ref::Kind::Pool, i, own_pool_[i]);
}

namespace {

// Host memory aligned for the device, freed with the last tensor that views it.
std::shared_ptr<void> aligned_host(size_t bytes, size_t alignment) {
  const size_t size = std::max<size_t>((bytes + alignment - 1) / alignment * alignment, alignment);
  void* p = std::aligned_alloc(alignment, size);
  if (!p) fail(HETERO_OUT_OF_MEMORY, "cannot allocate " + std::to_string(size) + " bytes of host memory for outputs");
  return std::shared_ptr<void>(p, std::free);
}

}  // namespace

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
  Device& device = *program_->device;
  if (inputs.size() != inputs_.size()) fail(HETERO_INTERNAL, "GPU network: wrong input count");
  // Every command enqueued, for the one wait; a failure waits for them too,
  // before the memory they use (the caller's inputs, lent outputs) can go.
  std::vector<EventPtr> enqueued;
  // The kernels are bound to the network's own buffers again on every way out.
  struct Finish {
    Network& n;
    std::vector<EventPtr>& enqueued;
    bool done = false;
    ~Finish() {
      try {
        if (!done) n.queue_->wait(enqueued);
        n.unbind_lent();
      } catch (...) {
        // The inference's own failure, if any, is the one reported.
      }
    }
  } finish{*this, enqueued};

  std::vector<EventPtr> input_events(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs_[i]) continue;
    if (inputs[i].nbytes() != plan.input_bytes[i]) fail(HETERO_INTERNAL, "GPU network: input size differs from the plan");
    // Lent, where the device's memory is the host's and the input is aligned
    // for it (a tensor the project allocates is; a caller's may not be).
    if (host_unified_memory_) {
      void* host = const_cast<void*>(inputs[i].raw());  // read only: inputs are never a step's output
      if (auto lent = device.wrap(host, inputs[i].nbytes(), true)) {
        bind(Ref::Kind::Input, uint32_t(i), std::move(lent));
        continue;
      }
    }
    input_events[i] = queue_->write(*inputs_[i], inputs[i].raw(), inputs[i].nbytes(), {});
    enqueued.push_back(input_events[i]);
    device.count_copied(inputs[i].nbytes());
  }
  // The outputs' pool buffers, lent from fresh host memory that becomes the
  // output tensors: fresh for every inference, because a caller may keep
  // the outputs of the last one. (Other tensors that share such a buffer
  // earlier in the plan use the lent memory as they would the pool's.)
  std::vector<std::shared_ptr<void>> lent_memory(pool_.size());
  if (host_unified_memory_)
    for (const NetworkPlan::Output& o : plan.outputs) {
      if (o.ref.kind != Ref::Kind::Pool || lent_memory[o.ref.index]) continue;
      const uint64_t bytes = plan.pool_bytes.at(o.ref.index);
      if (!bytes) continue;
      std::shared_ptr<void> host = aligned_host(bytes, host_alignment_);
      if (auto lent = device.wrap(host.get(), bytes, false)) {
        bind(Ref::Kind::Pool, o.ref.index, std::move(lent));
        lent_memory[o.ref.index] = std::move(host);
      }
    }

  std::vector<EventPtr> events(plan.steps.size());
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& step = plan.steps[s];
    std::vector<EventPtr> deps;
    for (uint32_t d : step.deps) deps.push_back(events[d]);
    for (const Ref& r : step.args)
      if (r.kind == Ref::Kind::Input && input_events[r.index]) deps.push_back(input_events[r.index]);
    events[s] = launch(s, deps);
    enqueued.push_back(events[s]);
  }
  std::vector<core::Tensor> outputs;
  std::vector<bool> synced(pool_.size(), false);
  for (const NetworkPlan::Output& o : plan.outputs) {
    if (o.ref.kind == Ref::Kind::Constant) {
      outputs.push_back(plan.constants.at(o.ref.index).clone().reshaped(o.shape));
      continue;
    }
    if (o.ref.kind == Ref::Kind::Input) {
      outputs.push_back(inputs.at(o.ref.index).clone().reshaped(o.shape));
      continue;
    }
    std::vector<EventPtr> deps;
    if (o.last_writer >= 0) deps.push_back(events[size_t(o.last_writer)]);
    if (const std::shared_ptr<void>& host = lent_memory[o.ref.index]) {
      core::Tensor t = core::Tensor::wrap(o.dtype, o.shape, host.get(), host);
      if (t.nbytes() && !synced[o.ref.index]) {
        // The whole buffer: two outputs may view one.
        enqueued.push_back(queue_->sync_to_host(buffer(o.ref), plan.pool_bytes[o.ref.index], deps));
        synced[o.ref.index] = true;
      }
      outputs.push_back(std::move(t));
      continue;
    }
    core::Tensor t = core::Tensor::allocate(o.dtype, o.shape, false);
    if (t.nbytes()) {
      enqueued.push_back(queue_->read(buffer(o.ref), t.raw(), t.nbytes(), deps));
      device.count_copied(t.nbytes());
    }
    outputs.push_back(std::move(t));
  }
  // The one wait: the reads, and every step, so that no kernel outlives the
  // call even on a queue that runs commands out of order.
  finish.done = true;
  queue_->wait(enqueued);
  unbind_lent();
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
