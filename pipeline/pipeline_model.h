// A pipeline (pipeline_spec.h) compiled: each model stage compiled by its
// device's driver (through the core's blob cache), the stages wired, and
// served as one compiled model, so that every front end (the C ABI, the
// daemon's protocols, its sequences) runs it as it runs a model.
//
// Ports: the pipeline's declared inputs and outputs, then what its stages
// carry from one call to the next, each as an input and an output of the
// same name but `_next`: a window's buffer (`frames.window`) and step count
// (`frames.steps`), and a model stage's `state:` (`vad.state`). The daemon
// pairs those by their names and keeps them in a sequence; a caller of its
// own passes each output back as the next call's input.
//
// One inference runs the stages in file order. A stage runs once per
// tensor its input holds this call: a pipeline input holds one; a window
// holds each window it emitted (none, one or more); a model stage holds one
// output per run; a concat joins what its input holds into one. Tensors pass
// from stage to stage as they are, without copies but for what a window
// joins and a concat gathers.
#pragma once

#include <memory>
#include <string>

#include "core/driver.h"
#include "core/runtime.h"

namespace hetero::pipeline {

// Reads the pipeline file at `path` and compiles its model stages for
// `device` (a stage's own `device:` wins) with `config`. Fails with the
// file's error ("FILE:LINE: ..."), or a stage's ("FILE:LINE: stage 'mel':
// ..."), with the status of the failure under it.
std::unique_ptr<driver::CompiledModel> compile_pipeline(const core::Runtime& runtime, const std::string& path,
                                                        const std::string& device, const driver::Config& config);

}  // namespace hetero::pipeline
