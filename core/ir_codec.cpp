#include "core/ir_codec.h"

#include <cstring>
#include <unordered_map>

#include "core/byte_io.h"
#include "core/error.h"
#include "core/mapped_file.h"

namespace hetero::core {

namespace {

constexpr uint32_t kMagic = 0x31524948;  // "HIR1" in little-endian bytes
constexpr uint32_t kNull = UINT32_MAX;  // a reference to no value
constexpr uint32_t kMaxCount = 1u << 24;
constexpr uint32_t kMaxDepth = 64;     // subgraph nesting
constexpr size_t kTensorAlign = 64;    // data offsets in the encoding, hence in the decoded block

// ---- Encoding --------------------------------------------------------------

class Encoder {
 public:
  std::vector<uint8_t> model(const Model& m) {
    w_.u32(kMagic);
    w_.i64(m.ir_version);
    w_.string(m.producer_name);
    w_.u32(static_cast<uint32_t>(m.opsets.size()));
    for (const auto& [domain, version] : m.opsets) {
      w_.string(domain);
      w_.i64(version);
    }
    w_.raw(m.source_sha256);
    graph(m.graph);
    return std::move(w_.bytes());
  }

 private:
  void tensor(const Tensor& t) { encode_tensor(w_, t); }

  // (depth, index) of `v` among the graphs being encoded, innermost last.
  void ref(const Value* v) {
    if (!v) {
      w_.u32(kNull);
      w_.u32(kNull);
      return;
    }
    for (size_t depth = 0; depth < scopes_.size(); ++depth) {
      const auto& index = scopes_[scopes_.size() - 1 - depth];
      if (auto it = index.find(v); it != index.end()) {
        w_.u32(static_cast<uint32_t>(depth));
        w_.u32(it->second);
        return;
      }
    }
    fail(HETERO_INTERNAL, "IR encoding: value '" + v->name + "' belongs to no enclosing graph");
  }

  void attribute(const Attribute& a) {
    w_.string(a.name);
    w_.u8(static_cast<uint8_t>(a.type));
    switch (a.type) {
      case AttrType::Float: w_.f32(a.f); break;
      case AttrType::Int: w_.i64(a.i); break;
      case AttrType::String: w_.string(a.s); break;
      case AttrType::Tensor: tensor(a.t); break;
      case AttrType::Graph: graph(*a.g); break;
      case AttrType::Floats:
        w_.u32(static_cast<uint32_t>(a.floats.size()));
        for (float f : a.floats) w_.f32(f);
        break;
      case AttrType::Ints:
        w_.u32(static_cast<uint32_t>(a.ints.size()));
        for (int64_t i : a.ints) w_.i64(i);
        break;
      case AttrType::Strings:
        w_.u32(static_cast<uint32_t>(a.strings.size()));
        for (const std::string& s : a.strings) w_.string(s);
        break;
      case AttrType::Tensors:
        w_.u32(static_cast<uint32_t>(a.tensors.size()));
        for (const Tensor& t : a.tensors) tensor(t);
        break;
      case AttrType::Graphs:
        w_.u32(static_cast<uint32_t>(a.graphs.size()));
        for (const auto& g : a.graphs) graph(*g);
        break;
    }
  }

  void graph(const Graph& g) {
    w_.string(g.name);
    auto& index = scopes_.emplace_back();
    w_.u32(static_cast<uint32_t>(g.values().size()));
    for (const auto& v : g.values()) {
      index.emplace(v.get(), static_cast<uint32_t>(index.size()));
      w_.string(v->name);
      w_.u32(static_cast<uint32_t>(v->dtype));
      w_.u8(v->shape.has_value());
      if (v->shape) {
        w_.u32(static_cast<uint32_t>(v->shape->size()));
        for (const Dim& d : *v->shape) {
          w_.i64(d.size);
          w_.string(d.param);
        }
      }
      w_.u8(v->constant.has_value());
      if (v->constant) tensor(*v->constant);
    }
    w_.u32(static_cast<uint32_t>(g.nodes().size()));
    for (const auto& n : g.nodes()) {
      w_.string(n->name);
      w_.string(n->op_type);
      w_.string(n->domain);
      w_.i64(n->opset);
      w_.u32(static_cast<uint32_t>(n->inputs.size()));
      for (const Value* v : n->inputs) ref(v);
      w_.u32(static_cast<uint32_t>(n->outputs.size()));
      for (const Value* v : n->outputs) ref(v);
      w_.u32(static_cast<uint32_t>(n->attributes.size()));
      for (const Attribute& a : n->attributes) attribute(a);
    }
    for (const auto* list : {&g.inputs, &g.outputs}) {
      w_.u32(static_cast<uint32_t>(list->size()));
      for (const Value* v : *list) ref(v);
    }
    scopes_.pop_back();
  }

  ByteWriter w_;
  std::vector<std::unordered_map<const Value*, uint32_t>> scopes_;
};

// ---- Decoding --------------------------------------------------------------

class Decoder {
 public:
  Decoder(std::span<const uint8_t> block, std::shared_ptr<const void> owner, const std::string& what)
      : r_(block, what), block_(block), owner_(std::move(owner)) {}

  std::unique_ptr<Model> model(const std::string& what) {
    if (r_.uint(4, "magic") != kMagic) r_.corrupt("not heterod IR (bad magic)");
    auto m = std::make_unique<Model>();
    m->source = what;
    m->ir_version = r_.i64("ir_version");
    m->producer_name = r_.string("producer_name");
    const uint32_t opsets = r_.count("opset count", kMaxCount, 12);
    for (uint32_t i = 0; i < opsets; ++i) {
      std::string domain = r_.string("opset domain");
      m->opsets[domain] = r_.i64("opset version");
    }
    const auto hash = r_.take(m->source_sha256.size(), "source_sha256");
    std::copy(hash.begin(), hash.end(), m->source_sha256.begin());
    graph(m->graph);
    if (r_.remaining() != 0) r_.corrupt(std::to_string(r_.remaining()) + " bytes after the model");
    m->mappings.push_back(owner_);
    return m;
  }

 private:
  // A view into the decoded block, which the model keeps alive.
  Tensor tensor(const std::string& field) { return decode_tensor(r_, field, owner_); }

  Value* ref(const std::string& field) {
    const uint64_t depth = r_.uint(4, field + " depth"), index = r_.uint(4, field + " index");
    if (depth == kNull && index == kNull) return nullptr;
    if (depth >= scopes_.size() || index >= scopes_[scopes_.size() - 1 - depth].size())
      r_.corrupt(field + " refers to no value");
    return scopes_[scopes_.size() - 1 - depth][index];
  }

  std::vector<std::string> strings(const std::string& field) {
    std::vector<std::string> out(r_.count(field, kMaxCount, 4));
    for (auto& s : out) s = r_.string(field);
    return out;
  }

  void attribute(Attribute& a, const Node& n) {
    a.name = r_.string("attribute name");
    const std::string field = "attribute '" + a.name + "' of node '" + n.name + "'";
    const uint8_t type = r_.u8(field + " type");
    if (type > static_cast<uint8_t>(AttrType::Graphs)) r_.corrupt(field + " has type " + std::to_string(type));
    a.type = static_cast<AttrType>(type);
    switch (a.type) {
      case AttrType::Float: a.f = r_.f32(field); break;
      case AttrType::Int: a.i = r_.i64(field); break;
      case AttrType::String: a.s = r_.string(field); break;
      case AttrType::Tensor: a.t = tensor(field); break;
      case AttrType::Graph: a.g = subgraph(field); break;
      case AttrType::Floats:
        a.floats.resize(r_.count(field, kMaxCount, 4));
        for (float& f : a.floats) f = r_.f32(field);
        break;
      case AttrType::Ints:
        a.ints.resize(r_.count(field, kMaxCount, 8));
        for (int64_t& i : a.ints) i = r_.i64(field);
        break;
      case AttrType::Strings: a.strings = strings(field); break;
      case AttrType::Tensors:
        a.tensors.resize(r_.count(field, kMaxCount, 4));
        for (Tensor& t : a.tensors) t = tensor(field);
        break;
      case AttrType::Graphs:
        a.graphs.resize(r_.count(field, kMaxCount, 8));
        for (auto& g : a.graphs) g = subgraph(field);
        break;
    }
  }

  std::shared_ptr<Graph> subgraph(const std::string& field) {
    if (scopes_.size() >= kMaxDepth) r_.corrupt(field + ": subgraphs nest deeper than 64");
    auto g = std::make_shared<Graph>();
    g->parent = graphs_.back();
    graph(*g);
    return g;
  }

  void graph(Graph& g) {
    g.name = r_.string("graph name");
    graphs_.push_back(&g);
    auto& values = scopes_.emplace_back();
    values.resize(r_.count("value count of graph '" + g.name + "'", kMaxCount, 10));
    for (Value*& v : values) {
      v = g.add_value(r_.string("value name"));
      const std::string field = "value '" + v->name + "'";
      v->dtype = static_cast<DType>(r_.uint(4, field + " dtype"));
      if (r_.u8(field + " has_shape")) {
        std::vector<Dim> dims(r_.count(field + " rank", 64, 12));
        for (Dim& d : dims) {
          d.size = r_.i64(field + " dim");
          d.param = r_.string(field + " dim name");
        }
        v->shape = std::move(dims);
      }
      if (r_.u8(field + " has_constant")) v->constant = tensor(field);
    }
    const uint32_t node_count = r_.count("node count of graph '" + g.name + "'", kMaxCount, 40);
    for (uint32_t i = 0; i < node_count; ++i) {
      std::string name = r_.string("node name");
      Node* n = g.add_node(r_.string("op_type of node '" + name + "'"), std::move(name));
      const std::string field = "node '" + n->name + "'";
      n->domain = r_.string(field + " domain");
      n->opset = r_.i64(field + " opset");
      const uint32_t inputs = r_.count(field + " input count", kMaxCount, 8);
      for (uint32_t k = 0; k < inputs; ++k) g.set_input(n, k, ref(field + " input"));
      const uint32_t outputs = r_.count(field + " output count", kMaxCount, 8);
      for (uint32_t k = 0; k < outputs; ++k) {
        Value* v = ref(field + " output");
        if (v && (v->owner != &g || v->producer))
          r_.corrupt(field + " output '" + v->name + "' is not a fresh value of its graph");
        g.set_output(n, k, v);
      }
      n->attributes.resize(r_.count(field + " attribute count", kMaxCount, 5));
      for (Attribute& a : n->attributes) attribute(a, *n);
    }
    for (auto* list : {&g.inputs, &g.outputs}) {
      list->resize(r_.count("input/output count of graph '" + g.name + "'", kMaxCount, 8));
      for (Value*& v : *list) {
        v = ref("graph input/output");
        if (!v) r_.corrupt("graph '" + g.name + "' lists an empty input or output");
      }
    }
    scopes_.pop_back();
    graphs_.pop_back();
    // Nodes reading values produced later (or in a cycle) are refused here,
    // naming a node, before anything runs them.
    g.sort_topologically();
  }

  ByteReader r_;
  std::span<const uint8_t> block_;
  std::shared_ptr<const void> owner_;
  std::vector<std::vector<Value*>> scopes_;
  std::vector<Graph*> graphs_;
};

}  // namespace

void encode_tensor(ByteWriter& w, const Tensor& t) {
  w.u32(static_cast<uint32_t>(t.dtype()));
  if (t.empty()) return;
  w.u32(static_cast<uint32_t>(t.rank()));
  for (int64_t d : t.shape()) w.i64(d);
  w.u64(t.nbytes());
  w.align(kTensorAlign);
  w.raw({static_cast<const uint8_t*>(t.raw()), t.nbytes()});
}

Tensor decode_tensor(ByteReader& r, const std::string& field, std::shared_ptr<const void> owner) {
  const auto dtype = static_cast<DType>(r.uint(4, field + " dtype"));
  if (dtype == DType::Undefined) return {};
  if (dtype_size(dtype) == 0) r.corrupt(field + " has dtype " + std::to_string(static_cast<int>(dtype)));
  const uint32_t rank = r.count(field + " rank", 64, 8);
  Shape shape(rank);
  for (int64_t& d : shape) d = r.i64(field + " dim");
  size_t numel = 0;
  try {
    numel = shape_numel(shape);
  } catch (const Failure&) {
    r.corrupt(field + " has shape " + shape_to_string(shape));
  }
  const uint64_t nbytes = r.uint(8, field + " byte count");
  if (nbytes != numel * dtype_size(dtype)) r.corrupt(field + " byte count disagrees with its shape");
  r.align(kTensorAlign, field + " padding");
  const auto data = r.take(nbytes, field + " data");
  return Tensor::wrap(dtype, std::move(shape), const_cast<uint8_t*>(data.data()), std::move(owner));
}

std::vector<uint8_t> encode_model(const Model& model) { return Encoder().model(model); }

std::unique_ptr<Model> decode_model(std::span<const uint8_t> bytes, std::shared_ptr<const void> owner,
                                    const std::string& what) {
  if (reinterpret_cast<uintptr_t>(bytes.data()) % kTensorAlign != 0)
    fail(HETERO_INTERNAL, what + ": IR decoded in place must start 64-byte aligned");
  try {
    return Decoder(bytes, std::move(owner), what).model(what);
  } catch (const Failure& e) {
    if (e.status() == HETERO_BLOB_CORRUPT) throw;
    throw Failure(HETERO_BLOB_CORRUPT, what + ": " + e.what());  // a cycle, a bad shape
  }
}

std::unique_ptr<Model> decode_model(std::span<const uint8_t> bytes, const std::string& what) {
  std::shared_ptr<const void> block = aligned_block(bytes.empty() ? 1 : bytes.size());
  std::memcpy(const_cast<void*>(block.get()), bytes.data(), bytes.size());
  const std::span<const uint8_t> copy(static_cast<const uint8_t*>(block.get()), bytes.size());
  return decode_model(copy, std::move(block), what);
}

void encode_ports(ByteWriter& w, const std::vector<driver::Port>& ports) {
  w.u32(static_cast<uint32_t>(ports.size()));
  for (const driver::Port& p : ports) {
    w.string(p.name);
    w.u32(static_cast<uint32_t>(p.dtype));
    w.u8(p.has_rank);
    w.u32(static_cast<uint32_t>(p.shape.size()));
    for (const Dim& d : p.shape) {
      w.i64(d.size);
      w.string(d.param);
    }
  }
}

std::vector<driver::Port> decode_ports(ByteReader& r, const std::string& field) {
  // 13: the smallest port (an empty name, dtype, has_rank, rank 0).
  std::vector<driver::Port> ports(r.count(field + " count", 1u << 20, 13));
  for (driver::Port& p : ports) {
    p.name = r.string(field + " name");
    const auto dtype = static_cast<uint32_t>(r.uint(4, field + " dtype"));
    if (!dtype_is_known(static_cast<int32_t>(dtype))) r.corrupt(field + " has an unknown dtype");
    p.dtype = static_cast<DType>(dtype);
    p.has_rank = r.u8(field + " has_rank") != 0;
    p.shape.resize(r.count(field + " rank", 64, 12));
    for (Dim& d : p.shape) {
      d.size = r.i64(field + " dim");
      d.param = r.string(field + " dim name");
    }
  }
  return ports;
}

}  // namespace hetero::core
