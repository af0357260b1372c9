// The built-in stream stages (pipeline/stream_stages.h): a window's
// emissions do not depend on how the stream is cut into calls.
#include <gtest/gtest.h>

#include <numeric>

#include "core/error.h"
#include "pipeline/stream_stages.h"

namespace hetero::pipeline {
namespace {

using core::Tensor;

// Steps 1, 2, 3, ... as a [1, n] float tensor, from `first`.
Tensor steps(float first, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), first);
  return Tensor::from_vector(v, {1, n});
}

std::vector<float> values(const Tensor& t) { return {t.values<float>().begin(), t.values<float>().end()}; }

Window::State empty_state(const Window& w, core::Shape shape) {
  shape[w.axis] = w.size;
  return {Tensor::allocate(core::DType::F32, shape), 0};
}

// Every window of a stream of `total` steps fed in calls of `chunk` steps.
std::vector<std::vector<float>> stream(const Window& w, int64_t total, int64_t chunk) {
  Window::State state = empty_state(w, {1, 1});
  std::vector<std::vector<float>> out;
  for (int64_t at = 0; at < total; at += chunk) {
    const int64_t n = std::min(chunk, total - at);
    for (const Tensor& t : w.push(state, steps(static_cast<float>(at + 1), n), 1000, "w")) out.push_back(values(t));
  }
  return out;
}

TEST(Window, EmitsEveryStepOnceFull) {
  const Window w{1, 4, 2, false};
  const std::vector<std::vector<float>> want{{1, 2, 3, 4}, {3, 4, 5, 6}, {5, 6, 7, 8}, {7, 8, 9, 10}};
  for (int64_t chunk : {1, 2, 3, 5, 10}) EXPECT_EQ(stream(w, 10, chunk), want) << "calls of " << chunk << " steps";
}

TEST(Window, PrefilledStartsWithZeros) {
  const Window w{1, 3, 1, true};
  const std::vector<std::vector<float>> want{{0, 0, 1}, {0, 1, 2}, {1, 2, 3}, {2, 3, 4}};
  for (int64_t chunk : {1, 3, 4}) EXPECT_EQ(stream(w, 4, chunk), want);
  // Silero's frames: 2 steps of context, then 3 new ones, every 3.
  const Window frames{1, 5, 3, true};
  const std::vector<std::vector<float>> framed{{0, 0, 1, 2, 3}, {2, 3, 4, 5, 6}, {5, 6, 7, 8, 9}};
  for (int64_t chunk : {1, 2, 4, 9}) EXPECT_EQ(stream(frames, 10, chunk), framed);
}

TEST(Window, KeepsItsStateBetweenCalls) {
  const Window w{1, 4, 2, false};
  Window::State state = empty_state(w, {1, 1});
  EXPECT_TRUE(w.push(state, steps(1, 3), 10, "w").empty());
  EXPECT_EQ(state.steps, 3);
  EXPECT_EQ(values(state.buffer), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(w.push(state, steps(4, 0), 10, "w").size(), 0u);  // no steps: nothing changes
  EXPECT_EQ(state.steps, 3);
  EXPECT_EQ(w.push(state, steps(4, 4), 10, "w").size(), 2u);
  EXPECT_EQ(state.steps, 5);  // full (4), and one step since the last window
}

TEST(Window, AlongAnInnerAxisWithRowsAbove) {
  // Two rows (channels), steps along axis 1, two values a step: windows are copies.
  const Window w{1, 2, 1, false};
  Window::State state = empty_state(w, {2, 1, 2});
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 1, 2, 2, 3, 3, -1, -1, -2, -2, -3, -3}, {2, 3, 2});
  const std::vector<Tensor> out = w.push(state, x, 10, "w");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), (core::Shape{2, 2, 2}));
  EXPECT_EQ(values(out[0]), (std::vector<float>{1, 1, 2, 2, -1, -1, -2, -2}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{2, 2, 3, 3, -2, -2, -3, -3}));
  EXPECT_EQ(values(state.buffer), values(out[1]));
}

TEST(Window, RefusesWhatDoesNotFit) {
  const Window w{1, 4, 2, false};
  Window::State state = empty_state(w, {1, 1});
  const auto refused = [&](const Tensor& x, size_t max, const std::string& says) {
    try {
      w.push(state, x, max, "stage 'frames'");
      ADD_FAILURE() << "accepted";
    } catch (const Failure& e) {
      EXPECT_EQ(e.status(), HETERO_INVALID_ARGUMENT);
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused(Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2}), 10, "does not go on its window");
  refused(Tensor::from_vector(std::vector<int64_t>{1, 2}, {1, 2}), 10, "int64");
  refused(steps(1, 100), 3, "more than 3 windows");
  state.steps = 6;  // past size + step - 1
  refused(steps(1, 1), 10, "outside 0..5");
}

TEST(Concat, JoinsAlongTheAxisAndMakesEmptyOfNothing) {
  const Tensor a = Tensor::from_vector(std::vector<float>{1, 2}, {1, 2});
  const Tensor b = Tensor::from_vector(std::vector<float>{3, 4}, {1, 2});
  EXPECT_EQ(values(concat({a, b}, 0, core::DType::F32, {0, 2}, "c")), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(concat({a, b}, 1, core::DType::F32, {1, 0}, "c").shape(), (core::Shape{1, 4}));
  const Tensor none = concat({}, 0, core::DType::F32, {0, 1}, "c");
  EXPECT_EQ(none.shape(), (core::Shape{0, 1}));
  EXPECT_EQ(none.numel(), 0u);
  EXPECT_THROW(concat({a, Tensor::from_vector(std::vector<float>{1, 2, 3}, {1, 3})}, 0, core::DType::F32, {0, 2}, "c"),
               Failure);
}

TEST(Scale, IsAnAffineMap) {
  EXPECT_EQ(values(scale(Tensor::from_vector(std::vector<float>{0, 10, -20}, {3}), 0.1f, 2.0f)),
            (std::vector<float>{2, 3, 0}));
}

}  // namespace
}  // namespace hetero::pipeline
