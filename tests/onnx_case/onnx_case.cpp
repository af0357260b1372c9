#include "tests/onnx_case/onnx_case.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/onnx_pb.h>

#include "core/error.h"
#include "core/onnx_import.h"
#include "tests/onnx_case/pb_tensor.h"
#include "tests/onnx_case/tensor_compare.h"

namespace hetero::onnx_case {

namespace fs = std::filesystem;

namespace {

// A failure the case reports as is (the stage is already in the message).
struct CaseFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

onnx::ModelProto read_model_proto(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CaseFailure("read model: cannot open " + path.string());
  google::protobuf::io::IstreamInputStream raw(&in);
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(INT32_MAX);  // the default 64 MiB cap is below some real models
  onnx::ModelProto model;
  if (!model.ParseFromCodedStream(&coded)) throw CaseFailure("read model: " + path.string() + " is not a ModelProto");
  return model;
}

const char* type_kind(const onnx::TypeProto& type) {
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType: return "tensor";
    case onnx::TypeProto::kSequenceType: return "sequence";
    case onnx::TypeProto::kMapType: return "map";
    case onnx::TypeProto::kOptionalType: return "optional";
    case onnx::TypeProto::kSparseTensorType: return "sparse tensor";
    default: return "untyped value";
  }
}

// heterod's ports carry dense tensors only; a case whose graph takes or gives
// anything else cannot pass, and saying so beats a confusing import error.
void check_tensor_io(const onnx::GraphProto& graph) {
  std::set<std::string> initializers;
  for (const auto& init : graph.initializer()) initializers.insert(init.name());
  auto check = [](const onnx::ValueInfoProto& v, const char* role) {
    if (v.type().value_case() != onnx::TypeProto::kTensorType)
      throw CaseFailure(std::string("io: ") + role + " '" + v.name() + "' is a " + type_kind(v.type()) +
                        " (heterod models take and give tensors only)");
  };
  for (const auto& v : graph.input())
    if (!initializers.count(v.name())) check(v, "input");
  for (const auto& v : graph.output()) check(v, "output");
}

std::vector<fs::path> data_sets(const fs::path& dir) {
  std::vector<fs::path> sets;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(entry.path());
  std::sort(sets.begin(), sets.end());
  return sets;
}

// input_0.pb, input_1.pb, ... up to the first missing index.
std::vector<onnx::TensorProto> read_numbered(const fs::path& set, const std::string& prefix) {
  std::vector<onnx::TensorProto> protos;
  for (size_t i = 0;; ++i) {
    const fs::path p = set / (prefix + "_" + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    protos.push_back(read_tensor_proto(p.string()));
  }
  return protos;
}

// Position of each port's data: by the names the .pb files carry when every
// one of them names a port, else by position (older data sets leave names out).
std::vector<size_t> match_ports(const std::vector<driver::Port>& ports, const std::vector<onnx::TensorProto>& protos,
                                const std::string& role) {
  if (ports.size() != protos.size())
    throw CaseFailure("data: the model has " + std::to_string(ports.size()) + " " + role + "s, the data set " +
                      std::to_string(protos.size()));
  std::vector<size_t> order(ports.size());
  bool by_name = true;
  for (size_t i = 0; i < ports.size() && by_name; ++i) {
    auto it = std::find_if(protos.begin(), protos.end(),
                           [&](const onnx::TensorProto& p) { return p.name() == ports[i].name; });
    if (it == protos.end()) by_name = false;
    else order[i] = static_cast<size_t>(it - protos.begin());
  }
  if (!by_name)
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  return order;
}

// ONNX 1.12's generator stores bfloat16 test data as uint16 tensors; the
// port's declared type says what the bits are.
core::Tensor as_port_type(core::Tensor t, const driver::Port& port) {
  if (t.dtype() == core::DType::U16 && port.dtype == core::DType::BF16)
    return core::Tensor::wrap(core::DType::BF16, t.shape(), t.raw(), t.owner());
  return t;
}

void run_data_set(driver::CompiledModel& compiled, driver::InferRequest& request, const fs::path& set,
                  const NoteFn& note) {
  const std::string set_name = set.filename().string();
  note(Note::Stage, "read " + set_name);
  const auto in_protos = read_numbered(set, "input");
  const auto out_protos = read_numbered(set, "output");
  const auto in_order = match_ports(compiled.inputs(), in_protos, "input");
  const auto out_order = match_ports(compiled.outputs(), out_protos, "output");

  // Inputs must outlive infer() (the request only borrows them).
  std::vector<core::Tensor> inputs;
  for (size_t i = 0; i < in_order.size(); ++i) {
    const std::string what = set_name + " input '" + compiled.inputs()[i].name + "'";
    try {
      inputs.push_back(as_port_type(tensor_from_pb(in_protos[in_order[i]], what), compiled.inputs()[i]));
    } catch (const std::runtime_error& e) {
      throw CaseFailure(std::string("data: ") + e.what());
    }
  }
  note(Note::Stage, "infer " + set_name);
  try {
    for (size_t i = 0; i < inputs.size(); ++i) request.set_input(i, inputs[i]);
    request.infer();
  } catch (const Failure& e) {
    throw CaseFailure("infer " + set_name + ": " + status_name(e.status()) + ": " + e.what());
  }

  note(Note::Stage, "compare " + set_name);
  for (size_t i = 0; i < out_order.size(); ++i) {
    const std::string what = set_name + " output '" + compiled.outputs()[i].name + "'";
    core::Tensor expected;
    try {
      expected = as_port_type(tensor_from_pb(out_protos[out_order[i]], what), compiled.outputs()[i]);
    } catch (const std::runtime_error& e) {
      throw CaseFailure(std::string("data: ") + e.what());
    }
    const std::string diff = compare_tensors(expected, request.output(i));
    if (!diff.empty()) throw CaseFailure("mismatch: " + what + ": " + diff);
  }
}

// The op types of `graph`'s nodes, each once, in order of first use.
std::vector<std::string> op_types(const onnx::GraphProto& graph) {
  std::vector<std::string> ops;
  for (const auto& node : graph.node()) {
    const std::string op = node.domain().empty() || node.domain() == "ai.onnx" ? node.op_type()
                                                                              : node.domain() + "." + node.op_type();
    if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
  }
  return ops;
}

}  // namespace

std::vector<std::string> case_op_types(const std::string& dir) {
  try {
    return op_types(read_model_proto(fs::path(dir) / "model.onnx").graph());
  } catch (const CaseFailure& e) {
    throw std::runtime_error(e.what());
  }
}

CaseResult run_case(const std::string& dir_name, const core::Runtime& runtime, const std::string& device,
                    const NoteFn& note) {
  const fs::path dir(dir_name);
  // The last stage reported, to prefix failures that carry no stage of their own.
  std::string stage;
  const NoteFn track = [&](Note kind, const std::string& text) {
    if (kind == Note::Stage) stage = text;
    note(kind, text);
  };
  try {
    track(Note::Stage, "read model");
    const onnx::ModelProto proto = read_model_proto(dir / "model.onnx");
    track(Note::Ops, join(op_types(proto.graph()), ","));
    check_tensor_io(proto.graph());

    track(Note::Stage, "import");
    const auto model = core::import_onnx_file((dir / "model.onnx").string());

    // query() names the ops the device refuses; that is what the lead reports
    // as "still failing ops". Compile runs anyway: it is the real verdict.
    track(Note::Stage, "query");
    const auto support = runtime.query(*model, device);
    std::vector<std::string> refused;
    std::string first_reason;
    for (const auto& node : model->graph.nodes()) {
      if (node->index >= support.size() || support[node->index].supported) continue;
      if (std::find(refused.begin(), refused.end(), node->op_type) == refused.end()) refused.push_back(node->op_type);
      if (first_reason.empty()) first_reason = node->describe() + ": " + support[node->index].reason;
    }
    if (!refused.empty()) track(Note::Unsupported, join(refused, ","));

    track(Note::Stage, "compile");
    std::unique_ptr<driver::CompiledModel> compiled;
    try {
      compiled = runtime.compile(*model, device);
    } catch (const Failure& e) {
      // The query's reason is usually the clearer one when it has one.
      throw CaseFailure("compile: " + std::string(status_name(e.status())) + ": " +
                        (first_reason.empty() ? e.what() : first_reason));
    }
    auto request = compiled->create_infer_request();

    const auto sets = data_sets(dir);
    if (sets.empty()) throw CaseFailure("data: no test_data_set_* directory");
    for (const auto& set : sets) run_data_set(*compiled, *request, set, track);
    return {true, {}};
  } catch (const CaseFailure& e) {
    return {false, e.what()};
  } catch (const Failure& e) {
    return {false, stage + ": " + status_name(e.status()) + ": " + e.what()};
  } catch (const std::exception& e) {
    return {false, stage + ": " + e.what()};
  }
}

}  // namespace hetero::onnx_case
