// What the programs that write the tests' ONNX fixtures at build time share:
// a model parsed from ONNX's text syntax (onnx/defs/parser.h), and a message
// written to its file. Each program adds what its models need in between
// (weights, odd names).
#pragma once

#include <google/protobuf/message_lite.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <string>

namespace hetero::test {

// The model `text` describes, or nullopt after saying on stderr why not:
// "`program`: `what`: the parser's message".
inline std::optional<onnx::ModelProto> parse_model_text(const char* program, const std::string& what,
                                                        const std::string& text) {
  onnx::ModelProto model;
  const auto status = onnx::OnnxParser::Parse(model, text.c_str());
  if (status.IsOK()) return model;
  std::fprintf(stderr, "%s: %s: %s\n", program, what.c_str(), status.ErrorMessage().c_str());
  return std::nullopt;
}

// Whether `message` was serialised and written whole to `path`.
inline bool write_message(const std::string& path, const google::protobuf::MessageLite& message) {
  std::string bytes;
  if (!message.SerializeToString(&bytes)) return false;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

}  // namespace hetero::test
