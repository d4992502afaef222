#include "tessera/transport/message.h"

#include <gtest/gtest.h>

#include <cstring>

namespace tessera {
namespace {

TEST(MessageTest, RoundTripKeepsVersionSenderAndBody) {
  OutgoingMessage out(7, 42);
  out.envelope().getBody().initClock().setClock(9);
  auto in = IncomingMessage::Parse(out.ToFrame());
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  auto env = (*in)->envelope();
  EXPECT_EQ(env.getVersion(), proto::PROTOCOL_VERSION);
  EXPECT_EQ(env.getSender(), 7u);
  EXPECT_EQ(env.getRequestId(), 42u);
  ASSERT_TRUE(env.getBody().isClock());
  EXPECT_EQ(env.getBody().getClock().getClock(), 9);
}

TEST(MessageTest, UnalignedFrameIsCopiedNotRejected) {
  OutgoingMessage out(1, 0);
  out.envelope().getBody().initBarrier().setId(3);
  zmq::message_t frame = out.ToFrame();
  // Same bytes at an odd address inside a larger buffer.
  std::vector<char> buffer(frame.size() + 1);
  std::memcpy(buffer.data() + 1, frame.data(), frame.size());
  zmq::message_t unaligned(buffer.data() + 1, frame.size());
  auto in = IncomingMessage::Parse(std::move(unaligned));
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_EQ((*in)->envelope().getBody().getBarrier().getId(), 3u);
}

// A message that fits its first segment becomes the frame as built (segment table + segment);
// one that outgrows it is spread over segments and copied into the frame. Both read back.
TEST(MessageTest, MessagesInOneOrManySegmentsRoundTrip) {
  for (unsigned hint : {0u, 8u, 4096u}) {
    OutgoingMessage out(2, 5, hint);
    auto rows = out.envelope().getBody().initRows().initRows(40);
    for (unsigned i = 0; i < rows.size(); ++i) {
      rows[i].setRow(i);
      auto cells = rows[i].initValues().initF32(16);
      for (unsigned j = 0; j < 16; ++j) cells.set(j, static_cast<float>(i * 16 + j));
    }
    auto in = IncomingMessage::Parse(out.ToFrame());
    ASSERT_TRUE(in.ok()) << in.status().ToString();
    auto got = (*in)->envelope().getBody().getRows().getRows();
    ASSERT_EQ(got.size(), 40u) << "hint " << hint;
    for (unsigned i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].getRow(), i);
      auto cells = got[i].getValues().getF32();
      ASSERT_EQ(cells.size(), 16u);
      for (unsigned j = 0; j < 16; ++j) EXPECT_EQ(cells[j], static_cast<float>(i * 16 + j));
    }
  }
}

// A message of 40 rows of 16 floats built in a pooled buffer (a hint of 1024 words: 8 KiB).
zmq::message_t PooledRowsFrame(FramePool& pool, float base) {
  OutgoingMessage out(2, 5, 1024, &pool);
  auto rows = out.envelope().getBody().initRows().initRows(40);
  for (unsigned i = 0; i < rows.size(); ++i) {
    rows[i].setRow(i);
    auto cells = rows[i].initValues().initF32(16);
    for (unsigned j = 0; j < 16; ++j) cells.set(j, base + static_cast<float>(i * 16 + j));
  }
  return out.ToFrame();
}

void ExpectRows(zmq::message_t frame, float base) {
  auto in = IncomingMessage::Parse(std::move(frame));
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  auto got = (*in)->envelope().getBody().getRows().getRows();
  ASSERT_EQ(got.size(), 40u);
  for (unsigned i = 0; i < got.size(); ++i) {
    auto cells = got[i].getValues().getF32();
    ASSERT_EQ(cells.size(), 16u);
    for (unsigned j = 0; j < 16; ++j) ASSERT_EQ(cells[j], base + static_cast<float>(i * 16 + j));
  }
}

// A sent frame's buffer goes back to its pool and the next large message is built in it, as a
// correct message again (the buffer is zeroed, as Cap'n Proto requires).
TEST(FramePoolTest, LargeFramesReuseTheirBuffers) {
  std::shared_ptr<FramePool> pool = FramePool::Create();
  zmq::message_t first = PooledRowsFrame(*pool, 0);
  const void* data = first.data();
  ExpectRows(std::move(first), 0);  // parsed, then freed: back to the pool
  EXPECT_EQ(pool->idle_buffers(), 1u);
  zmq::message_t second = PooledRowsFrame(*pool, 1000);
  EXPECT_EQ(second.data(), data);
  EXPECT_EQ(pool->idle_buffers(), 0u);
  ExpectRows(std::move(second), 1000);
  // Small messages are not pooled.
  OutgoingMessage small(1, 0, 0, pool.get());
  small.envelope().getBody().initClock().setClock(3);
  { zmq::message_t frame = small.ToFrame(); }
  EXPECT_EQ(pool->idle_buffers(), 1u);
}

TEST(FramePoolTest, ReusedBuffersAreZeroedAndIdleBytesBounded) {
  std::shared_ptr<FramePool> pool = FramePool::Create(/*max_idle_bytes=*/2 * 8192);
  void* a = pool->Take(8192);
  std::memset(a, 0xff, 8192);
  FramePool::Give(a);
  auto* again = static_cast<unsigned char*>(pool->Take(8000));
  EXPECT_EQ(again, a);
  for (size_t i = 0; i < 8000; ++i) ASSERT_EQ(again[i], 0) << i;
  void* b = pool->Take(8192);
  void* c = pool->Take(8192);
  FramePool::Give(again);
  FramePool::Give(b);
  FramePool::Give(c);  // over the bound: freed
  EXPECT_EQ(pool->idle_buffers(), 2u);
}

// Frames in flight keep their pool: its owner may go first (a node shutting down while ZeroMQ
// still holds frames it sent).
TEST(FramePoolTest, FramesOutliveThePoolsOwner) {
  std::shared_ptr<FramePool> pool = FramePool::Create();
  std::weak_ptr<FramePool> watch = pool;
  zmq::message_t frame = PooledRowsFrame(*pool, 7);
  pool.reset();
  EXPECT_FALSE(watch.expired());
  ExpectRows(std::move(frame), 7);
  EXPECT_TRUE(watch.expired());
}

TEST(MessageTest, BadFramesAreErrorsNotCrashes) {
  EXPECT_EQ(IncomingMessage::Parse(zmq::message_t()).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(IncomingMessage::Parse(zmq::message_t(std::string("abc"))).status().code(),
            StatusCode::kDataLoss);
  EXPECT_EQ(IncomingMessage::Parse(zmq::message_t(std::string(64, '\xff'))).status().code(),
            StatusCode::kDataLoss);
  // A valid message truncated to its first word.
  OutgoingMessage out(1, 0);
  out.envelope().getBody().initError().setMessage(std::string(100, 'x'));
  zmq::message_t frame = out.ToFrame();
  zmq::message_t truncated(frame.data(), 8);
  EXPECT_EQ(IncomingMessage::Parse(std::move(truncated)).status().code(), StatusCode::kDataLoss);
}

TEST(MessageTest, OtherProtocolVersionIsRejected) {
  OutgoingMessage out(1, 0);
  out.envelope().setVersion(proto::PROTOCOL_VERSION + 1);
  auto in = IncomingMessage::Parse(out.ToFrame());
  EXPECT_EQ(in.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(in.status().message().find("version"), std::string::npos);
}

TEST(MessageTest, ErrorsMapToStatusAndBack) {
  OutgoingMessage out(1, 0);
  FillError(Status::OutOfRange("row 9"), out.envelope().getBody().initError());
  auto in = IncomingMessage::Parse(out.ToFrame());
  ASSERT_TRUE(in.ok());
  Status s = StatusFromError((*in)->envelope().getBody().getError());
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(s.message(), "row 9");
}

// A server refusing a read that waits for a worker that left the program says so by its code
// (peerLeft), not by a phrase of its message: the worker maps it back to Aborted, whatever the
// text, and stops as "another worker left" (runtime/src/distributed/fatal.h).
TEST(MessageTest, APeerLeftErrorKeepsItsCode) {
  OutgoingMessage out(1, 0);
  FillError(Status::Aborted("any words"), out.envelope().getBody().initError());
  auto in = IncomingMessage::Parse(out.ToFrame());
  ASSERT_TRUE(in.ok());
  EXPECT_EQ((*in)->envelope().getBody().getError().getCode(), proto::ErrorCode::PEER_LEFT);
  Status s = StatusFromError((*in)->envelope().getBody().getError());
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(s.message(), "any words");
}

}  // namespace
}  // namespace tessera
