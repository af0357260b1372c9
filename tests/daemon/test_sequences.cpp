// Sequences (daemon/sequences.h, docs/streams.md): a stateful model's state
// kept in the real daemon between a client's calls, through libhetero's
// client mode. accumulate.onnx keeps a running sum: y = totalN = x + total,
// so each answer says what state the daemon fed in.
#include <gtest/gtest.h>
#include <signal.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/daemon/daemon_client.h"
#include "tests/daemon/daemon_process.h"

namespace hetero::test {
namespace {

using Row = std::array<float, 4>;
const std::vector<int64_t> kRowDims = {1, 4};

std::string sequence_config(const TempDir& dir, const std::string& limits = "", const std::string& accumulate = "") {
  return "socket:\n  path: " + dir.path() + "/heterod.sock\n" +
         "limits:\n  shutdown_grace_ms: 20000\n" + limits +
         "models:\n"
         "  - name: acc\n    path: " + fixture_path("accumulate.onnx") + "\n" + accumulate +
         "  - name: demo\n    path: " + demo_model_path() + "\n    shapes: {image: [1, 3, 32, 32]}\n";
}

// One client connection with the accumulator open.
class Client {
 public:
  explicit Client(const std::string& socket) {
    core_ = connect_or_fail(socket);
    if (core_) {
      EXPECT_EQ(hetero_compiled_model_open(&compiled_, core_, "acc"), HETERO_OK) << hetero_last_error();
    }
    if (compiled_) hetero_infer_request_create(&request_, compiled_);
  }
  ~Client() {
    hetero_infer_request_release(request_);
    hetero_compiled_model_release(compiled_);
    hetero_core_release(core_);
  }
  bool ok() const { return request_ != nullptr; }

  // One call of sequence `id` with x = `x` (and the state `total` when
  // given): y, or the failure's status with its message in `error`.
  hetero_status call(uint64_t id, uint32_t flags, const Row& x, Row& y, const Row* total = nullptr) {
    Row in = x, state = total ? *total : Row{};
    bind(0, in);
    if (total) bind(1, state);
    hetero_status status = hetero_infer_request_set_sequence(request_, id, flags);
    if (status == HETERO_OK) status = hetero_infer_request_infer(request_);
    if (status != HETERO_OK) {
      error = hetero_last_error();
      return status;
    }
    hetero_tensor_t* out = nullptr;
    status = hetero_infer_request_get_output(request_, &out, 0);
    if (status != HETERO_OK) return status;
    void* data = nullptr;
    hetero_tensor_get_data(out, &data);
    std::memcpy(y.data(), data, sizeof(Row));
    hetero_tensor_release(out);
    // The state output stays in the daemon.
    hetero_tensor_t* state_out = nullptr;
    EXPECT_EQ(hetero_infer_request_get_output(request_, &state_out, 1), HETERO_INVALID_ARGUMENT);
    return HETERO_OK;
  }
  // y's first value, or NaN when the call failed.
  float call(uint64_t id, uint32_t flags, float x) {
    Row y{};
    return call(id, flags, Row{x, x, x, x}, y) == HETERO_OK ? y[0] : std::nanf("");
  }
  hetero_status end(uint64_t id) { return hetero_compiled_model_end_sequence(compiled_, id); }

  std::string error;

 private:
  void bind(size_t index, Row& values) {
    hetero_tensor_t* t = nullptr;
    hetero_tensor_wrap(&t, HETERO_DTYPE_FLOAT32, kRowDims.data(), 2, values.data(), sizeof(Row));
    EXPECT_EQ(hetero_infer_request_set_input(request_, index, t), HETERO_OK);
    hetero_tensor_release(t);
  }

  hetero_core_t* core_ = nullptr;
  hetero_compiled_model_t* compiled_ = nullptr;
  hetero_infer_request_t* request_ = nullptr;
};

class Sequences : public ::testing::Test {
 protected:
  void start(const std::string& limits = "", const std::string& accumulate = "") {
    socket_ = dir_.path() + "/heterod.sock";
    daemon_ = std::make_unique<DaemonProcess>(dir_.path(), sequence_config(dir_, limits, accumulate));
    ASSERT_TRUE(daemon_->wait_ready(socket_)) << daemon_->log();
  }
  void TearDown() override {
    if (!daemon_ || !daemon_->running()) return;
    daemon_->signal(SIGTERM);
    EXPECT_EQ(daemon_->wait_exit(), 0) << daemon_->log();
  }

  TempDir dir_;
  std::string socket_;
  std::unique_ptr<DaemonProcess> daemon_;
};

TEST_F(Sequences, TheDaemonCarriesTheStateFromCallToCall) {
  start();
  EXPECT_NE(daemon_->log().find("model 'acc' serves sequences carrying its state {totalN: total}"), std::string::npos)
      << daemon_->log();
  Client c(socket_);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.call(7, HETERO_SEQUENCE_START, 1), 1);
  EXPECT_EQ(c.call(7, 0, 2), 3);
  EXPECT_EQ(c.call(7, 0, 3), 6);
  // Another sequence of the same connection has its own state.
  EXPECT_EQ(c.call(8, HETERO_SEQUENCE_START, 10), 10);
  EXPECT_EQ(c.call(7, 0, 4), 10);
  // A start begins again from zero; the end goes with its call.
  EXPECT_EQ(c.call(7, HETERO_SEQUENCE_START, 5), 5);
  EXPECT_EQ(c.call(7, HETERO_SEQUENCE_END, 1), 6);
  Row y{};
  EXPECT_EQ(c.call(7, 0, Row{1, 1, 1, 1}, y), HETERO_NOT_FOUND);
  EXPECT_NE(c.error.find("no sequence '7' of model 'acc'"), std::string::npos) << c.error;
  // Ended on request.
  EXPECT_EQ(c.end(8), HETERO_OK);
  EXPECT_EQ(c.end(8), HETERO_NOT_FOUND);
  EXPECT_EQ(c.call(8, 0, Row{1, 1, 1, 1}, y), HETERO_NOT_FOUND);
}

TEST_F(Sequences, AStateTheCallGivesReplacesTheSequences) {
  start();
  Client c(socket_);
  ASSERT_TRUE(c.ok());
  const Row total{100, 200, 300, 400};
  Row y{};
  ASSERT_EQ(c.call(1, HETERO_SEQUENCE_START, Row{1, 2, 3, 4}, y, &total), HETERO_OK) << c.error;
  EXPECT_EQ(y, (Row{101, 202, 303, 404}));
  // Given for that call only: the next one goes on from the daemon's.
  ASSERT_EQ(c.call(1, 0, Row{1, 1, 1, 1}, y), HETERO_OK) << c.error;
  EXPECT_EQ(y, (Row{102, 203, 304, 405}));
}

TEST_F(Sequences, ManyClientsEachKeepTheirOwn) {
  start();
  constexpr int kClients = 8, kSequencesEach = 8, kCalls = 20;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c)
    threads.emplace_back([&, c] {
      Client client(socket_);
      if (!client.ok()) return void(++wrong);
      // Every client uses the same ids: sequences are their connection's.
      std::array<float, kSequencesEach> sums{};
      for (int k = 0; k < kCalls; ++k)
        for (int s = 0; s < kSequencesEach; ++s) {
          const float x = static_cast<float>(c * 100 + s + k % 3);
          sums[static_cast<size_t>(s)] += x;
          const float y = client.call(static_cast<uint64_t>(s + 1), k == 0 ? HETERO_SEQUENCE_START : 0, x);
          if (y != sums[static_cast<size_t>(s)]) ++wrong;
        }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(Sequences, AClientHoldsAtMostItsLimitAndItsIdleSequencesEnd) {
  start("  max_sequences_per_client: 4\n  sequence_idle_ms: 300\n");
  {
    Client c(socket_);
    ASSERT_TRUE(c.ok());
    for (uint64_t id = 1; id <= 4; ++id) EXPECT_EQ(c.call(id, HETERO_SEQUENCE_START, 1), 1);
    Row y{};
    EXPECT_EQ(c.call(5, HETERO_SEQUENCE_START, Row{}, y), HETERO_BUSY);
    EXPECT_NE(c.error.find("limits.max_sequences_per_client"), std::string::npos) << c.error;
    // The limit is the uid's, whichever connection asks.
    Client other(socket_);
    EXPECT_EQ(other.call(1, HETERO_SEQUENCE_START, Row{}, y), HETERO_BUSY);
    EXPECT_EQ(c.end(4), HETERO_OK);
    EXPECT_EQ(other.call(1, HETERO_SEQUENCE_START, 2), 2);
  }
  // Both connections closed: their sequences went with them.
  Client c(socket_);
  for (uint64_t id = 1; id <= 4; ++id) EXPECT_EQ(c.call(id, HETERO_SEQUENCE_START, 1), 1);
  // Idle past sequence_idle_ms: ended.
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  Row y{};
  EXPECT_EQ(c.call(1, 0, Row{}, y), HETERO_NOT_FOUND);
  for (uint64_t id = 11; id <= 14; ++id) EXPECT_EQ(c.call(id, HETERO_SEQUENCE_START, 3), 3);
}

TEST_F(Sequences, AModelWithoutStateHasNoSequences) {
  start();
  hetero_core_t* core = connect_or_fail(socket_);
  ASSERT_TRUE(core);
  hetero_compiled_model_t* compiled = nullptr;
  ASSERT_EQ(hetero_compiled_model_open(&compiled, core, "demo"), HETERO_OK);
  hetero_infer_request_t* request = nullptr;
  hetero_infer_request_create(&request, compiled);
  std::vector<float> out;
  ASSERT_EQ(hetero_infer_request_set_sequence(request, 1, HETERO_SEQUENCE_START), HETERO_OK);
  std::string error;
  EXPECT_EQ(infer_once(request, {1, 3, 32, 32}, seeded_input(3 * 32 * 32, 1), out, &error), HETERO_INVALID_ARGUMENT);
  EXPECT_NE(error.find("model 'demo' keeps no state"), std::string::npos) << error;
  // Flags without a sequence are a caller's mistake.
  EXPECT_EQ(hetero_infer_request_set_sequence(request, 0, HETERO_SEQUENCE_END), HETERO_INVALID_ARGUMENT);
  hetero_infer_request_release(request);
  hetero_compiled_model_release(compiled);
  hetero_core_release(core);

  // In process the compiled model keeps them (tests/python/test_sequences.py
  // runs them): a sequence is started by its first call, so there is none
  // to end before it.
  hetero_core_t* local = nullptr;
  ASSERT_EQ(hetero_core_create(&local, nullptr, nullptr, 0), HETERO_OK);
  ASSERT_EQ(hetero_compile_file(&compiled, local, fixture_path("accumulate.onnx").c_str(), nullptr, nullptr, nullptr,
                                0, "CPU", nullptr, nullptr, 0),
            HETERO_OK)
      << hetero_last_error();
  hetero_infer_request_create(&request, compiled);
  EXPECT_EQ(hetero_infer_request_set_sequence(request, 1, HETERO_SEQUENCE_START), HETERO_OK) << hetero_last_error();
  EXPECT_EQ(hetero_compiled_model_end_sequence(compiled, 1), HETERO_NOT_FOUND);
  hetero_infer_request_release(request);
  hetero_compiled_model_release(compiled);
  hetero_core_release(local);
}

TEST_F(Sequences, AReloadKeepsThemUnlessItChangesTheirModel) {
  start();
  Client c(socket_);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.call(1, HETERO_SEQUENCE_START, 1), 1);
  hetero_core_t* admin = connect_or_fail(socket_);
  ASSERT_TRUE(admin);
  // Unchanged: the sequence goes on.
  ASSERT_EQ(hetero_core_reload(admin), HETERO_OK) << hetero_last_error();
  EXPECT_EQ(c.call(1, 0, 1), 2);
  // The model changed: the sequence ends, and its next call says why.
  daemon_->write_config(sequence_config(dir_, "", "    parallel: 2\n"));
  ASSERT_EQ(hetero_core_reload(admin), HETERO_OK) << hetero_last_error();
  Row y{};
  EXPECT_EQ(c.call(1, 0, Row{}, y), HETERO_CANCELLED);
  EXPECT_NE(c.error.find("reloaded with changes"), std::string::npos) << c.error;
  EXPECT_EQ(c.call(1, 0, Row{}, y), HETERO_NOT_FOUND);
  EXPECT_EQ(c.call(1, HETERO_SEQUENCE_START, 4), 4);
  hetero_core_release(admin);
}

TEST_F(Sequences, AStatePairTheModelLacksFailsItsLoad) {
  start("", "    state: {totalN: nope}\n");
  hetero_core_t* core = connect_or_fail(socket_);
  ASSERT_TRUE(core);
  hetero_compiled_model_t* compiled = nullptr;
  EXPECT_EQ(hetero_compiled_model_open(&compiled, core, "acc"), HETERO_NOT_FOUND);
  EXPECT_NE(daemon_->log().find("model 'acc': state 'totalN: nope': the model has no input 'nope'"),
            std::string::npos)
      << daemon_->log();
  hetero_core_release(core);
}

TEST_F(Sequences, AnEmptyStateMapTurnsThemOff) {
  start("", "    state: {}\n");
  EXPECT_EQ(daemon_->log().find("serves sequences"), std::string::npos) << daemon_->log();
  Client c(socket_);
  ASSERT_TRUE(c.ok());
  Row y{};
  const Row total{};
  EXPECT_EQ(c.call(1, HETERO_SEQUENCE_START, Row{}, y, &total), HETERO_INVALID_ARGUMENT);
  EXPECT_NE(c.error.find("keeps no state"), std::string::npos) << c.error;
}

// `defaults:` give an input a value, so that a call may leave it out (a
// stream's constants). spin.onnx negates x m times: with m = 3 given by the
// config, a call of x alone answers -x.
TEST(StreamDefaults, AConfiguredInputValueLetsACallLeaveItOut) {
  TempDir dir;
  const std::string socket = dir.path() + "/heterod.sock";
  const std::string spin = fixture_path("spin.onnx");
  DaemonProcess daemon(dir.path(), "socket:\n  path: " + socket + "\nmodels:\n"
                                   "  - {name: odd, path: " + spin + ", defaults: {m: 3}}\n"
                                   "  - {name: even, path: " + spin + ", defaults: {m: 4}}\n"
                                   "  - {name: nope, path: " + spin + ", defaults: {k: 3}}\n"
                                   "  - {name: list, path: " + spin + ", defaults: {m: [1, 2]}}\n");
  ASSERT_TRUE(daemon.wait_ready(socket)) << daemon.log();
  hetero_core_t* core = connect_or_fail(socket);
  ASSERT_TRUE(core);
  for (const auto& [name, sign] : {std::pair{"odd", -1.0f}, std::pair{"even", 1.0f}}) {
    hetero_compiled_model_t* compiled = nullptr;
    ASSERT_EQ(hetero_compiled_model_open(&compiled, core, name), HETERO_OK) << hetero_last_error();
    hetero_infer_request_t* request = nullptr;
    hetero_infer_request_create(&request, compiled);
    // Only x is bound: libhetero leaves m to the daemon, which gives it.
    Row x = {1, -2, 3, -4};
    hetero_tensor_t* t = nullptr;
    hetero_tensor_wrap(&t, HETERO_DTYPE_FLOAT32, kRowDims.data(), 2, x.data(), sizeof x);
    EXPECT_EQ(hetero_infer_request_set_input_by_name(request, "x", t), HETERO_OK);
    hetero_tensor_release(t);
    ASSERT_EQ(hetero_infer_request_infer(request), HETERO_OK) << hetero_last_error();
    hetero_tensor_t* out = nullptr;
    ASSERT_EQ(hetero_infer_request_get_output(request, &out, 0), HETERO_OK);
    void* data = nullptr;
    hetero_tensor_get_data(out, &data);
    Row y{};
    std::memcpy(y.data(), data, sizeof y);
    hetero_tensor_release(out);
    EXPECT_EQ(y, (Row{sign * 1, sign * -2, sign * 3, sign * -4})) << name;
    hetero_infer_request_release(request);
    hetero_compiled_model_release(compiled);
  }
  const std::string log = daemon.log();
  EXPECT_NE(log.find("model 'nope': defaults: input 'k': the model has no such input"), std::string::npos) << log;
  EXPECT_NE(log.find("model 'list': defaults: input 'm' has 0 dims, its value a list"), std::string::npos) << log;
  hetero_core_release(core);
  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait_exit(), 0) << daemon.log();
}

}  // namespace
}  // namespace hetero::test
