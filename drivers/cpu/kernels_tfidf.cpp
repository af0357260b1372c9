// TfIdfVectorizer (opset 9 and later) over integer tokens: the n-gram
// counts of a text model's bag-of-words features.
//
// The pool lists the n-grams to count, grouped by length: ngram_counts[i] is
// where the (i+1)-grams start in the pool, and ngram_indexes gives each pooled
// n-gram (in pool order) its column of the output. Each row of the input is
// scanned for every n-gram of a length in [min_gram_length, max_gram_length]
// whose tokens are `skip + 1` apart, for every skip up to max_skip_count (a
// unigram is counted once, whatever the skip). Then TF keeps the counts, IDF
// puts the n-gram's weight (1 without weights) where the count is not zero,
// and TFIDF multiplies count and weight.
//
// The pool is looked up in a hash map from the n-gram's tokens, built once at
// compile; string tokens are not handled (heterod's tensors hold numbers).
#include <algorithm>
#include <unordered_map>
#include <vector>

#include "drivers/cpu/layout_util.h"
#include "drivers/cpu/kernel_factories.h"

namespace hetero::cpu {

namespace {

using core::DType;
using core::Shape;
using core::Tensor;

enum class Weighting { TF, IDF, TFIDF };

struct VectorHash {
  size_t operator()(const std::vector<int64_t>& v) const noexcept {
    size_t h = v.size();
    for (int64_t x : v) h = h * 1000003u ^ std::hash<int64_t>()(x);
    return h;
  }
};

struct TfIdfSpec {
  int64_t min_n = 1, max_n = 1, max_skip = 0;
  Weighting weighting = Weighting::TF;
  int64_t columns = 0;
  std::unordered_map<std::vector<int64_t>, int64_t, VectorHash> column_of;  // n-gram tokens -> output column
  std::vector<float> column_weight;                                          // 1 without weights
};

TfIdfSpec read_spec(const KernelBuild& b) {
  const core::Node& n = b.node;
  TfIdfSpec s;
  s.min_n = n.attr_int("min_gram_length", 0);
  s.max_n = n.attr_int("max_gram_length", 0);
  s.max_skip = n.attr_int("max_skip_count", 0);
  if (s.min_n < 1 || s.max_n < s.min_n)
    b.invalid("min_gram_length and max_gram_length must satisfy 1 <= min <= max, got " + std::to_string(s.min_n) +
              " and " + std::to_string(s.max_n));
  if (s.max_skip < 0) b.invalid("max_skip_count must not be negative, got " + std::to_string(s.max_skip));
  const std::string mode = n.attr_string("mode", "");
  if (mode == "TF") s.weighting = Weighting::TF;
  else if (mode == "IDF") s.weighting = Weighting::IDF;
  else if (mode == "TFIDF") s.weighting = Weighting::TFIDF;
  else b.invalid("mode must be TF, IDF or TFIDF, got '" + mode + "'");

  if (n.has_attr("pool_strings")) b.unsupported("string tokens (pool_strings) are not supported");
  const std::vector<int64_t> pool = n.attr_ints("pool_int64s");
  const std::vector<int64_t> starts = n.attr_ints("ngram_counts");
  const std::vector<int64_t> indexes = n.attr_ints("ngram_indexes");
  const std::vector<float> weights = n.attr_floats("weights");
  if (!weights.empty() && weights.size() != indexes.size())
    b.invalid("weights has " + std::to_string(weights.size()) + " values for " + std::to_string(indexes.size()) +
              " n-grams");
  size_t gram = 0;  // the n-gram's position in pool order
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t len = static_cast<int64_t>(i) + 1;
    const int64_t begin = starts[i];
    const int64_t end = i + 1 < starts.size() ? starts[i + 1] : static_cast<int64_t>(pool.size());
    if (begin < 0 || end < begin || end > static_cast<int64_t>(pool.size()) || (end - begin) % len)
      b.invalid("ngram_counts does not split pool_int64s (" + std::to_string(pool.size()) +
                " tokens) into whole n-grams at entry " + std::to_string(i));
    for (int64_t p = begin; p < end; p += len, ++gram) {
      if (gram >= indexes.size())
        b.invalid("ngram_indexes has " + std::to_string(indexes.size()) + " entries, the pool more n-grams");
      if (indexes[gram] < 0) b.invalid("ngram_indexes holds a negative column");
      s.column_of.emplace(std::vector<int64_t>(pool.begin() + p, pool.begin() + p + len), indexes[gram]);
      s.columns = std::max(s.columns, indexes[gram] + 1);
    }
  }
  if (gram != indexes.size())
    b.invalid("ngram_indexes has " + std::to_string(indexes.size()) + " entries for " + std::to_string(gram) +
              " pooled n-grams");
  s.column_weight.assign(static_cast<size_t>(s.columns), 1.0f);
  if (!weights.empty())
    for (size_t g = 0; g < indexes.size(); ++g) s.column_weight[static_cast<size_t>(indexes[g])] = weights[g];
  return s;
}

// Counts the pooled n-grams of one row of `len` tokens into `counts`.
void count_row(const TfIdfSpec& s, const Tensor& x, size_t offset, int64_t len, std::vector<float>& counts) {
  std::vector<int64_t> gram;
  for (int64_t start = 0; start < len; ++start) {
    for (int64_t n = s.min_n; n <= s.max_n; ++n) {
      for (int64_t skip = 0; skip <= (n == 1 ? 0 : s.max_skip); ++skip) {
        const int64_t last = start + (n - 1) * (skip + 1);
        if (last >= len) break;
        gram.clear();
        for (int64_t k = start; k <= last; k += skip + 1) gram.push_back(x.as_int64(offset + static_cast<size_t>(k)));
        auto it = s.column_of.find(gram);
        if (it != s.column_of.end()) counts[static_cast<size_t>(it->second)] += 1;
      }
    }
  }
}

}  // namespace

std::unique_ptr<Kernel> make_tfidf_vectorizer(const KernelBuild& b) {
  const DType in = b.input_dtype(0);
  if (in != DType::Undefined && in != DType::I32 && in != DType::I64)
    b.unsupported(std::string("only int32 and int64 tokens are supported, got ") + core::dtype_name(in));
  auto spec = std::make_shared<const TfIdfSpec>(read_spec(b));
  return make_fn_kernel([spec](KernelRun& r) {
    const TfIdfSpec& s = *spec;
    const Tensor& x = required_input(r, 0);
    if (x.dtype() != DType::I32 && x.dtype() != DType::I64)
      bad_input(r.node(), std::string("tokens must be int32 or int64, got ") + core::dtype_name(x.dtype()));
    if (x.rank() != 1 && x.rank() != 2)
      bad_input(r.node(), "the input must be [C] or [N, C], got " + core::shape_to_string(x.shape()));
    const int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
    const int64_t len = x.rank() == 2 ? x.dim(1) : x.dim(0);
    const Shape out_shape = x.rank() == 2 ? Shape{rows, s.columns} : Shape{s.columns};
    Tensor& y = r.output(0, DType::F32, out_shape);
    std::vector<float> counts(static_cast<size_t>(s.columns));
    for (int64_t row = 0; row < rows; ++row) {
      std::fill(counts.begin(), counts.end(), 0.0f);
      count_row(s, x, static_cast<size_t>(row * len), len, counts);
      float* out = y.data<float>() + row * s.columns;
      for (size_t c = 0; c < counts.size(); ++c) {
        switch (s.weighting) {
          case Weighting::TF: out[c] = counts[c]; break;
          case Weighting::IDF: out[c] = counts[c] > 0 ? s.column_weight[c] : 0.0f; break;
          case Weighting::TFIDF: out[c] = counts[c] * s.column_weight[c]; break;
        }
      }
    }
  });
}

}  // namespace hetero::cpu
