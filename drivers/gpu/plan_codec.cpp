// The GPU drivers' blob: ports, the network plan, constants and the device
// binaries of every kernel batch. Importing loads the binaries; no kernel
// source is compiled. Every count, index and size is checked before it is
// used (BLOB_CORRUPT naming the field).
#include <cstdint>
#include <cstring>

#include "core/error.h"
#include "core/ir_codec.h"
#include "core/mapped_file.h"
#include "drivers/gpu/kernels_cache.h"
#include "drivers/gpu/program.h"
#include "drivers/gpu/tuner.h"

namespace hetero::gpu {

namespace {

constexpr char kMagic[8] = {'H', 'G', 'P', 'U', 'P', 'L', 'A', 'N'};
constexpr uint32_t kVersion = 2;  // 2: the tuning records, library calls
constexpr uint32_t kMaxItems = 1u << 24;

void write_ref(core::ByteWriter& w, const Ref& ref) {
  w.u8(static_cast<uint8_t>(ref.kind));
  w.u32(ref.index);
}

Ref read_ref(core::ByteReader& r, const NetworkPlan& plan, const std::string& what) {
  Ref ref;
  const uint8_t kind = r.u8(what + ".kind");
  ref.index = static_cast<uint32_t>(r.uint(4, what + ".index"));
  size_t limit = 0;
  switch (kind) {
    case 0: limit = plan.input_bytes.size(); break;
    case 1: limit = plan.constants.size(); break;
    case 2: limit = plan.pool_bytes.size(); break;
    default: r.corrupt(what + " has an unknown kind " + std::to_string(kind));
  }
  if (ref.index >= limit) r.corrupt(what + " refers to buffer " + std::to_string(ref.index) + " of " + std::to_string(limit));
  ref.kind = static_cast<Ref::Kind>(kind);
  return ref;
}

uint64_t buffer_bytes(const NetworkPlan& plan, const Ref& ref) {
  switch (ref.kind) {
    case Ref::Kind::Input: return plan.input_bytes[ref.index];
    case Ref::Kind::Constant: return plan.constants[ref.index].nbytes();
    case Ref::Kind::Pool: return plan.pool_bytes[ref.index];
  }
  return 0;
}

// A library call reads and writes what its sizes say, unchecked by the
// library: every matrix must lie inside its buffer.
void check_library_call(core::ByteReader& r, const NetworkPlan& plan, const Step& step, size_t s) {
  const LibraryGemm& g = *step.gemm;
  const std::string what = "step " + std::to_string(s) + " (a library call)";
  if (step.args.size() != 3) r.corrupt(what + " has " + std::to_string(step.args.size()) + " arguments, not 3");
  if (g.batch == 0) r.corrupt(what + " has no batch");
  const uint64_t extent[3] = {uint64_t(g.m) * g.k, uint64_t(g.k) * g.n, uint64_t(g.m) * g.n};
  const uint64_t stride[3] = {g.a_stride, g.b_stride, g.c_stride};
  for (size_t i = 0; i < 3; ++i) {
    // In elements; a size that would overflow is past any buffer too.
    if (extent[i] > UINT64_MAX / (2 * sizeof(float))) r.corrupt(what + " has a matrix past any buffer");
    const uint64_t limit = UINT64_MAX / sizeof(float) - extent[i];
    if (g.batch > 1 && stride[i] > limit / (g.batch - 1)) r.corrupt(what + " has a stride past any buffer");
    const uint64_t need = (stride[i] * (g.batch - 1) + extent[i]) * sizeof(float);
    if (need > buffer_bytes(plan, step.args[i]))
      r.corrupt(what + " reaches past its " + "abc"[i] + " buffer (" + std::to_string(need) + " bytes)");
  }
}

}  // namespace

std::vector<uint8_t> export_program(const CompiledProgram& program) {
  const NetworkPlan& plan = program.plan;
  core::ByteWriter w;
  for (char c : kMagic) w.u8(static_cast<uint8_t>(c));
  w.u32(kVersion);
  core::encode_ports(w, program.inputs);
  core::encode_ports(w, program.outputs);
  w.u32(static_cast<uint32_t>(plan.programs.size()));
  for (size_t i = 0; i < plan.programs.size(); ++i) {
    w.string(plan.programs[i].options);
    w.sized(program.executables.at(i)->binary());
  }
  w.u32(static_cast<uint32_t>(plan.kernels.size()));
  for (const KernelRef& k : plan.kernels) {
    w.string(k.name);
    w.u32(k.program);
  }
  w.u32(static_cast<uint32_t>(plan.constants.size()));
  for (const core::Tensor& c : plan.constants) core::encode_tensor(w, c);
  w.u32(static_cast<uint32_t>(plan.input_bytes.size()));
  for (uint64_t b : plan.input_bytes) w.u64(b);
  w.u32(static_cast<uint32_t>(plan.pool_bytes.size()));
  for (uint64_t b : plan.pool_bytes) w.u64(b);
  w.u32(static_cast<uint32_t>(plan.steps.size()));
  for (const Step& s : plan.steps) {
    w.u8(s.gemm ? 1 : 0);
    if (s.gemm) {
      for (uint32_t v : {s.gemm->m, s.gemm->n, s.gemm->k, s.gemm->batch}) w.u32(v);
      for (uint64_t v : {s.gemm->a_stride, s.gemm->b_stride, s.gemm->c_stride}) w.u64(v);
    }
    w.u32(s.kernel);
    w.string(s.node);
    w.u32(static_cast<uint32_t>(s.args.size()));
    for (const Ref& a : s.args) write_ref(w, a);
    w.u32(s.range.dims);
    for (size_t g : s.range.global) w.u64(g);
    for (size_t l : s.range.local) w.u64(l);
    w.u32(static_cast<uint32_t>(s.deps.size()));
    for (uint32_t d : s.deps) w.u32(d);
  }
  w.u32(static_cast<uint32_t>(plan.outputs.size()));
  for (const NetworkPlan::Output& o : plan.outputs) {
    write_ref(w, o.ref);
    w.u32(static_cast<uint32_t>(o.shape.size()));
    for (int64_t d : o.shape) w.i64(d);
    w.u32(static_cast<uint32_t>(o.last_writer));
  }
  w.u32(static_cast<uint32_t>(plan.tuning.size()));
  for (const TuningRecord& t : plan.tuning) {
    w.string(t.key);
    w.string(t.variant);
    w.u8(t.level);
  }
  w.u64(plan.intermediate_bytes);
  return std::move(w.bytes());
}

std::shared_ptr<CompiledProgram> import_program(std::span<const uint8_t> blob, std::shared_ptr<Device> device) {
  // Constants view one aligned copy of the blob (the caller's bytes live
  // only for this call).
  std::shared_ptr<const void> block = core::aligned_block(blob.empty() ? 1 : blob.size());
  std::memcpy(const_cast<void*>(block.get()), blob.data(), blob.size());
  core::ByteReader r(std::span(static_cast<const uint8_t*>(block.get()), blob.size()), device->name() + " blob");
  auto magic = r.take(sizeof kMagic, "magic");
  if (std::memcmp(magic.data(), kMagic, sizeof kMagic) != 0) r.corrupt("it is not a GPU driver blob (bad magic)");
  const auto version = r.uint(4, "version");
  if (version != kVersion)
    r.corrupt("format version " + std::to_string(version) + ", this driver reads " + std::to_string(kVersion));

  auto program = std::make_shared<CompiledProgram>();
  program->device = device;
  NetworkPlan& plan = program->plan;
  program->inputs = core::decode_ports(r, "inputs");
  program->outputs = core::decode_ports(r, "outputs");
  plan.programs.resize(r.count("programs", kMaxItems, 12));
  for (ProgramSource& ps : plan.programs) {
    ps.options = r.string("program.options");
    program->executables.push_back(device->load(r.sized("program binary"), ps.options));
  }
  plan.kernels.resize(r.count("kernels", kMaxItems, 8));
  for (KernelRef& k : plan.kernels) {
    k.name = r.string("kernel.name", 256);
    k.program = static_cast<uint32_t>(r.uint(4, "kernel.program"));
    if (k.program >= plan.programs.size()) r.corrupt("kernel '" + k.name + "' names a program that is not there");
  }
  const uint32_t nconst = r.count("constants", kMaxItems, 8);
  for (uint32_t i = 0; i < nconst; ++i) plan.constants.push_back(core::decode_tensor(r, "constant", block));
  plan.input_bytes.resize(r.count("input_bytes", kMaxItems, 8));
  for (uint64_t& b : plan.input_bytes) b = r.uint(8, "input_bytes");
  if (plan.input_bytes.size() != program->inputs.size()) r.corrupt("input buffers differ from the inputs");
  plan.pool_bytes.resize(r.count("pool_bytes", kMaxItems, 8));
  for (uint64_t& b : plan.pool_bytes) b = r.uint(8, "pool_bytes");
  plan.steps.resize(r.count("steps", kMaxItems, 16));
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    Step& step = plan.steps[s];
    const uint8_t library = r.u8("step.library");
    if (library > 1) r.corrupt("step " + std::to_string(s) + " has an unknown kind " + std::to_string(library));
    if (library) {
      LibraryGemm g;
      for (uint32_t* v : {&g.m, &g.n, &g.k, &g.batch}) *v = static_cast<uint32_t>(r.uint(4, "step.gemm"));
      for (uint64_t* v : {&g.a_stride, &g.b_stride, &g.c_stride}) *v = r.uint(8, "step.gemm.stride");
      step.gemm = g;
    }
    step.kernel = static_cast<uint32_t>(r.uint(4, "step.kernel"));
    if (!library && step.kernel >= plan.kernels.size())
      r.corrupt("step " + std::to_string(s) + " names a kernel that is not there");
    step.node = r.string("step.node");
    step.args.resize(r.count("step.args", 256, 5));
    for (Ref& a : step.args) a = read_ref(r, plan, "step.arg");
    step.range.dims = static_cast<uint32_t>(r.uint(4, "step.dims"));
    if (step.range.dims < 1 || step.range.dims > 3) r.corrupt("step " + std::to_string(s) + " has " + std::to_string(step.range.dims) + " dimensions");
    for (size_t& g : step.range.global) g = r.uint(8, "step.global");
    for (size_t& l : step.range.local) l = r.uint(8, "step.local");
    step.deps.resize(r.count("step.deps", kMaxItems, 4));
    for (uint32_t& d : step.deps) {
      d = static_cast<uint32_t>(r.uint(4, "step.dep"));
      if (d >= s) r.corrupt("step " + std::to_string(s) + " waits for a later step");
    }
    if (step.gemm) check_library_call(r, plan, step, s);
  }
  plan.outputs.resize(r.count("outputs", kMaxItems, 13));
  if (plan.outputs.size() != program->outputs.size()) r.corrupt("plan outputs differ from the outputs");
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    NetworkPlan::Output& o = plan.outputs[i];
    // The element type is the output port's (read above with the ports).
    o.dtype = program->outputs[i].dtype;
    if (!is_device_dtype(o.dtype))
      r.corrupt("output " + std::to_string(i) + " is " + core::dtype_name(o.dtype) + ", which no GPU tensor holds");
    o.ref = read_ref(r, plan, "output");
    o.shape.resize(r.count("output.rank", 64, 8));
    for (int64_t& d : o.shape) {
      d = r.i64("output.dim");
      if (d < 0) r.corrupt("output has a negative dimension");
    }
    o.last_writer = static_cast<int32_t>(r.uint(4, "output.last_writer"));
    if (o.last_writer < -1 || o.last_writer >= static_cast<int32_t>(plan.steps.size())) r.corrupt("output waits for a step that is not there");
    if (o.ref.kind == Ref::Kind::Pool && core::shape_numel(o.shape) * core::dtype_size(o.dtype) > plan.pool_bytes[o.ref.index])
      r.corrupt("output is larger than its buffer");
  }
  plan.tuning.resize(r.count("tuning", kMaxItems, 10));
  for (TuningRecord& t : plan.tuning) {
    t.key = r.string("tuning.key", 4096);
    t.variant = r.string("tuning.variant", 256);
    if (!KernelVariant::parse(t.variant)) r.corrupt("tuning record '" + t.key + "' has an unknown variant '" + t.variant + "'");
    t.level = r.u8("tuning.level");
    if (t.level > static_cast<uint8_t>(Tuning::Full)) r.corrupt("tuning record '" + t.key + "' has an unknown level");
  }
  plan.intermediate_bytes = r.uint(8, "intermediate_bytes");
  if (r.remaining()) r.corrupt(std::to_string(r.remaining()) + " bytes after the end");
  for (const core::Tensor& c : plan.constants)
    program->constant_buffers.push_back(device->allocate(std::max<size_t>(c.nbytes(), 4), c.nbytes() ? c.raw() : nullptr));
  // The choices the binaries were built with: a later compile of the same
  // shapes on this device need not tune them again.
  remember_choices(device->name(), plan.tuning);
  return program;
}

}  // namespace hetero::gpu
