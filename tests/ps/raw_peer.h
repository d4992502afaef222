// RawPeer: a hand-driven DEALER that talks to a server with whatever bytes a test wants, for
// tests that must see exactly what reaches the server or send what no Client would.
#ifndef TESSERA_TESTS_PS_RAW_PEER_H_
#define TESSERA_TESTS_PS_RAW_PEER_H_

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "in_process_cluster.h"
#include "tessera/table/row_values.h"
#include "tessera/transport/message.h"
#include "tessera/transport/security.h"

namespace tessera::testing {

class RawPeer {
 public:
  RawPeer(InProcessCluster& cluster, const std::string& endpoint)
      : socket_(cluster.context(), zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 0);
    SecureConnectSide(socket_, cluster.options().secret);  // a peer of the job (tcp clusters)
    socket_.connect(endpoint);
  }
  void SendBytes(const std::string& bytes) {
    socket_.send(zmq::buffer(bytes), zmq::send_flags::none);
  }
  void Send(std::unique_ptr<OutgoingMessage>& msg) { Send(*msg); }
  void Send(OutgoingMessage& msg) { socket_.send(msg.ToFrame(), zmq::send_flags::none); }
  // The next message, or nullptr if none arrives in 10 s (a failure bound, not a sync point).
  std::unique_ptr<IncomingMessage> Receive() {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::seconds(10)) == 0) return nullptr;
    zmq::message_t frame;
    (void)socket_.recv(frame, zmq::recv_flags::none);
    auto msg = IncomingMessage::Parse(std::move(frame));
    return msg.ok() ? std::move(*msg) : nullptr;
  }
  proto::ErrorCode ExpectError() {
    auto msg = Receive();
    EXPECT_NE(msg, nullptr);
    if (msg == nullptr) return proto::ErrorCode::DATA_LOSS;
    EXPECT_TRUE(msg->envelope().getBody().isError());
    return msg->envelope().getBody().getError().getCode();
  }
  void Register(uint32_t rank, const std::string& secret) {
    OutgoingMessage reg(rank, 7);
    auto r = reg.envelope().getBody().initRegister();
    r.setRole(proto::Role::WORKER);
    r.setRank(rank);
    r.setSecret(SecretProof(secret));
    Send(reg);
  }

 private:
  zmq::socket_t socket_;
};

// The rows of table `spec` in a RowBatch, as (row, cells), whether sent one by one (`rows`) or
// packed (`dense`); a malformed batch is a test failure.
inline std::vector<std::pair<RowId, std::vector<double>>> RowsOf(proto::RowBatch::Reader batch,
                                                                 const TableSpec& spec) {
  std::vector<std::pair<RowId, std::vector<double>>> out;
  auto cells_of = [&](const RowValues& v) {
    std::vector<double> cells(spec.width);
    for (uint32_t c = 0; c < spec.width; ++c) cells[c] = v.CellAsDouble(c);
    return cells;
  };
  for (auto row : batch.getRows()) {
    if (row.getTable() != spec.id) continue;
    auto values = RowValues::FromProto(row.getValues(), spec);
    EXPECT_TRUE(values.ok()) << values.status().ToString();
    if (values.ok()) out.emplace_back(row.getRow(), cells_of(*values));
  }
  for (auto block : batch.getDense()) {
    if (block.getTable() != spec.id) continue;
    auto cells = DenseBlock::Check(block.getValues(), block.getRows().size(), spec);
    EXPECT_TRUE(cells.ok()) << cells.status().ToString();
    if (!cells.ok()) continue;
    for (unsigned i = 0; i < block.getRows().size(); ++i) {
      RowValues v;
      v.AssignDense(cells->row(i), spec);
      out.emplace_back(block.getRows()[i], cells_of(v));
    }
  }
  return out;
}

// An Unsubscribe from worker `rank` of `rows` of table `table`.
inline std::unique_ptr<OutgoingMessage> UnsubscribeMessage(uint32_t rank, TableId table,
                                                           const std::vector<RowId>& rows) {
  auto msg = std::make_unique<OutgoingMessage>(rank, 13);
  auto body = msg->envelope().getBody().initUnsubscribe();
  body.setTable(table);
  auto list = body.initRows(static_cast<unsigned>(rows.size()));
  for (unsigned i = 0; i < rows.size(); ++i) list.set(i, rows[i]);
  return msg;
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_PS_RAW_PEER_H_
