// core::RequestState: the life of an infer request and its rules, which
// every driver's requests and heterod's remote ones share. The requests
// themselves are tested over it in test_infer_request (core), the driver
// contract suite (every device) and the capi tests (through heterod).
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "core/request_state.h"

using namespace hetero;
using core::RequestState;

namespace {

hetero_status status_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Failure& e) {
    return e.status();
  }
  return HETERO_OK;
}

auto nothing = [] { return 0; };

std::exception_ptr failure(const char* message) { return std::make_exception_ptr(Failure(HETERO_DRIVER_ERROR, message)); }

}  // namespace

TEST(RequestState, OneInferenceAtATimeAndOutputsOnlyOnceFinished) {
  RequestState s;
  EXPECT_EQ(status_of([&] { s.read_outputs(nothing); }), HETERO_INVALID_ARGUMENT);
  s.begin(nothing);
  EXPECT_EQ(status_of([&] { s.begin(nothing); }), HETERO_BUSY);
  EXPECT_EQ(status_of([&] { s.bind([] {}); }), HETERO_BUSY);
  EXPECT_EQ(status_of([&] { s.read_outputs(nothing); }), HETERO_BUSY);
  EXPECT_EQ(status_of([&] { s.check_idle("its memory is in use"); }), HETERO_BUSY);
  EXPECT_TRUE(s.start());
  s.complete(nullptr, {}, {});
  EXPECT_EQ(s.wait(), nullptr);
  EXPECT_EQ(s.read_outputs([] { return 7; }), 7);

  // A failed inference has no outputs, and wait() reports it.
  s.begin(nothing);
  s.start();
  s.complete(failure("the device refused"), {}, {});
  EXPECT_NE(s.wait(), nullptr);
  EXPECT_EQ(status_of([&] { s.read_outputs(nothing); }), HETERO_INVALID_ARGUMENT);
  s.bind([] {});  // and the request is usable again
}

TEST(RequestState, AFailedTakeLeavesTheRequestIdle) {
  RequestState s;
  EXPECT_EQ(status_of([&] { s.begin([]() -> int { fail(HETERO_INVALID_ARGUMENT, "input 'x' is not set"); }); }),
            HETERO_INVALID_ARGUMENT);
  s.bind([] {});
  s.begin(nothing);
}

TEST(RequestState, TheCallbackMayReadAndBindButNotStartWaitOrRelease) {
  RequestState s;
  s.begin(nothing);
  s.start();
  hetero_status again = HETERO_OK, waited = HETERO_OK, read = HETERO_INTERNAL, bound = HETERO_INTERNAL;
  s.complete(nullptr, {}, [&](std::exception_ptr) {
    again = status_of([&] { s.begin(nothing); });
    waited = status_of([&] { s.wait(); });
    read = status_of([&] { s.read_outputs(nothing); });
    bound = status_of([&] { s.bind([] {}); });
  });
  EXPECT_EQ(again, HETERO_BUSY) << "a start from the callback would wait for itself";
  EXPECT_EQ(waited, HETERO_BUSY) << "a wait from the callback would wait for itself";
  EXPECT_EQ(read, HETERO_OK);
  EXPECT_EQ(bound, HETERO_OK);
  s.begin(nothing);  // outside the callback, at once
}

TEST(RequestState, AStartFromAnotherThreadWaitsForTheCallbackToReturn) {
  RequestState s;
  s.begin(nothing);
  s.start();
  std::promise<void> in_callback, release;
  std::atomic<bool> returned{false};
  std::thread worker([&] {
    s.complete(nullptr, {}, [&](std::exception_ptr) {
      in_callback.set_value();
      release.get_future().wait();
      returned = true;
    });
  });
  in_callback.get_future().wait();
  std::thread starter([&] {
    s.begin(nothing);
    EXPECT_TRUE(returned) << "started while the last callback still ran";
  });
  release.set_value();
  starter.join();
  worker.join();
}

TEST(RequestState, CancelReachesOnlyAQueuedOrRunningInference) {
  RequestState s;
  int asked = 0;
  s.cancel([&] { ++asked; });  // idle: nothing to stop
  EXPECT_EQ(asked, 0);
  s.begin(nothing);
  s.cancel([&] { ++asked; });  // queued: it never starts
  EXPECT_EQ(asked, 1);
  EXPECT_FALSE(s.start());
  s.cancel([&] { ++asked; });  // asked once is enough
  EXPECT_EQ(asked, 1);
  s.complete(failure("cancelled"), {}, {});
  s.cancel([&] { ++asked; });  // finished: the next inference is not touched
  EXPECT_EQ(asked, 1);
  s.begin(nothing);
  EXPECT_TRUE(s.start());
  s.cancel([&] { ++asked; });  // running: it stops where it can
  EXPECT_EQ(asked, 2);
  s.complete(nullptr, {}, {});  // ... or finishes first
  EXPECT_EQ(s.wait(), nullptr);
}
