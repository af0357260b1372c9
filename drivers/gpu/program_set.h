// A model's programs: one per outcome of the If conditions the host works
// out from the inputs (host_conditions.h), and the conditions themselves;
// a model without such an If has one program and no conditions. What the GPU
// drivers' compiled models hold and their blobs carry.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "drivers/gpu/host_conditions.h"
#include "drivers/gpu/program.h"

namespace hetero::gpu {

// At most this many programs per model (three conditions met in turn): each
// outcome costs a whole compile, and its kernels and constants.
constexpr size_t kMaxProgramVariants = 8;

struct ProgramSet {
  std::vector<HostCondition> conditions;
  struct Variant {
    // Per condition, the outcome this program was built for: 1 or 0, or -1
    // where the program never met that condition (its branch was not taken).
    std::vector<int8_t> outcomes;
    // Null where these outcomes lead to a branch that cannot run with the
    // model's input shapes (or on the device): inferences taking it fail
    // with `error`, while the other outcomes run.
    std::shared_ptr<const CompiledProgram> program;
    hetero_status status = HETERO_OK;
    std::string error;
  };
  std::vector<Variant> variants;

  std::vector<driver::Port> inputs, outputs;  // the model's
  // The index of the variant for one inference's `inputs` (the model's
  // inputs, in order): each condition it depends on worked out on the host.
  // Fails with the variant's error where it has no program.
  size_t select(const std::vector<core::Tensor>& inputs) const;
};

// Builds the program of every outcome: a build that meets an If whose
// outcome is still open builds again for each. Fails when no outcome
// builds (with the first one's error), and with NOT_SUPPORTED past
// kMaxProgramVariants.
std::shared_ptr<const ProgramSet> build_program_set(const core::Model& model, std::shared_ptr<Device> device,
                                                    const BuildOptions& options);

// A model with one program is exported as that program's blob (plan_codec),
// as before conditions existed; several, as a container of the conditions'
// cones (core/ir_codec) and every variant's program blob.
std::vector<uint8_t> export_program_set(const ProgramSet& set);
std::shared_ptr<const ProgramSet> import_program_set(std::span<const uint8_t> bytes, std::shared_ptr<Device> device);

}  // namespace hetero::gpu
