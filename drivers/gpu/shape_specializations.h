// GPU programs for a model whose inputs have dynamic dims (PP-OCR's image
// height and width, an audio chunk's length). The kernels take every shape
// as a compile-time constant, so a program exists per set of input shapes:
// the first inference that brings new shapes compiles them (reading the
// model again with those shapes, so that ONNX's shape inference makes every
// tensor's shape static), and the few sets of shapes used last are kept.
// A blob carries the model and every program compiled so far; importing it
// runs those shapes without compiling, and compiles only shapes it lacks.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "drivers/gpu/program_set.h"

namespace hetero::gpu {

// Sets of input shapes kept at once: each is a whole compile's kernels,
// constants and pools. The least recently used goes first.
constexpr size_t kMaxShapeSpecializations = 4;

class ShapeSpecializations {
 public:
  // `onnx`: the model as ONNX bytes (core::export_onnx), read again per new
  // set of shapes; `source` names it in messages; `inputs`, `outputs`: its
  // ports, with their dynamic dims.
  ShapeSpecializations(std::vector<uint8_t> onnx, std::string source, std::vector<driver::Port> inputs,
                       std::vector<driver::Port> outputs, std::shared_ptr<Device> device, BuildOptions options);

  const std::vector<driver::Port>& inputs() const { return inputs_; }
  const std::vector<driver::Port>& outputs() const { return outputs_; }

  // The programs for the shapes of `inputs` (already checked against the
  // ports), compiled now if they are new; fails as compiling would (and
  // remembers a refusal, so that those shapes fail at once next time).
  std::shared_ptr<const ProgramSet> get(const std::vector<core::Tensor>& inputs);
  // Every program set held now (export, warm-up).
  std::vector<std::shared_ptr<const ProgramSet>> held() const;

  std::vector<uint8_t> export_blob() const;
  // A blob of export_blob(); `bytes` starts with its magic.
  static std::shared_ptr<ShapeSpecializations> import_blob(std::span<const uint8_t> bytes, std::shared_ptr<Device> device,
                                                           BuildOptions options);
  static bool is_blob(std::span<const uint8_t> bytes);

 private:
  struct Entry {
    std::shared_ptr<const ProgramSet> set;  // null: these shapes do not compile, for `error`
    uint64_t last_use = 0;
    hetero_status status = HETERO_OK;
    std::string error;
  };
  void insert(std::vector<core::Shape> shapes, Entry entry);  // under mutex_

  const std::vector<uint8_t> onnx_;
  const std::string source_;
  const std::vector<driver::Port> inputs_, outputs_;
  const std::shared_ptr<Device> device_;
  const BuildOptions options_;
  mutable std::mutex mutex_;    // entries_, uses_
  std::mutex compile_mutex_;    // one compile at a time; lookups go on meanwhile
  std::map<std::vector<core::Shape>, Entry> entries_;
  uint64_t uses_ = 0;
};

}  // namespace hetero::gpu
