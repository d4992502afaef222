// Sends and receives that a signal does not fail (tessera/transport/retry_on_signal.h): while
// another thread interrupts the receiving thread with a signal that has a handler (as a profiler's
// SIGPROF or libFuzzer's timer would), every frame still arrives once and in order, and nothing
// throws. A plain socket.recv throws zmq::error_t (EINTR) under the same signals.
#include "tessera/transport/retry_on_signal.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "tessera/transport/waker.h"

namespace tessera {
namespace {

std::atomic<int64_t> g_signals{0};  // a signal handler can reach only what is global
void CountSignal(int) { g_signals.fetch_add(1, std::memory_order_relaxed); }

class RetryOnSignalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    struct sigaction sa {};
    sa.sa_handler = &CountSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: interrupted calls fail with EINTR
    ASSERT_EQ(sigaction(SIGUSR1, &sa, &old_), 0);
    // No high-water mark: the sender never waits, so a receiver that stops early can still join it.
    in_.set(zmq::sockopt::rcvhwm, 0);
    out_.set(zmq::sockopt::sndhwm, 0);
    in_.bind("inproc://retry-on-signal");
    out_.connect("inproc://retry-on-signal");
  }
  void TearDown() override { sigaction(SIGUSR1, &old_, nullptr); }

  // Sends `n` numbered frames from a second thread while a third signals this one without pause,
  // and receives them all here with `receive` (false: none queued now).
  template <typename Receive>
  std::vector<int64_t> ReceiveUnderSignals(int64_t n, Receive receive) {
    std::atomic<bool> done{false};
    const pthread_t receiver = pthread_self();
    std::thread signaller([&] {
      while (!done.load()) pthread_kill(receiver, SIGUSR1);
    });
    std::thread sender([&] {
      for (int64_t i = 0; i < n; ++i) {
        zmq::message_t frame(&i, sizeof(i));
        SendRetrying(out_, frame);
      }
    });
    std::vector<int64_t> got;
    try {
      while (static_cast<int64_t>(got.size()) < n) {
        zmq::pollitem_t item{in_.handle(), 0, ZMQ_POLLIN, 0};
        PollItems(&item, 1, std::chrono::milliseconds(100));
        zmq::message_t frame;
        while (receive(frame)) {
          int64_t v;
          std::memcpy(&v, frame.data(), sizeof(v));
          got.push_back(v);
        }
      }
    } catch (...) {
      done = true;
      signaller.join();
      sender.join();
      throw;
    }
    done = true;
    signaller.join();
    sender.join();
    return got;
  }

  zmq::context_t zmq_;
  zmq::socket_t in_{zmq_, zmq::socket_type::pair};
  zmq::socket_t out_{zmq_, zmq::socket_type::pair};
  struct sigaction old_ {};
};

TEST_F(RetryOnSignalTest, EveryFrameArrivesOnceInOrderWhileSignalsInterrupt) {
  constexpr int64_t kFrames = 50000;
  const int64_t signals_before = g_signals.load();
  const std::vector<int64_t> got = ReceiveUnderSignals(kFrames, [&](zmq::message_t& frame) {
    return ReceiveRetrying(in_, frame, zmq::recv_flags::dontwait);
  });
  ASSERT_EQ(static_cast<int64_t>(got.size()), kFrames);
  for (int64_t i = 0; i < kFrames; ++i) ASSERT_EQ(got[i], i);
  EXPECT_GT(g_signals.load() - signals_before, 0) << "no signal reached the receiving thread";
}

TEST_F(RetryOnSignalTest, APlainReceiveThrowsUnderTheSameSignals) {
  // What the helpers are for: without them the receiving loop ends in zmq::error_t (EINTR).
  // Rounds until one throws (one in two or three does here), as an interruption needs a signal to
  // land inside a ZeroMQ call.
  bool threw = false;
  for (int round = 0; round < 500 && !threw; ++round) {
    try {
      ReceiveUnderSignals(50000, [&](zmq::message_t& frame) {
        return in_.recv(frame, zmq::recv_flags::dontwait).has_value();
      });
    } catch (const zmq::error_t& e) {
      EXPECT_EQ(e.num(), EINTR);
      threw = true;
    }
  }
  EXPECT_TRUE(threw);
}

}  // namespace
}  // namespace tessera
