// ONNX import of bad input: every case is an error with the right status and
// a message naming the file and the node, tensor or field at fault.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "core/onnx_import.h"
#include "tests/unit/onnx_test_files.h"

namespace hetero::test {
namespace {

constexpr const char* kSmallModel = R"ONNX(
  <ir_version: 8, opset_import: ["" : 17]>
  agraph (float[2] X) => (float[2] Y) {
    T = Relu(X)
    Y = Add(T, W)
  }
)ONNX";

// kSmallModel with W as a raw_data initializer.
onnx::ModelProto small_model() {
  onnx::ModelProto m = parse_model(kSmallModel);
  fill_iota(*m.mutable_graph()->add_initializer(), "W", {2});
  return m;
}

void import_bytes(const onnx::ModelProto& m) { core::import_onnx_bytes(to_vector(serialize(m)), {}, "test.onnx"); }

TEST(OnnxImportErrors, MissingAndEmptyFiles) {
  TempDir dir;
  const std::string missing = (dir.path() / "nope.onnx").string();
  expect_error([&] { core::import_onnx_file(missing); }, HETERO_NOT_FOUND, {missing});
  const std::string empty = dir.write("empty.onnx", "");
  expect_error([&] { core::import_onnx_file(empty); }, HETERO_INVALID_MODEL, {empty, "empty"});
  expect_error([&] { core::import_onnx_bytes({}); }, HETERO_INVALID_MODEL, {"<memory>", "empty"});
  expect_error([&] { core::import_onnx_file(dir.path().string()); }, HETERO_IO_ERROR, {dir.path().string()});
}

TEST(OnnxImportErrors, TruncatedFiles) {
  TempDir dir;
  const std::string bytes = serialize(small_model());
  for (size_t cut : {size_t{1}, size_t{7}, bytes.size() / 4, bytes.size() / 2, bytes.size() * 3 / 4, bytes.size() - 1}) {
    const std::string path = dir.write("cut.onnx", bytes.substr(0, cut));
    expect_error([&] { core::import_onnx_file(path); }, HETERO_INVALID_MODEL, {path});
  }
}

TEST(OnnxImportErrors, GarbageBytes) {
  TempDir dir;
  const std::string text = dir.write("text.onnx", "this is not an ONNX model, just words\n");
  expect_error([&] { core::import_onnx_file(text); }, HETERO_INVALID_MODEL, {text});
  std::string noise(4096, '\0');
  uint32_t x = 12345;
  for (char& c : noise) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  const std::string random = dir.write("noise.onnx", noise);
  expect_error([&] { core::import_onnx_file(random); }, HETERO_INVALID_MODEL, {random});
  // A valid protobuf that is not a model.
  expect_error([&] { core::import_onnx_bytes(to_vector(std::string("\x08\x01", 2))); }, HETERO_INVALID_MODEL,
               {"no graph"});
}

TEST(OnnxImportErrors, UnknownOperatorNamesTheNode) {
  onnx::ModelProto m = small_model();
  m.mutable_graph()->mutable_node(0)->set_op_type("Frobnicate");
  m.mutable_graph()->mutable_node(0)->set_name("frob1");
  expect_error([&] { import_bytes(m); }, HETERO_INVALID_MODEL, {"test.onnx", "node 'frob1' (Frobnicate)", "opset 17"});
  // Unnamed, it is named by its generated name.
  m.mutable_graph()->mutable_node(0)->clear_name();
  expect_error([&] { import_bytes(m); }, HETERO_INVALID_MODEL, {"Frobnicate_0"});
}

TEST(OnnxImportErrors, UnknownDomainNamesTheNode) {
  onnx::ModelProto m = small_model();
  auto* op = m.add_opset_import();
  op->set_domain("com.example");
  op->set_version(1);
  m.mutable_graph()->mutable_node(0)->set_domain("com.example");
  m.mutable_graph()->mutable_node(0)->set_name("custom1");
  expect_error([&] { import_bytes(m); }, HETERO_INVALID_MODEL, {"custom1", "com.example", "unknown"});
  m.mutable_graph()->mutable_node(0)->set_domain("com.other");  // not even imported
  expect_error([&] { import_bytes(m); }, HETERO_INVALID_MODEL, {"custom1", "com.other", "opset_import"});
}

TEST(OnnxImportErrors, OpsetOutOfRange) {
  onnx::ModelProto m = small_model();
  m.mutable_opset_import(0)->set_version(99);
  expect_error([&] { import_bytes(m); }, HETERO_INVALID_MODEL, {"opset 99", "ai.onnx", "(1..17)"});
  m.mutable_opset_import(0)->set_version(0);
  expect_error([&] { import_bytes(m); }, HETERO_INVALID_MODEL, {"opset 0"});
  m.clear_opset_import();
  expect_error([&] { import_bytes(m); }, HETERO_INVALID_MODEL, {"opset_import"});
}

TEST(OnnxImportErrors, UndefinedInputNamesNodeAndValue) {
  onnx::ModelProto m = parse_model(kSmallModel);  // W has no initializer
  m.mutable_graph()->mutable_node(1)->set_name("add1");
  expect_error([&] { import_bytes(m); }, HETERO_INVALID_MODEL,
               {"test.onnx: node 'add1' (Add): input 'W' is not produced by any node, input or initializer"});
  // Also with the checker off, and for a graph output.
  core::ImportOptions unchecked;
  unchecked.check = false;
  expect_error([&] { core::import_onnx_bytes(to_vector(serialize(m)), unchecked); }, HETERO_INVALID_MODEL, {"'W'"});
  m = small_model();
  m.mutable_graph()->mutable_output(0)->set_name("Z");
  expect_error([&] { import_bytes(m); }, HETERO_INVALID_MODEL, {"graph output 'Z'"});
}

TEST(OnnxImportErrors, CycleNamesANode) {
  // a = Add(X, b); b = Relu(a): built by hand, the parser would not help.
  onnx::ModelProto m = parse_model(kSmallModel);
  auto* g = m.mutable_graph();
  g->clear_node();
  auto* add = g->add_node();
  add->set_name("add");
  add->set_op_type("Add");
  add->add_input("X");
  add->add_input("b");
  add->add_output("Y");
  auto* relu = g->add_node();
  relu->set_name("relu");
  relu->set_op_type("Relu");
  relu->add_input("Y");
  relu->add_output("b");
  expect_error([&] { import_bytes(m); }, HETERO_INVALID_MODEL, {"test.onnx", "cycle", "node '"});
}

TEST(OnnxImportErrors, CycleThroughASubgraph) {
  // Z = Relu(Y) feeds the If's branch, and the If produces Y.
  onnx::ModelProto m = parse_model(R"ONNX(
    <ir_version: 8, opset_import: ["" : 17]>
    agraph (bool cond, float[2] X) => (float[2] Y) {
      Y = If(cond) <then_branch = g1 () => (float[2] t) { t = Add(Z, X) },
                    else_branch = g2 () => (float[2] e) { e = Neg(X) }>
      Z = Relu(Y)
    }
  )ONNX");
  expect_error([&] { import_bytes(m); }, HETERO_INVALID_MODEL, {"test.onnx", "cycle", "node '"});
}

TEST(OnnxImportErrors, ValueProducedTwice) {
  onnx::ModelProto m = small_model();
  m.mutable_graph()->mutable_node(1)->set_output(0, "T");
  m.mutable_graph()->mutable_node(1)->set_name("add1");
  expect_error([&] { import_bytes(m); }, HETERO_INVALID_MODEL, {"add1", "'T'", "more than once"});
}

TEST(OnnxImportErrors, AbsurdAndNegativeDims) {
  onnx::ModelProto m = small_model();
  onnx::TensorProto& w = *m.mutable_graph()->mutable_initializer(0);
  w.clear_dims();
  w.add_dims(1000000);
  w.add_dims(1000000);  // 4 TB claimed, 8 bytes present
  expect_error([&] { import_bytes(m); }, HETERO_INVALID_MODEL, {"initializer 'W'", "1000000x1000000", "8"});
  w.clear_raw_data();  // no data at all
  expect_error([&] { import_bytes(m); }, HETERO_INVALID_MODEL, {"initializer 'W'", "no data"});
  w.clear_dims();
  for (int i = 0; i < 8; ++i) w.add_dims(int64_t{1} << 40);  // overflows size_t
  expect_error([&] { import_bytes(m); }, HETERO_INVALID_MODEL, {"initializer 'W'", "overflow"});
  w.clear_dims();
  w.add_dims(-2);
  expect_error([&] { import_bytes(m); }, HETERO_INVALID_MODEL, {"initializer 'W'", "negative"});
  // The same inside a Constant node's tensor.
  onnx::ModelProto c = parse_model(R"ONNX(
    <ir_version: 8, opset_import: ["" : 17]>
    agraph (float[2] X) => (float[2] Y) {
      k = Constant<value = float[2] {1.0, 2.0}>()
      Y = Add(X, k)
    }
  )ONNX");
  c.mutable_graph()->mutable_node(0)->set_name("const1");
  c.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_t()->set_dims(0, int64_t{1} << 50);
  expect_error([&] { import_bytes(c); }, HETERO_INVALID_MODEL, {"const1", "'value'"});
}

TEST(OnnxImportErrors, RawDataSizeMismatch) {
  onnx::ModelProto m = small_model();
  m.mutable_graph()->mutable_initializer(0)->mutable_raw_data()->append("xyz");
  expect_error([&] { import_bytes(m); }, HETERO_INVALID_MODEL, {"initializer 'W'", "need 8 bytes", "11"});
  // Typed field with the wrong count.
  m = small_model();
  onnx::TensorProto& w = *m.mutable_graph()->mutable_initializer(0);
  w.clear_raw_data();
  w.add_float_data(1);
  expect_error([&] { import_bytes(m); }, HETERO_INVALID_MODEL, {"initializer 'W'", "float_data has 1"});
  // Strings are not supported.
  w.set_data_type(onnx::TensorProto::STRING);
  expect_error([&] { import_bytes(m); }, HETERO_NOT_SUPPORTED, {"initializer 'W'", "string"});
}

// small_model() with W stored externally at `location`.
onnx::ModelProto external_model(const std::string& location, const std::string& offset = "0") {
  onnx::ModelProto m = small_model();
  onnx::TensorProto& w = *m.mutable_graph()->mutable_initializer(0);
  w.clear_raw_data();
  w.set_data_location(onnx::TensorProto::EXTERNAL);
  auto* loc = w.add_external_data();
  loc->set_key("location");
  loc->set_value(location);
  auto* off = w.add_external_data();
  off->set_key("offset");
  off->set_value(offset);
  return m;
}

TEST(OnnxImportErrors, ExternalDataMayNotLeaveTheModelDirectory) {
  TempDir dir;
  dir.write("outside.bin", std::string(8, '\0'));
  dir.write("model/inside.bin", std::string(8, '\0'));
  auto import_with = [&](const std::string& location, const std::string& offset = "0") {
    const std::string path = dir.write("model/model.onnx", serialize(external_model(location, offset)));
    core::import_onnx_file(path);
  };
  import_with("inside.bin");  // the control: fine
  expect_error([&] { import_with("../outside.bin"); }, HETERO_INVALID_MODEL,
               {"model.onnx", "initializer 'W'", "'../outside.bin'", "escapes"});
  expect_error([&] { import_with("sub/../../outside.bin"); }, HETERO_INVALID_MODEL, {"escapes"});
  const std::string absolute = (dir.path() / "outside.bin").string();
  expect_error([&] { import_with(absolute); }, HETERO_INVALID_MODEL, {"initializer 'W'", absolute, "absolute"});
  std::filesystem::create_symlink(dir.path() / "outside.bin", dir.path() / "model" / "link.bin");
  expect_error([&] { import_with("link.bin"); }, HETERO_INVALID_MODEL, {"initializer 'W'", "'link.bin'", "escapes"});
  expect_error([&] { import_with("absent.bin"); }, HETERO_NOT_FOUND, {"initializer 'W'", "'absent.bin'"});
  // A FIFO there is refused at once (opening it to read would wait for a
  // writer), and so is a directory.
  ASSERT_EQ(::mkfifo((dir.path() / "model" / "fifo.bin").c_str(), 0600), 0);
  expect_error([&] { import_with("fifo.bin"); }, HETERO_IO_ERROR,
               {"initializer 'W'", "fifo.bin is a FIFO, not a regular file"});
  std::filesystem::create_directory(dir.path() / "model" / "dir.bin");
  expect_error([&] { import_with("dir.bin"); }, HETERO_IO_ERROR, {"initializer 'W'", "dir.bin is a directory"});
  expect_error([&] { import_with("inside.bin", "9"); }, HETERO_INVALID_MODEL, {"initializer 'W'", "offset 9", "past the end"});
  expect_error([&] { import_with("inside.bin", "4"); }, HETERO_INVALID_MODEL, {"initializer 'W'", "need 8 bytes"});
  expect_error([&] { import_with("inside.bin", "-1"); }, HETERO_INVALID_MODEL, {"initializer 'W'", "'-1'"});
  // From memory there is no directory to resolve against.
  expect_error([&] { import_bytes(external_model("inside.bin")); }, HETERO_NOT_SUPPORTED, {"initializer 'W'"});
}

TEST(OnnxImportErrors, BadInputShapes) {
  const std::vector<uint8_t> bytes = to_vector(serialize(small_model()));
  core::ImportOptions options;
  options.input_shapes["Q"] = {2};
  expect_error([&] { core::import_onnx_bytes(bytes, options); }, HETERO_INVALID_ARGUMENT, {"'Q'", "X"});
  options.input_shapes.clear();
  options.input_shapes["W"] = {2};  // an initializer, not an input
  expect_error([&] { core::import_onnx_bytes(bytes, options); }, HETERO_INVALID_ARGUMENT, {"'W'"});
  options.input_shapes.clear();
  options.input_shapes["X"] = {1, 2};
  expect_error([&] { core::import_onnx_bytes(bytes, options); }, HETERO_INVALID_ARGUMENT, {"'X'", "rank 1"});
  options.input_shapes["X"] = {3};
  expect_error([&] { core::import_onnx_bytes(bytes, options); }, HETERO_INVALID_ARGUMENT, {"'X'", "3 given"});
}

TEST(OnnxImportErrors, CheckerAndInferenceErrorsAreInvalidModel) {
  // Add of float and int64: the checker passes it, shape inference does not
  // merge it with the declared output type.
  onnx::ModelProto m = parse_model(R"ONNX(
    <ir_version: 8, opset_import: ["" : 17]>
    agraph (float[2] X) => (int64[3] Y) {
      Y = Relu(X)
    }
  )ONNX");
  expect_error([&] { import_bytes(m); }, HETERO_INVALID_MODEL, {"test.onnx"});
  // A required attribute missing.
  m = parse_model(R"ONNX(
    <ir_version: 8, opset_import: ["" : 17]>
    agraph (float[2] X) => (float[2] Y) {
      Y = Cast(X)
    }
  )ONNX");
  m.mutable_graph()->mutable_node(0)->set_name("cast1");
  expect_error([&] { import_bytes(m); }, HETERO_INVALID_MODEL, {"cast1", "to"});
}

}  // namespace
}  // namespace hetero::test
