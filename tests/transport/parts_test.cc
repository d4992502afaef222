// Data messages in frames of a bounded size (tessera/transport/parts.h): a message larger than a
// part crosses a socket whose ZMQ_MAXMSGSIZE is the part's bound and arrives whole, byte for byte;
// one over the receiver's message bound is dropped, and the next one still arrives.
#include "tessera/transport/parts.h"

#include <gtest/gtest.h>

#include <string>
#include <zmq.hpp>

#include "tessera/transport/endpoint.h"
#include "tessera/transport/router.h"
#include "tessera/transport/security.h"

namespace tessera {
namespace {

constexpr int64_t kPart = 1000;  // small parts, so that a few KiB make many frames

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + i / 7) & 0xff);
  return s;
}

class PartsTest : public ::testing::Test {
 protected:
  // A bound socket of `type` taking frames of at most a part (plus CURVE's overhead), and a
  // connected peer of `peer_type`, both with the job's keys.
  void Open(zmq::socket_type type, zmq::socket_type peer_type) {
    in_ = zmq::socket_t(zmq_, type);
    ConfigureSocket(in_);
    SecureBindSide(in_, "parts-secret");
    LimitIncoming(in_, kPart + 64, kDataReceiveQueue);
    auto ep = BindSocket(in_, "tcp://127.0.0.1:0");
    ASSERT_TRUE(ep.ok()) << ep.status().ToString();
    out_ = zmq::socket_t(zmq_, peer_type);
    ConfigureSocket(out_);
    SecureConnectSide(out_, "parts-secret");
    out_.connect(*ep);
  }

  // The next message on in_, joined (a failure bound of 20 s, not a synchronization point).
  Result<zmq::message_t> ReceiveJoined(int64_t max_bytes) {
    zmq::pollitem_t item{in_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::seconds(20)) <= 0) return Status::Unavailable("nothing");
    zmq::message_t first;
    (void)in_.recv(first, zmq::recv_flags::none);
    return ReceiveRest(in_, std::move(first), max_bytes);
  }

  zmq::context_t zmq_;
  zmq::socket_t in_;
  zmq::socket_t out_;
};

TEST_F(PartsTest, AMessageLargerThanAPartArrivesWhole) {
  Open(zmq::socket_type::pull, zmq::socket_type::push);
  for (size_t size : {size_t{0}, size_t{1}, size_t{1000}, size_t{1001}, size_t{7 * 1000 + 13}}) {
    const std::string bytes = Pattern(size);
    ASSERT_TRUE(SendInParts(out_, zmq::message_t(bytes), zmq::send_flags::none, kPart));
    auto got = ReceiveJoined(1 << 20);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->to_string(), bytes) << size;
    EXPECT_FALSE(got->more());
  }
}

// The frames of one message point into the sender's frame, which outlives the call: what arrives
// is what was sent even though the caller's message is gone.
TEST_F(PartsTest, TheSendersBytesLiveUntilEveryFrameIsSent) {
  Open(zmq::socket_type::pull, zmq::socket_type::push);
  const std::string bytes = Pattern(50 * 1000 + 1);
  {
    zmq::message_t frame(bytes);
    ASSERT_TRUE(SendInParts(out_, std::move(frame), zmq::send_flags::none, kPart));
  }
  auto got = ReceiveJoined(1 << 20);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->to_string(), bytes);
}

TEST_F(PartsTest, AMessageOverTheReceiversBoundIsDroppedAndTheNextArrives) {
  Open(zmq::socket_type::pull, zmq::socket_type::push);
  ASSERT_TRUE(SendInParts(out_, zmq::message_t(Pattern(5000)), zmq::send_flags::none, kPart));
  ASSERT_TRUE(SendInParts(out_, zmq::message_t(std::string("next")), zmq::send_flags::none, kPart));
  auto over = ReceiveJoined(4999);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(over.status().message().find("5 frames and 5000 bytes, over the 4999 bytes"),
            std::string::npos)
      << over.status().ToString();
  auto next = ReceiveJoined(4999);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next->to_string(), "next");
}

// A ROUTER (a server) joins a client's parts behind its identity, or says the message was over
// its bound; without a bound (control sockets) only the first frame is kept, flagged.
TEST_F(PartsTest, ARouterJoinsPartsUpToItsBound) {
  Open(zmq::socket_type::router, zmq::socket_type::dealer);
  const std::string bytes = Pattern(3500);
  auto next = [&](int64_t join_up_to) {
    zmq::pollitem_t item{in_.handle(), 0, ZMQ_POLLIN, 0};
    EXPECT_GT(zmq::poll(&item, 1, std::chrono::seconds(20)), 0);
    return TryReceiveRouted(in_, join_up_to);
  };
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(SendInParts(out_, zmq::message_t(bytes), zmq::send_flags::none, kPart));
  }
  auto joined = next(1 << 20);
  ASSERT_TRUE(joined.has_value());
  EXPECT_TRUE(joined->oversized.ok());
  EXPECT_EQ(joined->payload.to_string(), bytes);
  EXPECT_GE(joined->fd, 0);  // tcp: the connection is named, as monitor events name it
  auto over = next(3499);
  ASSERT_TRUE(over.has_value());
  EXPECT_EQ(over->oversized.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(over->payload.size(), 0u);
  auto unjoined = next(0);
  ASSERT_TRUE(unjoined.has_value());
  EXPECT_TRUE(unjoined->multipart);
  EXPECT_EQ(unjoined->payload.size(), static_cast<size_t>(kPart));
}

}  // namespace
}  // namespace tessera
