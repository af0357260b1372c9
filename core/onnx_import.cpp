// ONNX import: map the file, find initializer payloads at the wire level (so
// that weights are viewed, not copied), parse the rest with protobuf, build
// the IR, then let libonnx check the model and infer shapes.
#include "core/onnx_import.h"

#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <new>
#include <set>
#include <unordered_set>

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include "core/error.h"
#include "core/function_inline.h"
#include "core/mapped_file.h"
#include "core/onnx_graph.h"
#include "core/onnx_tensor.h"
#include "core/onnx_wire.h"
#include "core/progress.h"

namespace hetero::core {

namespace {

// Resolves and maps the external data files of one model, refusing paths that
// leave the model's directory.
class ExternalData {
 public:
  explicit ExternalData(std::string dir) : dir_(std::move(dir)) {}

  RawBytes locate(const onnx::TensorProto& tp, const std::string& what) {
    std::string location, offset_text, length_text;
    bool has_length = false;
    for (const auto& kv : tp.external_data()) {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset_text = kv.value();
      else if (kv.key() == "length") { length_text = kv.value(); has_length = true; }
    }
    if (dir_.empty())
      fail(HETERO_NOT_SUPPORTED, what + ": external data ('" + location +
                                     "') needs the model's directory; load the model from its file");
    if (location.empty()) fail(HETERO_INVALID_MODEL, what + ": external data has no location");
    const std::filesystem::path rel(location);
    if (rel.is_absolute())
      fail(HETERO_INVALID_MODEL, what + ": external data path '" + location + "' is absolute; it must be relative to the model's directory");
    for (const auto& part : rel)
      if (part == "..") fail(HETERO_INVALID_MODEL, what + ": external data path '" + location + "' escapes the model's directory");
    const std::string joined = dir_ + "/" + location;
    char* real = ::realpath(joined.c_str(), nullptr);
    if (!real) fail_errno(errno, what + ": external data file '" + location + "' in " + dir_);
    const std::string resolved(real);
    std::free(real);
    // A symlink may still lead out of the directory.
    const std::string inside = dir_.back() == '/' ? dir_ : dir_ + "/";
    if (resolved.compare(0, inside.size(), inside) != 0)
      fail(HETERO_INVALID_MODEL, what + ": external data path '" + location + "' escapes the model's directory (it resolves to " + resolved + ")");

    auto it = files_.find(resolved);
    if (it == files_.end()) {
      MappedBytes mapped;
      try {
        mapped = map_file(resolved);  // a FIFO or a device here is refused, never read
      } catch (const Failure& e) {
        fail(e.status(), what + ": external data: " + e.what());
      }
      it = files_.emplace(resolved, std::move(mapped)).first;
    }
    const MappedBytes& file = it->second;
    const uint64_t offset = parse_number(offset_text, "offset", what);
    if (offset > file.size)
      fail(HETERO_INVALID_MODEL, what + ": external data offset " + std::to_string(offset) + " is past the end of '" +
                                     location + "' (" + std::to_string(file.size) + " bytes)");
    const uint64_t length = has_length ? parse_number(length_text, "length", what) : file.size - offset;
    if (length > file.size - offset)
      fail(HETERO_INVALID_MODEL, what + ": external data at offset " + std::to_string(offset) + " with length " +
                                     std::to_string(length) + " runs past the end of '" + location + "' (" +
                                     std::to_string(file.size) + " bytes)");
    used_.insert(file.owner);
    return RawBytes{file.data + offset, static_cast<size_t>(length), file.owner};
  }

  const std::set<std::shared_ptr<const void>>& used() const noexcept { return used_; }

 private:
  static uint64_t parse_number(const std::string& text, const char* key, const std::string& what) {
    if (text.empty()) return 0;
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size())
      fail(HETERO_INVALID_MODEL, what + ": external data " + key + " '" + text + "' is not a byte count");
    return v;
  }

  std::string dir_;
  std::map<std::string, MappedBytes> files_;
  std::set<std::shared_ptr<const void>> used_;
};

std::string flatten(std::string s) {
  // libonnx appends "\n\n==> Context: ..."; keep messages on one line.
  for (size_t at; (at = s.find("\n\n==> Context: ")) != std::string::npos;) s.replace(at, 15, " (context: ");
  for (char& c : s)
    if (c == '\n') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  if (s.find(" (context: ") != std::string::npos) s += ')';
  return s;
}

void read_opsets(const onnx::ModelProto& proto, Model& model) {
  for (const auto& op : proto.opset_import()) {
    const std::string domain = op.domain() == "ai.onnx" ? std::string() : op.domain();
    const std::string label = domain.empty() ? "ai.onnx" : domain;
    if (model.opsets.count(domain)) fail(HETERO_INVALID_MODEL, "opset_import lists domain '" + label + "' twice");
    int64_t lo = 0, hi = 0;
    if (onnx_domain_range(domain, lo, hi) && (op.version() < lo || op.version() > hi))
      fail(HETERO_INVALID_MODEL, "opset " + std::to_string(op.version()) + " of domain '" + label +
                                     "' is not supported (" + std::to_string(lo) + ".." + std::to_string(hi) + ")");
    model.opsets[domain] = op.version();
  }
  // IR versions 1 and 2 predate opset_import and mean opset 1.
  if (model.opsets.empty() && proto.ir_version() < 3) model.opsets[""] = 1;
  if (model.opsets.empty()) fail(HETERO_INVALID_MODEL, "the model imports no opset (opset_import is empty)");
}

// Puts the user's static shapes on the graph inputs (IR and proto) so that
// shape inference propagates them.
void apply_input_shapes(const ImportOptions& options, Model& model, onnx::GraphProto& graph) {
  for (const auto& [name, shape] : options.input_shapes) {
    Value* v = nullptr;
    std::string names;
    for (Value* in : model.graph.inputs) {
      if (in->name == name) v = in;
      names += (names.empty() ? "" : ", ") + in->name;
    }
    if (!v) fail(HETERO_INVALID_ARGUMENT, "input shape given for '" + name + "', which is not an input of the model (inputs: " + names + ")");
    if (v->shape && v->shape->size() != shape.size())
      fail(HETERO_INVALID_ARGUMENT, "input '" + name + "' has rank " + std::to_string(v->shape->size()) +
                                        " but the given shape " + shape_to_string(shape) + " has rank " +
                                        std::to_string(shape.size()));
    std::vector<Dim> dims(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] < 0)
        fail(HETERO_INVALID_ARGUMENT, "input '" + name + "': given dimension " + std::to_string(i) + " is negative");
      if (v->shape && (*v->shape)[i].known() && (*v->shape)[i].size != shape[i])
        fail(HETERO_INVALID_ARGUMENT, "input '" + name + "': dimension " + std::to_string(i) + " is " +
                                          std::to_string((*v->shape)[i].size) + " in the model, " +
                                          std::to_string(shape[i]) + " given");
      dims[i].size = shape[i];
      if (v->shape) dims[i].param = (*v->shape)[i].param;
    }
    v->shape = dims;
    for (auto& vi : *graph.mutable_input()) {
      if (vi.name() != name) continue;
      auto* s = vi.mutable_type()->mutable_tensor_type()->mutable_shape();
      s->clear_dim();
      for (int64_t d : shape) s->add_dim()->set_dim_value(d);
    }
  }
}

// Initializers whose data the proto no longer holds (stripped payloads,
// external data) would confuse onnx's checker, which wants the data inline or
// looks for external files relative to the working directory. They are
// already converted, so the checker and shape inference see them as typed
// graph inputs instead.
void detach_initializers(onnx::GraphProto& graph, const std::vector<bool>& detached) {
  std::unordered_set<std::string> inputs;
  for (const auto& vi : graph.input()) inputs.insert(vi.name());
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  auto& all = *graph.mutable_initializer();
  for (int i = 0; i < all.size(); ++i) {
    onnx::TensorProto& tp = *all.Mutable(i);
    if (!detached[static_cast<size_t>(i)]) {
      kept.Add(std::move(tp));
      continue;
    }
    if (inputs.count(tp.name())) continue;
    auto* vi = graph.add_input();
    vi->set_name(tp.name());
    auto* type = vi->mutable_type()->mutable_tensor_type();
    type->set_elem_type(tp.data_type());
    auto* shape = type->mutable_shape();
    for (int64_t d : tp.dims()) shape->add_dim()->set_dim_value(d);
  }
  all.Swap(&kept);
}

using LocalFunctions = std::map<std::pair<std::string, std::string>, const onnx::FunctionProto*>;

std::string normal_domain(const std::string& domain) { return domain == "ai.onnx" ? std::string() : domain; }

// Fails on a model-local function that calls itself, directly or not, which
// inlining would expand without end.
void check_function_recursion(const LocalFunctions& functions) {
  std::map<const onnx::FunctionProto*, int> state;  // 1: on the DFS stack, 2: done
  std::function<void(const onnx::FunctionProto*)> visit = [&](const onnx::FunctionProto* f) {
    int& s = state[f];
    if (s == 2) return;
    if (s == 1) fail(HETERO_INVALID_MODEL, "model-local function '" + f->name() + "' calls itself");
    s = 1;
    for (const auto& n : f->node()) {
      auto it = functions.find({normal_domain(n.domain()), n.op_type()});
      if (it != functions.end()) visit(it->second);
    }
    state[f] = 2;
  };
  for (const auto& [key, f] : functions) visit(f);
}

// What model-local functions may cost. A chain of functions each calling the
// next twice doubles at every link: a model of a few KB could ask for 2^60
// nodes, and ONNX's own checks would walk them all before inlining began.
constexpr int kMaxLocalFunctions = 4096;             // keeps the walks below shallow
constexpr uint64_t kMaxInlinedNodes = 1'000'000;     // the graph once they are inlined

void check_function_budget(const onnx::ModelProto& proto, const LocalFunctions& functions) {
  if (proto.functions_size() > kMaxLocalFunctions)
    fail(HETERO_INVALID_MODEL, "the model defines " + std::to_string(proto.functions_size()) +
                                   " local functions; at most " + std::to_string(kMaxLocalFunctions) + " are taken");
  constexpr uint64_t kOver = kMaxInlinedNodes + 1;  // sizes saturate here
  std::map<const onnx::FunctionProto*, uint64_t> size;  // nodes once inlined (recursion is ruled out)
  const auto callee = [&](const onnx::NodeProto& n) -> const onnx::FunctionProto* {
    auto it = functions.find({normal_domain(n.domain()), n.op_type()});
    return it == functions.end() ? nullptr : it->second;
  };
  std::function<uint64_t(const onnx::FunctionProto*)> expanded = [&](const onnx::FunctionProto* f) {
    if (auto it = size.find(f); it != size.end()) return it->second;
    uint64_t total = 0;
    for (const auto& n : f->node()) {
      const onnx::FunctionProto* g = callee(n);
      total = std::min(kOver, total + (g ? expanded(g) : 1));
    }
    return size[f] = total;
  };
  uint64_t total = 0;
  std::function<void(const onnx::GraphProto&)> walk = [&](const onnx::GraphProto& graph) {
    for (const auto& n : graph.node()) {
      const onnx::FunctionProto* f = callee(n);
      total = std::min(kOver, total + (f ? expanded(f) : 1));
      if (total >= kOver)
        fail(HETERO_INVALID_MODEL,
             "inlining the model's local functions would make the graph larger than " +
                 std::to_string(kMaxInlinedNodes) + " nodes" +
                 (f ? " (a call of '" + f->name() + "' alone expands to " +
                          (expanded(f) >= kOver ? "more than that" : std::to_string(expanded(f)) + " nodes") + ")"
                    : std::string()));
      for (const auto& a : n.attribute()) {
        if (a.has_g()) walk(a.g());
        for (const auto& g : a.graphs()) walk(g);
      }
    }
  };
  walk(proto.graph());
}

// Inlines the nodes that call functions the model defines (ModelProto.functions),
// including calls that inlining brings in. `budget` bounds the nodes added, as
// nested calls can multiply them.
void inline_local_functions(Graph& graph, const Model& model, const LocalFunctions& functions, size_t& budget) {
  for (const auto& n : graph.nodes()) {
    for (const Attribute& a : n->attributes) {
      if (a.g) inline_local_functions(*a.g, model, functions, budget);
      for (const auto& g : a.graphs) inline_local_functions(*g, model, functions, budget);
    }
  }
  // The nodes a body brings go at the end of the list, so one pass visits
  // calls at every depth.
  FunctionInliner inliner(graph);
  for (size_t next = 0; next < graph.nodes().size(); ++next) {
    Node& n = *graph.nodes()[next];
    auto it = functions.find({n.domain, n.op_type});
    if (it == functions.end()) continue;
    const size_t added = static_cast<size_t>(it->second->node_size());
    if (added > budget) fail(HETERO_INVALID_MODEL, "inlining model-local functions makes the graph too large");
    budget -= added;
    check_deadline();
    inliner.inline_call(n, *it->second, model.opsets, {});
  }
  inliner.finish();
}

struct Source {
  std::string name;       // for messages
  std::string dir;        // real path of the model's directory; empty for memory
  MappedBytes bytes;      // the serialized model
};

std::unique_ptr<Model> import_model(const Source& src, const WireScan& scan, const ImportOptions& options) {
  // Four steps, the last two (checking, shape inference) the long ones.
  constexpr const char* kStage = "reading model";
  report_progress(kStage, 0, 4);
  onnx::ModelProto proto;
  const std::string_view wire = scan.stripped_any
                                    ? std::string_view(scan.slim)
                                    : std::string_view(reinterpret_cast<const char*>(src.bytes.data), src.bytes.size);
  if (wire.size() > static_cast<size_t>(INT_MAX))
    fail(HETERO_INVALID_MODEL, "the model is larger than 2 GiB without its weights; store weights as external data");
  if (!proto.ParseFromArray(wire.data(), static_cast<int>(wire.size())))
    fail(HETERO_INVALID_MODEL,
         "not a valid ONNX model (protobuf parsing failed: a broken file, or graphs and messages nested more "
         "than protobuf's 100 levels deep)");
  if (!proto.has_graph()) fail(HETERO_INVALID_MODEL, "not an ONNX model (it has no graph)");
  if (static_cast<size_t>(proto.graph().initializer_size()) != scan.initializers.size())
    fail(HETERO_INVALID_MODEL, "initializers could not be located in the file");
  report_progress(kStage, 1, 4);
  check_deadline();

  auto model = std::make_unique<Model>();
  model->source = src.name;
  model->source_sha256 = source_sha256({src.bytes.data, src.bytes.size}, options.input_shapes);
  model->ir_version = proto.ir_version();
  model->producer_name = proto.producer_name();
  read_opsets(proto, *model);

  // Domains outside ONNX's registry that a node may use: those the model
  // defines functions in, and ONNX Runtime's com.microsoft, whose QOperator
  // ops (QLinearAdd, QGemm, ...) quantised models are made of. Whether a
  // device runs a given op of it is the driver's to say, as for any op.
  std::set<std::string> custom_domains = {"com.microsoft"};
  for (const auto& f : proto.functions()) custom_domains.insert(normal_domain(f.domain()));

  ExternalData external(src.dir);
  bool views_model = false;
  std::vector<bool> detached(scan.initializers.size(), false);
  auto initializer = [&](int index, const onnx::TensorProto& tp, const std::string& what) {
    const size_t i = static_cast<size_t>(index);
    if (tp.data_location() == onnx::TensorProto::EXTERNAL) {
      const RawBytes raw = external.locate(tp, what);
      detached[i] = true;
      return tensor_from_proto(tp, what, &raw);
    }
    const WireInitializer& w = scan.initializers[i];
    if (!w.has_raw_data || !src.bytes.owner) return tensor_from_proto(tp, what);
    detached[i] = w.stripped;
    const RawBytes raw{src.bytes.data + w.raw_offset, w.raw_size, src.bytes.owner};
    Tensor t = tensor_from_proto(tp, what, &raw);
    if (t.owner() == src.bytes.owner) views_model = true;
    return t;
  };

  GraphBuilder builder(model->opsets, custom_domains);
  builder.build_main(*proto.mutable_graph(), model->graph, initializer);
  builder.sort();
  apply_input_shapes(options, *model, *proto.mutable_graph());
  detach_initializers(*proto.mutable_graph(), detached);
  report_progress(kStage, 2, 4);
  check_deadline();

  LocalFunctions functions;
  if (proto.functions_size() > 0) {
    for (const auto& f : proto.functions()) functions[{normal_domain(f.domain()), f.name()}] = &f;
    check_function_recursion(functions);
    check_function_budget(proto, functions);
  }
  if (options.check) check_known_operators(model->graph);
  try {
    if (options.check) onnx::checker::check_model(proto);
    onnx::shape_inference::InferShapes(proto, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
  } catch (const std::exception& e) {  // ValidationError, InferenceError, ...
    fail(HETERO_INVALID_MODEL, flatten(e.what()));
  }
  report_progress(kStage, 3, 4);
  check_deadline();
  builder.apply_types();
  if (!functions.empty()) {
    size_t budget = kMaxInlinedNodes;
    inline_local_functions(model->graph, *model, functions, budget);
  }

  if (views_model) model->mappings.push_back(src.bytes.owner);
  for (const auto& owner : external.used()) model->mappings.push_back(owner);
  report_progress(kStage, 4, 4);
  return model;
}

// Runs `f`, prefixing every error with the model's name and turning stray
// exceptions (protobuf, allocation) into statuses.
template <typename F>
std::unique_ptr<Model> with_source(const std::string& name, F f) {
  try {
    return f();
  } catch (const Failure& e) {
    throw Failure(e.status(), name + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw Failure(HETERO_OUT_OF_MEMORY, name + ": out of memory while importing the model");
  } catch (const std::exception& e) {
    throw Failure(HETERO_INVALID_MODEL, name + ": " + flatten(e.what()));
  }
}

}  // namespace

Sha256Digest source_sha256(std::span<const uint8_t> bytes, const std::map<std::string, Shape>& input_shapes) {
  Sha256 hash;
  hash.update(bytes);
  for (const auto& [name, shape] : input_shapes) hash.update("\n" + name + "=" + shape_to_string(shape));
  return hash.finish();
}

std::unique_ptr<Model> import_onnx_file(const std::string& path, const ImportOptions& options) {
  Source src;
  src.name = path;
  src.bytes = map_file(path);  // its errors name the path already
  return with_source(path, [&] {
    if (src.bytes.size == 0) fail(HETERO_INVALID_MODEL, "the file is empty");
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (dir.empty()) dir = ".";
    char* real = ::realpath(dir.c_str(), nullptr);
    if (!real) fail_errno(errno, "directory " + dir.string());
    src.dir = real;
    std::free(real);
    const WireScan scan = scan_model_wire({src.bytes.data, src.bytes.size});
    return import_model(src, scan, options);
  });
}

std::unique_ptr<Model> import_onnx_bytes(std::span<const uint8_t> bytes, const ImportOptions& options,
                                         const std::string& source_name) {
  return with_source(source_name, [&] {
    if (bytes.empty()) fail(HETERO_INVALID_MODEL, "the model is empty");
    const WireScan scan = scan_model_wire(bytes);
    Source src;
    src.name = source_name;
    src.bytes.data = bytes.data();
    src.bytes.size = bytes.size();
    // Initializers will view the model's bytes, which the caller may free:
    // give them an aligned copy of their own.
    for (const WireInitializer& w : scan.initializers) {
      if (!w.has_raw_data) continue;
      src.bytes.owner = aligned_block(bytes.size());
      std::memcpy(const_cast<void*>(src.bytes.owner.get()), bytes.data(), bytes.size());
      src.bytes.data = static_cast<const uint8_t*>(src.bytes.owner.get());
      break;
    }
    return import_model(src, scan, options);
  });
}

}  // namespace hetero::core
