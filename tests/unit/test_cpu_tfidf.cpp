// TfIdfVectorizer: n-gram counting with skips over rows of integer tokens,
// the three weightings, and pools that do not describe whole n-grams,
// refused at compile naming the node.
#include "tests/unit/kernel_harness.h"

namespace hetero::cpu::testing {
namespace {

using core::Tensor;

// Pool: unigrams 2, 3 (columns 0, 1) and bigrams (5, 6), (7, 8) (columns 2, 3).
std::string model(const std::string& mode, const std::string& extra, int64_t min_n, int64_t max_n, int64_t skip) {
  return R"(<ir_version: 8, opset_import: ["" : 9]>
g (int64[2, 6] x) => (float[2, 4] y) {
  y = TfIdfVectorizer <mode = ")" +
         mode + "\", min_gram_length = " + std::to_string(min_n) + ", max_gram_length = " + std::to_string(max_n) +
         ", max_skip_count = " + std::to_string(skip) +
         ", ngram_counts = [0, 2], ngram_indexes = [0, 1, 2, 3], pool_int64s = [2, 3, 5, 6, 7, 8]" + extra +
         "> (x)\n}";
}

Tensor tokens() { return tensor<int64_t>({2, 5, 6, 2, 3, 9, /**/ 5, 9, 6, 7, 8, 2}, {2, 6}); }

TEST(CpuTfIdf, CountsUnigramsOnceAndBigramsPerSkip) {
  // Row 0: 2 twice, 3 once, (5, 6) adjacent. Row 1: 2 once, (7, 8) adjacent,
  // (5, 6) one token apart: counted only with a skip of 1 or more.
  EXPECT_TRUE(near(run_model(model("TF", "", 1, 2, 0).c_str(), {tokens()})[0], {2, 1, 1, 0, 1, 0, 0, 1}, 0));
  EXPECT_TRUE(near(run_model(model("TF", "", 1, 2, 1).c_str(), {tokens()})[0], {2, 1, 1, 0, 1, 0, 1, 1}, 0));
  EXPECT_TRUE(near(run_model(model("TF", "", 2, 2, 1).c_str(), {tokens()})[0], {0, 0, 1, 0, 0, 0, 1, 1}, 0));
}

TEST(CpuTfIdf, IdfAndTfIdfWeighTheCounts) {
  const std::string weights = ", weights = [0.5, 2.0, 3.0, 4.0]";
  EXPECT_TRUE(near(run_model(model("IDF", weights, 1, 2, 0).c_str(), {tokens()})[0], {0.5, 2, 3, 0, 0.5, 0, 0, 4}, 0));
  EXPECT_TRUE(near(run_model(model("TFIDF", weights, 1, 2, 0).c_str(), {tokens()})[0], {1, 2, 3, 0, 0.5, 0, 0, 4}, 0));
  // Without weights IDF marks presence.
  EXPECT_TRUE(near(run_model(model("IDF", "", 1, 2, 0).c_str(), {tokens()})[0], {1, 1, 1, 0, 1, 0, 0, 1}, 0));
}

TEST(CpuTfIdf, PoolsThatAreNotWholeNgramsAreRefusedNamingTheNode) {
  expect_compile_error(R"(<ir_version: 8, opset_import: ["" : 9]>
g (int64[6] x) => (float[2] y) {
  y = TfIdfVectorizer <mode = "TF", min_gram_length = 2, max_gram_length = 2, max_skip_count = 0,
                       ngram_counts = [0, 0], ngram_indexes = [0, 1], pool_int64s = [5, 6, 7]> (x)
})",
                       HETERO_INVALID_MODEL, {"(TfIdfVectorizer)", "does not split pool_int64s"});
  expect_compile_error(R"(<ir_version: 8, opset_import: ["" : 9]>
g (int64[6] x) => (float[2] y) {
  y = TfIdfVectorizer <mode = "BM25", min_gram_length = 1, max_gram_length = 1, max_skip_count = 0,
                       ngram_counts = [0], ngram_indexes = [0, 1], pool_int64s = [5, 6]> (x)
})",
                       HETERO_INVALID_MODEL, {"(TfIdfVectorizer)", "mode must be TF, IDF or TFIDF"});
}

}  // namespace
}  // namespace hetero::cpu::testing
