#include "drivers/gpu/program_set.h"

#include <cstring>
#include <optional>

#include "core/byte_io.h"
#include "core/error.h"
#include "core/ir_codec.h"
#include "core/ports.h"

namespace hetero::gpu {

namespace {

constexpr char kMagic[8] = {'H', 'G', 'P', 'U', 'S', 'P', 'E', 'C'};
constexpr uint32_t kVersion = 1;

// Builds the program for `choices`; where the build meets an If whose
// outcome is open, records the condition and builds once per outcome.
void explore(const core::Model& model, const std::shared_ptr<Device>& device, const BuildOptions& options,
             ConditionChoices& choices, std::vector<int8_t>& outcomes, ProgramSet& set) {
  std::optional<OpenCondition> open;
  if (set.variants.size() == kMaxProgramVariants)
    fail(HETERO_NOT_SUPPORTED, "the model's If conditions known only at run time need more than " +
                                   std::to_string(kMaxProgramVariants) + " programs");
  try {
    set.variants.push_back({outcomes, build_program(model, device, options, choices), HETERO_OK, {}});
    return;
  } catch (OpenCondition& c) {
    open = std::move(c);
  } catch (const Failure& e) {
    // A branch the device cannot run, recorded for the inferences that take
    // it; anything else (no condition yet: the model's own error; a
    // compile's deadline, memory) ends the compile.
    if (outcomes.empty() || (e.status() != HETERO_NOT_SUPPORTED && e.status() != HETERO_INVALID_MODEL)) throw;
    set.variants.push_back({outcomes, nullptr, e.status(), e.what()});
    return;
  }
  size_t k = 0;
  while (k < set.conditions.size() && set.conditions[k].node != open->condition.node) ++k;
  if (k == set.conditions.size()) set.conditions.push_back(std::move(open->condition));
  if (outcomes.size() < set.conditions.size()) outcomes.resize(set.conditions.size(), -1);
  const std::string node = set.conditions[k].node;
  for (const bool outcome : {true, false}) {
    choices[node] = outcome;
    outcomes[k] = outcome ? 1 : 0;
    explore(model, device, options, choices, outcomes, set);
  }
  choices.erase(node);
  outcomes[k] = -1;
}

}  // namespace

size_t ProgramSet::select(const std::vector<core::Tensor>& inputs) const {
  if (conditions.empty()) return 0;
  std::vector<int8_t> known(conditions.size(), -1);  // worked out when first needed
  for (size_t v = 0; v < variants.size(); ++v) {
    bool match = true;
    for (size_t k = 0; k < conditions.size() && match; ++k) {
      const int8_t want = variants[v].outcomes[k];
      if (want < 0) continue;
      if (known[k] < 0) known[k] = conditions[k].evaluate(this->inputs, inputs) ? 1 : 0;
      match = known[k] == want;
    }
    if (!match) continue;
    if (!variants[v].program)
      fail(variants[v].status, "the inputs take the model down a branch the GPU could not compile: " + variants[v].error);
    return v;
  }
  fail(HETERO_INTERNAL, "no GPU program matches the outcome of the model's If conditions");
}

std::shared_ptr<const ProgramSet> build_program_set(const core::Model& model, std::shared_ptr<Device> device,
                                                    const BuildOptions& options) {
  auto set = std::make_shared<ProgramSet>();
  ConditionChoices choices;
  std::vector<int8_t> outcomes;
  explore(model, device, options, choices, outcomes, *set);
  const ProgramSet::Variant* built = nullptr;
  for (ProgramSet::Variant& v : set->variants) {
    v.outcomes.resize(set->conditions.size(), -1);
    if (v.program && !built) built = &v;
  }
  if (!built) fail(set->variants[0].status, set->variants[0].error);
  set->inputs = built->program->inputs;
  set->outputs = built->program->outputs;
  return set;
}

std::vector<uint8_t> export_program_set(const ProgramSet& set) {
  if (set.conditions.empty()) return export_program(*set.variants.at(0).program);
  // The ports once, for the variants that have no program.
  core::ByteWriter w;
  for (char c : kMagic) w.u8(static_cast<uint8_t>(c));
  w.u32(kVersion);
  core::encode_ports(w, set.inputs);
  core::encode_ports(w, set.outputs);
  w.u32(static_cast<uint32_t>(set.conditions.size()));
  for (const HostCondition& c : set.conditions) {
    w.string(c.node);
    w.sized(core::encode_model(*c.cone));
  }
  w.u32(static_cast<uint32_t>(set.variants.size()));
  for (const ProgramSet::Variant& v : set.variants) {
    for (int8_t o : v.outcomes) w.u8(static_cast<uint8_t>(o + 1));
    if (!v.program) {
      w.u64(0);
      w.u32(static_cast<uint32_t>(v.status));
      w.string(v.error);
      continue;
    }
    w.sized(export_program(*v.program));
  }
  return std::move(w.bytes());
}

std::shared_ptr<const ProgramSet> import_program_set(std::span<const uint8_t> bytes, std::shared_ptr<Device> device) {
  auto set = std::make_shared<ProgramSet>();
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    set->variants.push_back({{}, import_program(bytes, std::move(device)), HETERO_OK, {}});  // one program
    set->inputs = set->variants[0].program->inputs;
    set->outputs = set->variants[0].program->outputs;
    return set;
  }
  core::ByteReader r(bytes, device->name() + " blob");
  r.take(sizeof kMagic, "magic");
  const auto version = r.uint(4, "version");
  if (version != kVersion)
    r.corrupt("program set format version " + std::to_string(version) + ", this driver reads " + std::to_string(kVersion));
  set->inputs = core::decode_ports(r, "inputs");
  set->outputs = core::decode_ports(r, "outputs");
  set->conditions.resize(r.count("conditions", 3, 13));
  for (HostCondition& c : set->conditions) {
    c.node = r.string("condition.node", 4096);
    c.cone = core::decode_model(r.sized("condition.cone"), device->name() + " blob: condition of If '" + c.node + "'");
    if (c.cone->graph.outputs.size() != 1) r.corrupt("the condition of If '" + c.node + "' does not have one output");
  }
  set->variants.resize(r.count("variants", kMaxProgramVariants, 9));
  if (set->variants.empty()) r.corrupt("it holds no program");
  for (ProgramSet::Variant& v : set->variants) {
    for (size_t k = 0; k < set->conditions.size(); ++k) {
      const uint8_t o = r.u8("variant.outcome");
      if (o > 2) r.corrupt("a variant has an unknown outcome " + std::to_string(o));
      v.outcomes.push_back(static_cast<int8_t>(o - 1));
    }
    const auto program = r.sized("variant.program");
    if (!program.empty()) {
      v.program = import_program(program, device);
      if (v.program->inputs.size() != set->inputs.size() || v.program->outputs.size() != set->outputs.size())
        r.corrupt("a program's inputs or outputs differ from the model's");
      continue;
    }
    v.status = static_cast<hetero_status>(r.uint(4, "variant.status"));
    v.error = r.string("variant.error");
    if (v.status == HETERO_OK) r.corrupt("a variant without a program gives no error");
  }
  if (r.remaining()) r.corrupt(std::to_string(r.remaining()) + " bytes after the end");
  return set;
}

}  // namespace hetero::gpu
