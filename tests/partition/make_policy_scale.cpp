// Writes a long chain model and an affinity policy that names half of its
// nodes one by one, for timing `hetero partition` at scale:
//
//   make_policy_scale DIR NODES [RUN]
//
//   DIR/chain.onnx   NODES nodes node_0 .. node_{NODES-1}, alternately Relu
//                    and Neg, each reading the one before (float[1, 8])
//   DIR/policy.yaml  devices [CPU, CPU.1]; rule 1 pins every other run of
//                    RUN nodes (the 2nd, 4th, ...) to CPU.1 by exact name;
//                    rule 2 sends the rest to CPU by the glob "node_*"; rule 3
//                    names an op the model lacks (one warning)
//
// The plan is then NODES / RUN subgraphs alternating CPU, CPU.1, ... (RUN
// defaults to 10). Generated when the test runs: nothing this size is
// committed.
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

void set_float_tensor_type(onnx::ValueInfoProto& value, const std::string& name) {
  value.set_name(name);
  auto* tensor = value.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  tensor->mutable_shape()->add_dim()->set_dim_value(1);
  tensor->mutable_shape()->add_dim()->set_dim_value(8);
}

// (Built by appending: GCC 12 warns, wrongly, on "x" + std::to_string().)
std::string numbered(const char* prefix, unsigned long i) {
  std::string name = prefix;
  return name += std::to_string(i);
}

std::string node_name(unsigned long i) { return numbered("node_", i); }

bool write_model(const std::string& path, unsigned long nodes) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("heterod-policy-scale");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("chain");
  set_float_tensor_type(*graph->add_input(), "x");
  std::string previous = "x";
  for (unsigned long i = 0; i < nodes; ++i) {
    onnx::NodeProto* node = graph->add_node();
    node->set_name(node_name(i));
    node->set_op_type(i % 2 ? "Neg" : "Relu");
    node->add_input(previous);
    previous = i + 1 == nodes ? "y" : numbered("t", i);
    node->add_output(previous);
  }
  set_float_tensor_type(*graph->add_output(), "y");
  std::string bytes;
  if (!model.SerializeToString(&bytes)) return false;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

bool write_policy(const std::string& path, unsigned long nodes, unsigned long run) {
  std::ofstream out(path, std::ios::trunc);
  out << "# " << nodes << "-node chain: every other run of " << run << " nodes on CPU.1, by name\n"
      << "devices: [CPU, CPU.1]\n"
      << "rules:\n"
      << "  - device: CPU.1\n"
      << "    nodes:\n";
  for (unsigned long i = 0; i < nodes; ++i)
    if ((i / run) % 2 == 1) out << "      - " << node_name(i) << "\n";
  out << "  - device: CPU\n"
      << "    nodes: [\"node_*\"]\n"
      << "  - device: CPU.1\n"
      << "    ops: [Sigmoid]\n";
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: make_policy_scale DIR NODES [RUN]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const unsigned long nodes = std::strtoul(argv[2], nullptr, 10);
  const unsigned long run = argc == 4 ? std::strtoul(argv[3], nullptr, 10) : 10;
  if (nodes == 0 || run == 0) {
    std::fprintf(stderr, "make_policy_scale: NODES and RUN must be positive\n");
    return 2;
  }
  if (!write_model(dir + "/chain.onnx", nodes) || !write_policy(dir + "/policy.yaml", nodes, run)) {
    std::fprintf(stderr, "make_policy_scale: cannot write into %s\n", dir.c_str());
    return 1;
  }
  return 0;
}
