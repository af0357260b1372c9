// Helpers for import tests: models from ONNX text syntax, a temporary
// directory to write model and weight files into, and error assertions.
#pragma once

#include <gtest/gtest.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.h"
#include "tests/unit/expect_error.h"

namespace hetero::test {

inline onnx::ModelProto parse_model(const char* text) {
  onnx::ModelProto proto;
  const auto status = onnx::OnnxParser::Parse(proto, text);
  if (!status.IsOK()) throw std::runtime_error("bad test model: " + status.ErrorMessage());
  return proto;
}

inline std::string serialize(const onnx::ModelProto& proto) {
  std::string bytes;
  proto.SerializeToString(&bytes);
  return bytes;
}

inline std::vector<uint8_t> to_vector(const std::string& s) { return {s.begin(), s.end()}; }

// Moves a float initializer's float_data into raw_data (how exporters store
// weights, and what import can view in place).
inline void float_data_to_raw(onnx::TensorProto& t) {
  std::string raw(reinterpret_cast<const char*>(t.float_data().data()), sizeof(float) * t.float_data_size());
  t.clear_float_data();
  t.set_raw_data(raw);
}

// A float initializer of `dims` holding start, start + 1, ... as raw_data.
inline void fill_iota(onnx::TensorProto& t, const std::string& name, std::initializer_list<int64_t> dims,
                      float start = 0) {
  t.Clear();
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  size_t n = 1;
  for (int64_t d : dims) {
    t.add_dims(d);
    n *= static_cast<size_t>(d);
  }
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), n * sizeof(float)));
}

// Byte offset of `needle` in `hay` (the payload of an initializer).
inline size_t offset_of(const std::string& hay, const std::string& needle) {
  const size_t at = hay.find(needle);
  if (at == std::string::npos) throw std::runtime_error("payload not found");
  return at;
}

class TempDir {
 public:
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "heterod-import-XXXXXX").string();
    if (!::mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string write(const std::string& name, const std::string& bytes) const {
    const auto p = path_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p.string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace hetero::test
