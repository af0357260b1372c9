// A pipeline file: a model made of stages (docs/streams.md, conf/pipelines/).
// Model stages are ONNX models (or blobs), run by their devices' drivers;
// built-in stream stages scale a tensor, keep a sliding window over a time
// axis, or gather what a stage made during one call. Stages name what they
// read: a pipeline input ("audio"), a built-in stage ("frames"), a model
// stage's output ("mel.output", the stage's name, a dot, the model's output
// name) or, for a model input, a number.
//
// This file reads the YAML into a PipelineSpec and checks what it can
// without the models; pipeline_model.h compiles it. Every error names the
// file and line.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace hetero::pipeline {

// What a stage input reads.
struct SourceSpec {
  std::string name;  // a pipeline input, a built-in stage, or "stage.output"; empty for a constant
  std::vector<double> values;  // a constant: a number, or a list of numbers for an input of one dim
  bool scalar = true;          // a constant given as one number
  int line = 0;
  bool constant() const noexcept { return name.empty(); }
};

enum class StageKind { Model, Scale, Window, Concat };

struct StageSpec {
  std::string name;
  StageKind kind = StageKind::Model;
  int line = 0;

  // A model stage.
  std::string model;   // the model file's path, absolute
  std::string device;  // empty: the pipeline's
  std::vector<std::pair<std::string, SourceSpec>> inputs;  // model input -> what it reads, in file order
  std::map<std::string, std::string> state;                // model output -> model input, carried over

  // A built-in stage: what it reads.
  SourceSpec input;
  double a = 1, b = 0;  // scale: x * a + b
  // window: the last `size` steps along `axis`, emitted after every `step`
  // new ones; without prefill the first once `size` steps have come, with
  // it (zeros before the stream) after the first `step`.
  // concat: every tensor of the call joined along `axis`.
  int64_t axis = 0, size = 0, step = 0;
  bool prefill = false;
};

struct InputSpec {
  std::string name;
  core::DType dtype = core::DType::Undefined;
  std::vector<int64_t> shape;  // -1: any size
  int line = 0;
};

struct PipelineSpec {
  std::string file;  // for messages
  std::vector<InputSpec> inputs;
  std::vector<StageSpec> stages;
  std::vector<std::pair<std::string, SourceSpec>> outputs;  // in file order
};

// A path the core reads as a pipeline file rather than a model: its name
// ends in .yaml or .yml.
bool is_pipeline_path(const std::string& path);

// Reads and checks the pipeline file at `path` (at most 1 MiB). Model paths
// are relative to the file's directory and may not leave it: a pipeline file
// in a directory clients may load models from names no file outside it.
// Fails with INVALID_ARGUMENT "FILE:LINE: ...", or the file's own error.
PipelineSpec read_pipeline_file(const std::string& path);
// The same for `text`, read from `file`, its models under `dir`.
PipelineSpec parse_pipeline(const std::string& text, const std::string& file, const std::string& dir);

}  // namespace hetero::pipeline
