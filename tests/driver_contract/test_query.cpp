// Query: one answer per node of the main graph, in graph order; a node the
// device does not run has a reason, and compiling a model with one names it;
// the 'ops' config keeps a device to some op types, and says so.
#include <string>
#include <vector>

#include "tests/driver_contract/contract.h"
#include "tests/driver_contract/contract_models.h"

namespace hetero::contract {
namespace {

struct NodeAnswer {
  std::string name, op_type;
  bool supported;
  std::string reason;
};

class Query : public DeviceTest {
 protected:
  std::vector<NodeAnswer> query(const hetero_model_t* model, const Config& config = {}) const {
    hetero_query_result_t* result = nullptr;
    EXPECT_OK(try_query(model, config, &result));
    QueryPtr owned(result);
    std::vector<NodeAnswer> out;
    size_t count = 0;
    if (!result || hetero_query_result_get_node_count(result, &count) != HETERO_OK) return out;
    for (size_t i = 0; i < count; ++i) {
      const char *name = nullptr, *op = nullptr, *reason = nullptr;
      int supported = -1;
      EXPECT_OK(hetero_query_result_get_node(result, &name, &op, &supported, &reason, i));
      EXPECT_TRUE(supported == 0 || supported == 1) << supported;
      out.push_back({name ? name : "", op ? op : "", supported == 1, reason ? reason : ""});
    }
    const char* name = nullptr;
    EXPECT_REFUSED(hetero_query_result_get_node(result, &name, nullptr, nullptr, nullptr, count),
                   HETERO_INVALID_ARGUMENT);
    return out;
  }

  // Compiling `model` with `config` fails with NOT_SUPPORTED naming `node`
  // and its op.
  void expect_compile_names(const hetero_model_t* model, const Config& config, const NodeAnswer& node) const {
    hetero_compiled_model_t* compiled = nullptr;
    EXPECT_REFUSED(try_compile(model, config, &compiled), HETERO_NOT_SUPPORTED, node.name, "(" + node.op_type + ")");
    EXPECT_EQ(compiled, nullptr);
  }
};

TEST_P(Query, EveryNodeIsAnsweredInGraphOrder) {
  for (const TestModel* m : test_models()) {
    SCOPED_TRACE(m->name);
    ModelPtr model = read_model(m->text);
    const std::vector<NodeAnswer> answers = query(model.get());
    // The nodes as the model lists them: the same query on CPU, which runs
    // every node of these models.
    hetero_query_result_t* cpu = nullptr;
    ASSERT_OK(hetero_query(&cpu, core(), model.get(), "CPU", nullptr, nullptr, 0));
    QueryPtr owned(cpu);
    size_t count = 0;
    ASSERT_OK(hetero_query_result_get_node_count(cpu, &count));
    ASSERT_EQ(answers.size(), count);
    for (size_t i = 0; i < count; ++i) {
      const char *name = nullptr, *op = nullptr;
      ASSERT_OK(hetero_query_result_get_node(cpu, &name, &op, nullptr, nullptr, i));
      EXPECT_EQ(answers[i].name, name);
      EXPECT_EQ(answers[i].op_type, op);
      EXPECT_TRUE(answers[i].supported) << answers[i].name << ": " << answers[i].reason;
      EXPECT_EQ(answers[i].reason, "") << "a supported node with a reason";
    }
  }
}

TEST_P(Query, AnOpWithoutAKernelIsNamedByQueryAndCompile) {
  ModelPtr model = read_model(kReluInverseModel);
  const std::vector<NodeAnswer> answers = query(model.get());
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_TRUE(answers[0].supported) << answers[0].reason;
  EXPECT_FALSE(answers[1].supported);
  EXPECT_NE(answers[1].reason.find("Inverse"), std::string::npos) << answers[1].reason;
  expect_compile_names(model.get(), {}, answers[1]);
}

TEST_P(Query, OpsConfigKeepsTheDeviceToSomeOps) {
  const TestModel& m = two_outputs_model();  // Constant, MatMul, Relu, Neg
  ModelPtr model = read_model(m.text);
  const Config ops = device_case().driver_key("ops", "MatMul, Neg");
  const std::vector<NodeAnswer> answers = query(model.get(), ops);
  ASSERT_EQ(answers.size(), 4u);
  EXPECT_TRUE(answers[1].supported) << answers[1].reason;
  EXPECT_FALSE(answers[2].supported);
  EXPECT_NE(answers[2].reason.find("Relu is left out"), std::string::npos) << answers[2].reason;
  EXPECT_NE(answers[2].reason.find("'ops' config"), std::string::npos) << answers[2].reason;
  EXPECT_TRUE(answers[3].supported) << answers[3].reason;
  expect_compile_names(model.get(), ops, answers[2]);
  // An 'ops' list naming every op compiles.
  CompiledPtr all = compile(model.get(), device_case().driver_key("ops", "MatMul,Relu,Neg"));
  ASSERT_TRUE(all);
  expect_same(infer(all.get(), m.inputs), reference(m.text, m.inputs), device_case().exact, "ops naming all");
}

HETERO_CONTRACT_INSTANTIATE(Query);

}  // namespace
}  // namespace hetero::contract
