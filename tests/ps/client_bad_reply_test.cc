// What a client does with replies no real server sends: a read that gets garbage, an error, or
// rows it did not ask for fails with a clear error (or, for garbage, is answered by the next
// good reply), and the client goes on working. The server is a FakeServer the test drives.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "fake_server.h"
#include "in_process_cluster.h"
#include "tessera/table/row_values.h"

namespace tessera {
namespace {

using testing::FakeServer;

constexpr TableId kTable = 1;
constexpr uint32_t kWidth = 2;
const char kSecret[] = "fake-test";

class ClientBadReplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CoordinatorOptions co;
    co.listen = "inproc://bad-reply-coordinator";
    co.num_servers = 1;
    co.num_workers = 1;
    co.secret = kSecret;
    coordinator_ = std::make_unique<Coordinator>(co, context_);
    ASSERT_TRUE(coordinator_->Start().ok());
    server_ = std::make_unique<FakeServer>(context_, coordinator_->endpoint(), 0, kSecret,
                                           "inproc://bad-reply-server");
    ClientOptions o;
    o.coordinator = coordinator_->endpoint();
    o.secret = kSecret;
    o.timeout = std::chrono::seconds(30);
    client_ = std::make_unique<Client>(o, context_);
    ASSERT_TRUE(client_->Start().ok());
    spec_ = testing::TestTable(kTable, "t", ValueType::kFloat32, 100, kWidth);
    ASSERT_TRUE(client_->CreateTable(spec_).ok());
  }
  void TearDown() override {
    client_.reset();
    server_->Stop();  // before the pointer goes: handlers use it
    server_.reset();
    coordinator_->Stop();
  }

  // A reply to `request_id` with rows `ids`, row i's cells all i + 1.
  void SendRows(const std::string& identity, uint64_t request_id, const std::vector<RowId>& ids,
                TableId table = kTable) {
    OutgoingMessage reply(0, request_id);
    auto batch = reply.envelope().getBody().initRows();
    batch.setClock(0);
    auto block = batch.initDense(1)[0];
    block.setTable(table);
    auto rows = block.initRows(static_cast<unsigned>(ids.size()));
    std::byte* cells = RowValues::InitDenseBlock(block.initValues(), spec_, ids.size());
    for (unsigned i = 0; i < ids.size(); ++i) {
      rows.set(i, ids[i]);
      for (uint32_t c = 0; c < kWidth; ++c) {
        const float v = float(i + 1);
        std::memcpy(cells + (i * kWidth + c) * sizeof(float), &v, sizeof(float));
      }
    }
    server_->Send(identity, reply);
  }
  // The rows a get request asks for.
  static std::vector<RowId> Asked(proto::GetRequest::Reader get) {
    std::vector<RowId> rows;
    for (RowId r : get.getRows()) rows.push_back(r);
    return rows;
  }
  Status ReadUncached(const std::vector<RowId>& rows, std::vector<float>* out) {
    auto ticket = client_->StartUncachedRead<float>(0, kTable, rows, *out);
    if (!ticket.ok()) return ticket.status();
    return client_->WaitUncachedRead(*ticket);
  }

  zmq::context_t context_;
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<FakeServer> server_;
  std::unique_ptr<Client> client_;
  TableSpec spec_;
  int replies_ = 0;  // the fake's thread only (a test's local would be reused stack after it)
};

// Rows other than those asked, in another order, or of another table: the read fails with
// DataLoss; the next read, answered properly, succeeds.
TEST_F(ClientBadReplyTest, UncachedReadOfRowsNotAskedForFailsAndTheNextSucceeds) {
  server_->OnGet([&](const std::string& id, uint64_t request, proto::GetRequest::Reader get) {
    std::vector<RowId> rows = Asked(get);
    EXPECT_FALSE(get.getSubscribe());
    switch (replies_++) {
      case 0:
        rows[0] += 1;  // a row not asked for
        SendRows(id, request, rows);
        break;
      case 1:
        std::swap(rows[0], rows[1]);  // the right rows, another order
        SendRows(id, request, rows);
        break;
      case 2:
        rows.pop_back();  // one row short
        SendRows(id, request, rows);
        break;
      case 3:
        SendRows(id, request, rows, kTable + 1);  // another table
        break;
      default:
        SendRows(id, request, rows);
    }
  });
  std::vector<float> out(2 * kWidth, -1.0f);
  for (int bad = 0; bad < 4; ++bad) {
    Status s = ReadUncached({3, 7}, &out);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << bad << ": " << s.ToString();
  }
  ASSERT_TRUE(ReadUncached({3, 7}, &out).ok());
  EXPECT_EQ(out, (std::vector<float>{1, 1, 2, 2}));
}

// The server's error for a request reaches the reader that waits for it, uncached or cached.
TEST_F(ClientBadReplyTest, AServersErrorFailsTheReadThatAskedAndNothingElse) {
  server_->OnGet([&](const std::string& id, uint64_t request, proto::GetRequest::Reader get) {
    if (get.getRows()[0] == 13) {
      server_->SendError(id, request, Status::OutOfRange("row 13 is cursed"));
    } else {
      SendRows(id, request, Asked(get));
    }
  });
  std::vector<float> out(kWidth);
  Status s = ReadUncached({13}, &out);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << s.ToString();
  EXPECT_NE(s.message().find("row 13 is cursed"), std::string::npos) << s.ToString();
  std::vector<float> row;
  Status cached = client_->Get<float>(0, kTable, 13, &row);
  EXPECT_EQ(cached.code(), StatusCode::kOutOfRange) << cached.ToString();
  ASSERT_TRUE(ReadUncached({14}, &out).ok());
  EXPECT_EQ(out, (std::vector<float>{1, 1}));
  ASSERT_TRUE(client_->Get<float>(0, kTable, 15, &row).ok());
  EXPECT_EQ(row, (std::vector<float>{1, 1}));
}

// An error a server sends for no request (request id 0: what a server whose queue for this worker
// overflowed sends, ServerOptions::send_queue) fails the worker's next clock with that error: a
// worker never goes on without what the server dropped.
TEST_F(ClientBadReplyTest, AServersErrorForNoRequestFailsTheNextClock) {
  server_->OnGet([&](const std::string& id, uint64_t request, proto::GetRequest::Reader get) {
    server_->SendError(id, 0,
                       Status::DataLoss("server 0 dropped 3 messages (answers, pushes) to this "
                                        "worker because more than 4 it had not read were queued"));
    SendRows(id, request, Asked(get));
  });
  std::vector<float> row;
  ASSERT_TRUE(client_->Get<float>(0, kTable, 5, &row).ok());  // its answer came after the error
  Status s = client_->Clock(0);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find("server 0: server 0 dropped 3 messages"), std::string::npos)
      << s.ToString();
}

// Garbage and a wrong-version envelope from a server are dropped (logged); the good reply that
// follows answers the read.
TEST_F(ClientBadReplyTest, GarbageFromAServerIsDroppedAndTheReplyAfterItIsRead) {
  server_->OnGet([&](const std::string& id, uint64_t request, proto::GetRequest::Reader get) {
    server_->SendBytes(id, "not a message at all");
    OutgoingMessage wrong(0, request);
    wrong.envelope().setVersion(proto::PROTOCOL_VERSION + 1);
    wrong.envelope().getBody().initRows().setClock(0);
    server_->Send(id, wrong);
    SendRows(id, request, Asked(get));
  });
  std::vector<float> out(2 * kWidth);
  ASSERT_TRUE(ReadUncached({1, 2}, &out).ok());
  EXPECT_EQ(out, (std::vector<float>{1, 1, 2, 2}));
  std::vector<float> row;
  ASSERT_TRUE(client_->Get<float>(0, kTable, 5, &row).ok());
  EXPECT_EQ(row, (std::vector<float>{1, 1}));
}

}  // namespace
}  // namespace tessera
