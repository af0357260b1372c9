// Affinity policies: the documented example parses, and every mistake is an
// error naming the file and line (and a rule that matches nothing a warning).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <utility>
#include <string>

#include "core/error.h"
#include "partition/policy.h"
#include "tests/unit/model_text.h"

namespace hetero::partition {
namespace {

// The message of the error `text` fails with, or "" when it parses.
std::string policy_error(const std::string& text) {
  try {
    parse_policy(text, "p.yaml");
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_INVALID_ARGUMENT) << e.what();
    return e.what();
  }
  return "";
}

TEST(Policy, DocumentedExampleParses) {
  const Policy p = load_policy(POLICY_EXAMPLE);
  EXPECT_EQ(p.devices, (std::vector<std::string>{"OPENCL", "CPU"}));
  EXPECT_TRUE(p.fallback);
  ASSERT_EQ(p.rules.size(), 2u);
  EXPECT_EQ(p.rules[0].device, "CPU");
  EXPECT_EQ(p.rules[0].nodes.listed(), (std::vector<std::string>{"4", "head/*"}));
  EXPECT_EQ(p.rules[1].ops.listed(), (std::vector<std::string>{"Conv", "Relu"}));
  EXPECT_GT(p.rules[1].line, p.rules[0].line);
}

TEST(Policy, RulesMatchFirstByNameGlobOrOp) {
  const auto model = test::model_from_text(R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] y) {
  a = Relu (x)
  b = Neg (a)
  y = Relu (b)
}
)ONNX");
  // Import names unnamed nodes OP_INDEX: Relu_0, Neg_1, Relu_2.
  const Policy p = parse_policy("devices: [CPU, CPU.1]\nrules:\n  - {device: CPU.1, nodes: ['Neg_*', 'Relu_2']}\n"
                                "  - {device: CPU, ops: [Relu]}\n  - {device: CPU.1, ops: [Sigmoid]}\n",
                                "p.yaml");
  const auto& nodes = model->graph.nodes();
  ASSERT_EQ(nodes.size(), 3u);
  ASSERT_NE(p.rule_for(*nodes[0]), nullptr);
  EXPECT_EQ(p.rule_for(*nodes[0])->device, "CPU");    // by op
  EXPECT_EQ(p.rule_for(*nodes[1])->device, "CPU.1");  // by glob
  EXPECT_EQ(p.rule_for(*nodes[2])->device, "CPU.1");  // by name, before the op rule
  const auto warnings = p.unused_rule_warnings(model->graph);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "p.yaml:5: rule for CPU.1 matches no node of the model");
}

// Names are looked up in a hash set and plain "prefix*" globs by prefix;
// what matches is what fnmatch(3) (flags 0) or equality would say.
TEST(Policy, NodeNamesMatchExactlyOrAsGlobs) {
  const NamePatterns nodes({"conv1", "head/*", "*_bias", "block[0-2]/relu", "a[1]", "esc\\*", "x?"},
                           NamePatterns::Globs::Allowed);
  EXPECT_TRUE(nodes.matches("conv1"));
  EXPECT_FALSE(nodes.matches("conv10"));
  EXPECT_FALSE(nodes.matches("conv"));
  EXPECT_TRUE(nodes.matches("head/"));
  EXPECT_TRUE(nodes.matches("head/fc/MatMul"));  // '*' crosses '/'
  EXPECT_FALSE(nodes.matches("head"));
  EXPECT_FALSE(nodes.matches("body/head/x"));
  EXPECT_TRUE(nodes.matches("fc_bias"));
  EXPECT_TRUE(nodes.matches("block1/relu"));
  EXPECT_FALSE(nodes.matches("block3/relu"));
  EXPECT_TRUE(nodes.matches("a1"));
  EXPECT_TRUE(nodes.matches("a[1]"));  // listed literally, though as a glob it means "a1"
  EXPECT_TRUE(nodes.matches("esc*"));
  EXPECT_FALSE(nodes.matches("escape"));
  EXPECT_TRUE(nodes.matches("xy"));
  EXPECT_FALSE(nodes.matches("xyz"));
  EXPECT_TRUE(NamePatterns({"*"}, NamePatterns::Globs::Allowed).matches(""));

  // Op types are exact: a '*' in an op list is no glob.
  const NamePatterns ops({"Relu", "Conv*"}, NamePatterns::Globs::None);
  EXPECT_TRUE(ops.matches("Relu"));
  EXPECT_FALSE(ops.matches("ConvTranspose"));
  EXPECT_TRUE(ops.matches("Conv*"));
}

TEST(Policy, MistakesNameFileAndLine) {
  EXPECT_EQ(policy_error("devices: [CPU]\nfallback: true\n"), "");
  EXPECT_NE(policy_error("devices: [CPU\nrules: x\n").find("p.yaml:"), std::string::npos);
  EXPECT_NE(policy_error("devices: [CPU]\ncolour: red\n").find("p.yaml:2: unknown key 'colour'"), std::string::npos);
  EXPECT_NE(policy_error("devices: [CPU]\nrules:\n  - device: GPU\n    ops: [Conv]\n")
                .find("p.yaml:3: rule device 'GPU' is not among the policy's devices"),
            std::string::npos);
  EXPECT_NE(policy_error("devices: [CPU]\nrules:\n  - device: CPU\n    opps: [Conv]\n")
                .find("p.yaml:4: unknown rule key 'opps'"),
            std::string::npos);
  EXPECT_NE(policy_error("devices: [CPU]\nrules:\n  - device: CPU\n").find("p.yaml:3: rule has neither"),
            std::string::npos);
  EXPECT_NE(policy_error("devices: [CPU]\nfallback: maybe\n").find("p.yaml:2: 'fallback' must be true or false"),
            std::string::npos);
  EXPECT_NE(policy_error("fallback: true\n").find("names no 'devices'"), std::string::npos);
  EXPECT_NE(policy_error("devices: [CPU, CPU]\n").find("listed twice"), std::string::npos);
  EXPECT_NE(policy_error("devices: [CPU]\nfallback: true\ndevices: [OPENCL]\n")
                .find("p.yaml:3: 'devices' is given twice (first at line 1)"),
            std::string::npos);
  EXPECT_NE(policy_error("devices: [CPU]\nrules:\n  - {device: CPU, ops: [Conv], ops: [Relu]}\n")
                .find("p.yaml:3: 'ops' is given twice"),
            std::string::npos);
  EXPECT_NE(policy_error("devices: ['HETERO:CPU']\n").find("HETERO device"), std::string::npos);
  EXPECT_NE(policy_error("devices: [cpu]\n").find("p.yaml:1:"), std::string::npos);
  EXPECT_NE(policy_error("- a\n- b\n").find("p.yaml:1: a policy must be a mapping"), std::string::npos);
}

TEST(Policy, MissingFileIsNamed) {
  try {
    load_policy("/nonexistent/policy.yaml");
    ADD_FAILURE();
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_NOT_FOUND);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/policy.yaml"), std::string::npos);
  }
}

// A policy path that names no policy: refused at once, naming it, never
// read (a FIFO would block the loader, /dev/zero would read without end).
TEST(Policy, NonFilesAndHugeFilesAreRefused) {
  auto error_of = [](const std::string& path) -> std::pair<hetero_status, std::string> {
    try {
      load_policy(path);
    } catch (const Failure& e) {
      return {e.status(), e.what()};
    }
    return {HETERO_OK, "(no error)"};
  };
  EXPECT_EQ(error_of("/dev/zero"),
            std::make_pair(HETERO_IO_ERROR, std::string("/dev/zero is a character device, not a regular file")));
  const std::string dir = ::testing::TempDir();
  EXPECT_EQ(error_of(dir).first, HETERO_IO_ERROR);
  EXPECT_NE(error_of(dir).second.find("is a directory, not a regular file"), std::string::npos);
  const std::string huge = dir + "/huge-policy.yaml";
  {
    std::ofstream out(huge);
    out << "devices: [CPU]\n" << std::string((1 << 20) + 1, '#');
  }
  const auto [status, message] = error_of(huge);
  EXPECT_EQ(status, HETERO_INVALID_ARGUMENT) << message;
  EXPECT_NE(message.find(huge + " is "), std::string::npos) << message;
  EXPECT_NE(message.find("a policy file may be at most 1 MiB"), std::string::npos) << message;
  std::remove(huge.c_str());
}

}  // namespace
}  // namespace hetero::partition
