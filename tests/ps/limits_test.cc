// The bounds on what a worker's message makes a server allocate (docs/security.md):
// a table too wide, a read whose answer would be too large, a list that claims more
// elements than its frame holds, too many tables or waiting reads are refused with a clear
// error, and the server goes on serving; a Client splits a large read so that a program never
// meets the read bound.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "in_process_cluster.h"
#include "raw_peer.h"
#include "tessera/table/wire.h"
#include "tessera/transport/message.h"

namespace tessera {
namespace {

using testing::InProcessCluster;
using testing::RawPeer;

constexpr TableId kTable = 1;

TableSpec Counters() { return testing::TestTable(kTable, "counters", ValueType::kInt64, 4, 2); }

class LimitsTest : public ::testing::Test {
 protected:
  // Worker 0 is a real client, worker 1 is played by a raw peer.
  LimitsTest() : cluster_({.num_servers = 1, .num_workers = 2, .num_clients = 1}) {}
  void SetUp() override {
    ASSERT_TRUE(cluster_.client(0).CreateTable(Counters()).ok());
    peer_.Register(1, "test-secret");
    ASSERT_NE(peer_.Receive(), nullptr);
  }
  // Sends `msg` and returns the code of the error it is answered with (any other answer is a
  // test failure).
  proto::ErrorCode Refusal(std::unique_ptr<OutgoingMessage> msg) {
    peer_.Send(*msg);
    return peer_.ExpectError();
  }
  void ExpectStillServed() {
    ASSERT_TRUE(cluster_.client(0).Inc<int64_t>(kTable, 0, 0, 3).ok());
    std::vector<int64_t> row;
    ASSERT_TRUE(cluster_.client(0).Get<int64_t>(0, kTable, 0, &row).ok());
    EXPECT_EQ(row[0], 3);
  }

  InProcessCluster cluster_;
  RawPeer peer_{cluster_, cluster_.server(0).endpoint()};
};

std::unique_ptr<OutgoingMessage> CreateTable(const TableSpec& spec) {
  auto msg = std::make_unique<OutgoingMessage>(1, 5);
  TableSpecToProto(spec, msg->envelope().getBody().initCreateTable());
  return msg;
}

std::unique_ptr<OutgoingMessage> Read(TableId table, std::vector<RowId> rows,
                                      int64_t min_clock = 0) {
  auto msg = std::make_unique<OutgoingMessage>(1, 6);
  auto get = msg->envelope().getBody().initGet();
  get.setTable(table);
  get.setMinClock(min_clock);
  auto list = get.initRows(static_cast<unsigned>(rows.size()));
  for (unsigned i = 0; i < rows.size(); ++i) list.set(i, rows[i]);
  return msg;
}

// A table whose spec came from a message: a row of 2^32-1 float32 cells (16 GiB) would be
// allocated by the first read of it. Refused when created, like any row past kMaxDenseRowBytes.
TEST_F(LimitsTest, ATableWithRowsPastTheBoundIsRefused) {
  TableSpec huge = testing::TestTable(7, "huge", ValueType::kFloat32, 10, 0xffffffffu);
  auto create = CreateTable(huge);
  EXPECT_EQ(Refusal(std::move(create)), proto::ErrorCode::INVALID_ARGUMENT);
  auto read = Read(7, {0});
  EXPECT_EQ(Refusal(std::move(read)), proto::ErrorCode::NOT_FOUND);
  // The client checks the same bound before sending anything.
  Status s = cluster_.client(0).CreateTable(huge);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("more than the limit"), std::string::npos) << s.ToString();
  // Sparse rows take what their columns take: a wide sparse table is fine.
  huge.sparse = true;
  EXPECT_TRUE(huge.Validate().ok());
  ExpectStillServed();
}

// A read names a row in 8 bytes; its answer carries the whole row. 9 rows of 32 MiB would make a
// 288 MiB answer: refused before anything is built; 8 rows (exactly the bound) are answered.
TEST_F(LimitsTest, AReadWhoseAnswerWouldPassTheBoundIsRefused) {
  const TableSpec wide = testing::TestTable(8, "wide", ValueType::kFloat64, 100, 1u << 22);
  ASSERT_EQ(wide.MaxRowsPerRead(), 8u);
  auto create = CreateTable(wide);
  peer_.Send(create);
  auto ack = peer_.Receive();
  ASSERT_NE(ack, nullptr);
  ASSERT_TRUE(ack->envelope().getBody().isTableAck());
  auto too_much = Read(8, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ(Refusal(std::move(too_much)), proto::ErrorCode::OUT_OF_RANGE);
  // The same row named again counts again (the answer would repeat it).
  auto repeated = Read(8, std::vector<RowId>(9, 3));
  EXPECT_EQ(Refusal(std::move(repeated)), proto::ErrorCode::OUT_OF_RANGE);
  auto one = Read(8, {5});
  peer_.Send(one);
  auto rows = peer_.Receive();
  ASSERT_NE(rows, nullptr);
  ASSERT_TRUE(rows->envelope().getBody().isRows());
  EXPECT_EQ(rows->envelope().getBody().getRows().getDense()[0].getRows().size(), 1u);
  EXPECT_GE(cluster_.server(0).stats().rejected_messages, 2u);
  ExpectStillServed();
}

// A Client reading more rows than one answer may carry sends several requests: the program
// gets every row, whether through the cache or uncached.
TEST_F(LimitsTest, AClientSplitsAReadPastTheBound) {
  Client& c = cluster_.client(0);
  const TableSpec wide = testing::TestTable(9, "wide", ValueType::kFloat32, 100, 1u << 23);
  ASSERT_EQ(wide.MaxRowsPerRead(), 8u);
  ASSERT_TRUE(c.CreateTable(wide).ok());
  ASSERT_TRUE(c.Inc<float>(9, 10, 5, 2.5f).ok());
  ASSERT_TRUE(c.Inc<float>(9, 90, 7, -1.0f).ok());
  const std::vector<RowId> rows = {0, 10, 20, 30, 40, 50, 60, 70, 80, 90};  // 10 rows: 2 requests
  const uint64_t gets_before = cluster_.server(0).stats().gets;
  std::vector<float> out(rows.size() * wide.width, 9.0f);
  ASSERT_TRUE(c.GetRows<float>(0, 9, rows, out).ok());
  EXPECT_EQ(out[1 * wide.width + 5], 2.5f);
  EXPECT_EQ(out[9 * wide.width + 7], -1.0f);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(cluster_.server(0).stats().gets - gets_before, 2u);
  std::fill(out.begin(), out.end(), 9.0f);
  auto ticket = c.StartUncachedRead<float>(0, 9, rows, out);
  ASSERT_TRUE(ticket.ok()) << ticket.status().ToString();
  ASSERT_TRUE(c.WaitUncachedRead(*ticket).ok());
  EXPECT_EQ(out[1 * wide.width + 5], 2.5f);
  EXPECT_EQ(out[9 * wide.width + 7], -1.0f);
  EXPECT_EQ(out[8 * wide.width], 0.0f);
  EXPECT_EQ(cluster_.server(0).stats().gets - gets_before, 4u);
}

// An update batch whose row list claims 2^28 rows of zero bytes each (Cap'n Proto lets a list
// of empty structs be that long in a few words): the server would reserve and walk 2^28 entries
// for a 100-byte frame. No encoder makes a list of empty structs: malformed, refused before the
// server loops over or reserves for its elements.
TEST_F(LimitsTest, AListClaimingMoreElementsThanItsFrameHoldsIsMalformed) {
  OutgoingMessage msg(1, 0);
  auto update = msg.envelope().getBody().initUpdate();
  update.setSeq(1);
  update.initRows(1)[0].setRow(1);
  const zmq::message_t frame = msg.ToFrame();
  std::string bytes(static_cast<const char*>(frame.data()), frame.size());
  // The list's tag word: element count 1 (bits 2..31), the struct's data and pointer words.
  using RowStruct = proto::Row::_capnpPrivate;
  const uint64_t tag = (uint64_t{1} << 2) | (uint64_t{RowStruct::dataWordSize} << 32) |
                       (uint64_t{RowStruct::pointerCount} << 48);
  size_t at = std::string::npos;
  for (size_t i = 8; i + 8 <= bytes.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    if (word == tag) at = i;
  }
  ASSERT_NE(at, std::string::npos);
  const uint64_t empty_structs = uint64_t{1} << 28 << 2;  // 2^28 structs of 0 words
  std::memcpy(bytes.data() + at, &empty_structs, 8);
  peer_.SendBytes(bytes);
  EXPECT_EQ(peer_.ExpectError(), proto::ErrorCode::MALFORMED);
  ExpectStillServed();
}

// Tables and reads waiting for the clock are kept per job and per worker, up to their bounds.
TEST_F(LimitsTest, TablesAndWaitingReadsAreBounded) {
  // The job has table 1; up to 4096 in all.
  for (TableId id = 100; id < 100 + 4095; ++id) {
    auto create = CreateTable(testing::TestTable(id, "t", ValueType::kInt32, 1, 1));
    peer_.Send(create);
  }
  for (int i = 0; i < 4095; ++i) {
    auto ack = peer_.Receive();
    ASSERT_NE(ack, nullptr);
    ASSERT_TRUE(ack->envelope().getBody().isTableAck()) << i;
  }
  auto one_more = CreateTable(testing::TestTable(50, "t", ValueType::kInt32, 1, 1));
  EXPECT_EQ(Refusal(std::move(one_more)), proto::ErrorCode::OUT_OF_RANGE);
  // Creating an existing table again is still fine.
  auto again = CreateTable(testing::TestTable(100, "t", ValueType::kInt32, 1, 1));
  peer_.Send(again);
  auto ack = peer_.Receive();
  ASSERT_NE(ack, nullptr);
  EXPECT_TRUE(ack->envelope().getBody().isTableAck());
  // Reads for a clock far ahead wait; 65536 of them, then the next is refused.
  for (int i = 0; i < 65536; ++i) {
    auto wait = Read(kTable, {1}, 1000);
    peer_.Send(wait);
  }
  auto too_many = Read(kTable, {1}, 1000);
  EXPECT_EQ(Refusal(std::move(too_many)), proto::ErrorCode::OUT_OF_RANGE);
  EXPECT_EQ(cluster_.server(0).stats().parked_gets, 65536u);
  ExpectStillServed();
}

}  // namespace
}  // namespace tessera
