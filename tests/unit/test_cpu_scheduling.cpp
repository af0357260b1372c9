// How the CPU driver shares its cores between inferences: cancellation at node
// boundaries (inside Loop bodies too), priorities that let a waiting request
// in between two nodes of a running one, and streams that run inferences side
// by side. The long-running inference of these tests is a Loop that would
// spin for 2^62 iterations: only a cancel ends it.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <future>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/runtime.h"
#include "core/thread_slice.h"
#include "drivers/cpu/scheduler.h"
#include "tests/unit/model_text.h"

using namespace hetero;
using namespace hetero::core;

namespace {

using Clock = std::chrono::steady_clock;

RuntimeOptions with_config(driver::Config config) {
  RuntimeOptions options;
  options.config = std::move(config);
  return options;
}

constexpr const char* kSpin = R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
spin (int64[] m, float[4] x) => (float[4] y) {
  go = Constant <value = bool {1}> ()
  y = Loop (m, go, x) <body = step (int64[] i, bool[] c, float[4] v) => (bool[] c_out, float[4] v_out) {
    c_out = Identity (c)
    v_out = Neg (v)
  }>
}
)ONNX";

constexpr const char* kTiny = R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
tiny (float[4] x) => (float[4] y) {
  y = Relu (x)
}
)ONNX";

Tensor iterations(int64_t n) {
  Tensor t = Tensor::allocate(DType::I64, {});
  t.data<int64_t>()[0] = n;
  return t;
}

Tensor four(float v) { return Tensor::from_vector(std::vector<float>{v, -v, v, -v}, {4}); }

constexpr int64_t kForever = int64_t{1} << 62;

// An inference started without waiting; the future holds how it ended.
struct Started {
  std::unique_ptr<driver::InferRequest> request;
  std::promise<std::exception_ptr> promise;
  std::future<std::exception_ptr> ended = promise.get_future();
  Clock::time_point finished;
  // Of the thread that ran the inference (its completion runs there).
  int nice = 0;
  std::chrono::nanoseconds slice{0};

  explicit Started(std::unique_ptr<driver::InferRequest> r) : request(std::move(r)) {
    request->start_async([this](std::exception_ptr error) {
      finished = Clock::now();
      nice = getpriority(PRIO_PROCESS, 0);
      slice = time_slice();
      promise.set_value(error);
    });
  }
  // A test that failed half-way leaves no endless inference behind.
  ~Started() {
    request->cancel();
    request->wait();
  }
  bool ends_within(std::chrono::seconds limit) { return ended.wait_for(limit) == std::future_status::ready; }
};

hetero_status status_of(std::exception_ptr error) {
  if (!error) return HETERO_OK;
  try {
    std::rethrow_exception(error);
  } catch (const Failure& e) {
    return e.status();
  } catch (...) {
    return HETERO_INTERNAL;
  }
}

std::unique_ptr<driver::InferRequest> spin_request(Runtime& rt, const std::string& priority, int64_t n) {
  auto model = import_onnx_bytes(test::onnx_bytes(kSpin, true), {}, "spin");
  auto request = rt.compile(*model, "CPU", {{"priority", priority}})->create_infer_request();
  request->set_input(0, iterations(n));
  request->set_input(1, four(1));
  return request;
}

std::unique_ptr<driver::InferRequest> tiny_request(Runtime& rt, const std::string& priority) {
  auto model = test::model_from_text(kTiny);
  auto request = rt.compile(*model, "CPU", {{"priority", priority}})->create_infer_request();
  request->set_input(0, four(2));
  return request;
}

}  // namespace

// An endless Loop stops at the next node boundary inside its body once
// cancelled, answers CANCELLED, and its request then runs normally.
TEST(CpuScheduling, CancelStopsAnEndlessLoopAndTheRequestRunsAgain) {
  Runtime rt;
  Started spin(spin_request(rt, "normal", kForever));
  EXPECT_FALSE(spin.ends_within(std::chrono::seconds(0))) << "the Loop ended by itself";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const Clock::time_point cancelled = Clock::now();
  spin.request->cancel();
  ASSERT_TRUE(spin.ends_within(std::chrono::seconds(30))) << "the cancelled Loop did not stop";
  EXPECT_EQ(status_of(spin.ended.get()), HETERO_CANCELLED);
  spin.request->wait();
  std::printf("cancel to callback: %.3f ms\n",
              std::chrono::duration<double, std::milli>(spin.finished - cancelled).count());
  try {
    (void)spin.request->output(0);
    ADD_FAILURE() << "a cancelled inference has outputs";
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_INVALID_ARGUMENT);
  }

  // The same request, three iterations: -(-(-x)).
  spin.request->set_input(0, iterations(3));
  spin.request->infer();
  const Tensor y = spin.request->output(0);
  EXPECT_EQ(std::vector<float>(y.values<float>().begin(), y.values<float>().end()),
            (std::vector<float>{-1, 1, -1, 1}));
  // A cancel with nothing running changes nothing.
  spin.request->cancel();
  spin.request->infer();
  EXPECT_EQ(spin.request->output(0).values<float>()[0], -1.0f);
}

// With one stream, a waiting request of higher priority runs between two
// nodes of a running one; one of the same priority waits for it to end.
TEST(CpuScheduling, HigherPriorityRunsBetweenNodesSamePriorityWaits) {
  Runtime rt(with_config({{"CPU.num_streams", "1"}}));
  // Compiled first: a background model's compile is background work too.
  auto peer_request = tiny_request(rt, "background");
  Started spin(spin_request(rt, "background", kForever));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));

  Started realtime(tiny_request(rt, "realtime"));
  ASSERT_TRUE(realtime.ends_within(std::chrono::seconds(30))) << "realtime work waited for the endless Loop";
  EXPECT_EQ(status_of(realtime.ended.get()), HETERO_OK);
  Started normal(tiny_request(rt, "normal"));
  ASSERT_TRUE(normal.ends_within(std::chrono::seconds(30))) << "normal work waited for the background Loop";
  EXPECT_EQ(status_of(normal.ended.get()), HETERO_OK);
  EXPECT_EQ(normal.request->output(0).values<float>()[0], 2.0f);

  Started peer(std::move(peer_request));
  EXPECT_FALSE(peer.ends_within(std::chrono::seconds(0)));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(peer.ends_within(std::chrono::seconds(0))) << "background work ran before the running background Loop ended";
  spin.request->cancel();
  ASSERT_TRUE(spin.ends_within(std::chrono::seconds(30)));
  EXPECT_EQ(status_of(spin.ended.get()), HETERO_CANCELLED);
  ASSERT_TRUE(peer.ends_within(std::chrono::seconds(30)));
  EXPECT_EQ(status_of(peer.ended.get()), HETERO_OK);
}

// Two streams run two endless inferences side by side, and a third request
// of the same priority still gets in as soon as one of them ends; the metrics
// tell a caller how many requests keep the streams busy.
TEST(CpuScheduling, StreamsRunInferencesSideBySide) {
  Runtime rt(with_config({{"CPU.num_streams", "2"}}));
  EXPECT_EQ(rt.metric("CPU", "NUM_STREAMS"), "2");
  EXPECT_EQ(rt.metric("CPU", "OPTIMAL_NUMBER_OF_INFER_REQUESTS"), "2");
  // No oversubscription: two streams share the cores.
  const int per_stream = std::stoi(rt.metric("CPU", "THREADS_PER_STREAM"));
  EXPECT_GE(per_stream, 1);
  EXPECT_LE(per_stream * 2, std::max(2, static_cast<int>(std::thread::hardware_concurrency())));

  auto third_request = tiny_request(rt, "normal");  // compiled before the streams are taken
  Started first(spin_request(rt, "normal", kForever));
  Started second(spin_request(rt, "normal", kForever));
  Started third(std::move(third_request));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(third.ends_within(std::chrono::seconds(0))) << "a third stream appeared";
  first.request->cancel();
  ASSERT_TRUE(third.ends_within(std::chrono::seconds(30)));
  EXPECT_EQ(status_of(third.ended.get()), HETERO_OK);
  // The second Loop kept running all along.
  EXPECT_FALSE(second.ends_within(std::chrono::seconds(0)));
  second.request->cancel();
  ASSERT_TRUE(second.ends_within(std::chrono::seconds(30)));
  EXPECT_EQ(status_of(first.ended.get()), HETERO_CANCELLED);
  EXPECT_EQ(status_of(second.ended.get()), HETERO_CANCELLED);
}

// A stream is woken for each job handed to it: with a short time slice,
// the wake-up preempts a busy process at once (core/thread_slice.h).
TEST(CpuScheduling, StreamsAskForAShortTimeSlice) {
  Runtime rt;
  Started done(tiny_request(rt, "normal"));
  ASSERT_TRUE(done.ends_within(std::chrono::seconds(30)));
  ASSERT_EQ(status_of(done.ended.get()), HETERO_OK);
  if (done.slice == std::chrono::nanoseconds(0)) GTEST_SKIP() << "this kernel takes no time slice (before 6.12)";
  EXPECT_EQ(done.slice, kShortSlice);
}

// The hints pick the streams; a priority that is not one of the three is
// refused naming the key.
TEST(CpuScheduling, HintsPickStreamsAndBadPrioritiesAreRefused) {
  Runtime latency;
  EXPECT_EQ(latency.metric("CPU", "NUM_STREAMS"), "1");
  Runtime throughput(with_config({{"CPU.performance_hint", "throughput"}}));
  EXPECT_EQ(throughput.metric("CPU", "THREADS_PER_STREAM"), "1");
  auto model = test::model_from_text(kTiny);
  try {
    latency.compile(*model, "CPU", {{"priority", "urgent"}});
    ADD_FAILURE() << "priority 'urgent' was taken";
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("priority"), std::string::npos) << e.what();
  }
}

// Realtime work has a lane of its own beside the streams; work of every
// priority, started together again and again, always gets a thread (a wake-up
// meant for a stream must never go to the lane alone).
TEST(CpuScheduling, EveryPriorityGetsAThreadWithTheRealtimeLane) {
  Runtime rt;
  for (int round = 0; round < 200; ++round) {
    Started realtime(tiny_request(rt, "realtime"));
    Started normal(tiny_request(rt, "normal"));
    Started background(tiny_request(rt, "background"));
    for (Started* s : {&realtime, &normal, &background}) {
      ASSERT_TRUE(s->ends_within(std::chrono::seconds(30))) << "round " << round << ": a job was never run";
      EXPECT_EQ(status_of(s->ended.get()), HETERO_OK);
    }
  }
}

// Once realtime work has come, the realtime lane runs less nice than the
// process (where the system allows it: root here, or RLIMIT_NICE), and the
// streams nicer, so that a realtime inference gets a core at once.
TEST(CpuScheduling, TheRealtimeLaneRunsAheadOfTheStreams) {
  const int process = getpriority(PRIO_PROCESS, 0);
  rlimit limit{};
  getrlimit(RLIMIT_NICE, &limit);
  if (geteuid() != 0 && 20 - static_cast<int>(limit.rlim_cur) > process - 10)
    GTEST_SKIP() << "this user may not lower a thread's niceness";
  Runtime rt;
  Started realtime(tiny_request(rt, "realtime"));
  ASSERT_TRUE(realtime.ends_within(std::chrono::seconds(30)));
  Started normal(tiny_request(rt, "normal"));
  ASSERT_TRUE(normal.ends_within(std::chrono::seconds(30)));
  EXPECT_EQ(realtime.nice, std::max(-20, process - 10)) << "lane_nice is -10 by default";
  EXPECT_EQ(normal.nice, std::min(19, process + 10)) << "stream_nice is 10 by default";
}

// A synchronous job one thread wide runs on its caller's thread when a
// stream is free (Scheduler::run_here), taking that stream's turn: a job
// submitted meanwhile waits for it, as it would for a stream.
TEST(CpuScheduling, ACallerRunsItsJobItselfWhileAStreamIsFree) {
  cpu::Scheduler scheduler;
  scheduler.configure(1, 1, false, 0, 0);
  const auto caller = std::this_thread::get_id();
  std::thread::id ran_on;
  EXPECT_TRUE(scheduler.run_here(Priority::Normal, [&] { ran_on = std::this_thread::get_id(); }));
  EXPECT_EQ(ran_on, caller);

  // Holding the one stream's turn: a submitted job starts only afterwards,
  // and a synchronous run inside it runs at once rather than waiting for it.
  std::promise<void> submitted_ran;
  bool nested_here = false;
  EXPECT_TRUE(scheduler.run_here(Priority::Normal, [&] {
    scheduler.submit(Priority::Normal, [&] { submitted_ran.set_value(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(submitted_ran.get_future().wait_for(std::chrono::seconds(0)), std::future_status::timeout)
        << "a stream ran a job while the caller held its turn";
    scheduler.run(Priority::Normal, [&] { nested_here = std::this_thread::get_id() == caller; });
  }));
  EXPECT_TRUE(nested_here);

  // While the stream runs a job, the caller's job goes to the queue instead.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> started;
  scheduler.submit(Priority::Normal, [&, released] {
    started.set_value();
    released.wait();
  });
  started.get_future().wait();
  EXPECT_FALSE(scheduler.run_here(Priority::Normal, [] { ADD_FAILURE() << "ran beside the busy stream"; }));
  EXPECT_FALSE(scheduler.run_here(Priority::Realtime, [] {})) << "realtime work is the lane's";
  release.set_value();
}
