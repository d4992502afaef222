// libFuzzer target: a Client's handling of what a server sends it (client/src/replies.cc,
// client.cc): answers, pushes, errors, acknowledgements, garbage. The fuzz thread plays the one
// server shard of the job (a ROUTER over inproc://): it sends the input's frames (frames.h) to
// the client, then the client starts an uncached read, which the fake answers properly; the read
// must complete (with the rows or an error) once the client has handled every frame before the
// answer. A crash, a sanitizer report or a read that never completes is a finding.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "frames.h"
#include "tessera/client/client.h"
#include "tessera/server/coordinator.h"
#include "tessera/transport/endpoint.h"
#include "tessera/transport/join.h"
#include "tessera/transport/router.h"
#include "tessera/transport/waker.h"

namespace {

using tessera::OutgoingMessage;
namespace proto = tessera::proto;

constexpr tessera::TableId kTable = 1;
constexpr uint32_t kWidth = 4;
constexpr uint64_t kRows = 64;

tessera::TableSpec Spec() {
  tessera::TableSpec spec;
  spec.id = kTable;
  spec.name = "t";
  spec.value_type = tessera::ValueType::kFloat32;
  spec.num_rows = kRows;
  spec.width = kWidth;
  return spec;
}

// A dense answer to request `id`: rows `rows`, every cell 1.
zmq::message_t RowsReply(uint64_t id, capnp::List<uint64_t>::Reader rows) {
  OutgoingMessage reply(0, id);
  auto batch = reply.envelope().getBody().initRows();
  batch.setClock(0);
  auto block = batch.initDense(1)[0];
  block.setTable(kTable);
  auto ids = block.initRows(rows.size());
  for (unsigned i = 0; i < rows.size(); ++i) ids.set(i, rows[i]);
  auto cells = block.initValues().initF32(rows.size() * kWidth);
  for (unsigned i = 0; i < cells.size(); ++i) cells.set(i, 1.0f);
  return reply.ToFrame();
}

struct Harness {
  Harness() {
    spdlog::set_level(spdlog::level::off);
    tessera::CoordinatorOptions co;
    co.listen = "inproc://fuzz-client-coordinator";
    co.num_servers = 1;
    co.num_workers = 1;
    co.secret = "fuzz";
    coordinator = std::make_unique<tessera::Coordinator>(co, context);
    if (!coordinator->Start().ok()) std::abort();
    if (!tessera::BindSocket(shard, "inproc://fuzz-client-server").ok()) std::abort();
    // The shard joins and answers the client's registration and table while it starts.
    std::thread fake([this] {
      zmq::socket_t to_coordinator(context, zmq::socket_type::dealer);
      auto joined =
          tessera::JoinJob(to_coordinator, "inproc://fuzz-client-coordinator",
                           {proto::Role::SERVER, 0, "inproc://fuzz-client-server", "fuzz"},
                           std::chrono::seconds(30));
      if (!joined.ok()) std::abort();
      for (bool table = false; !table;) table = AnswerControl(std::chrono::seconds(30));
    });
    tessera::ClientOptions o;
    o.coordinator = "inproc://fuzz-client-coordinator";
    o.secret = "fuzz";
    o.timeout = std::chrono::seconds(10);
    client = std::make_unique<tessera::Client>(o, context);
    if (!client->Start().ok()) std::abort();
    if (!client->CreateTable(Spec()).ok()) std::abort();
    fake.join();
  }

  // Answers one control message (registration, table) within `within`; returns whether it was
  // the table's creation. Aborts if none comes.
  bool AnswerControl(std::chrono::seconds within) {
    zmq::pollitem_t item{shard.handle(), 0, ZMQ_POLLIN, 0};
    const auto deadline = std::chrono::steady_clock::now() + within;
    // A signal (libFuzzer's timers) ends a poll early: PollItems then reports nothing ready.
    while (tessera::PollItems(&item, 1, std::chrono::milliseconds(100)) == 0) {
      if (std::chrono::steady_clock::now() > deadline) std::abort();
    }
    auto in = tessera::TryReceiveRouted(shard);
    if (!in) return false;
    auto msg = tessera::IncomingMessage::Parse(std::move(in->payload));
    if (!msg.ok()) std::abort();
    auto body = (*msg)->envelope().getBody();
    OutgoingMessage reply(0, (*msg)->envelope().getRequestId());
    if (body.isRegister()) {
      client_identity = in->identity;
      reply.envelope().getBody().initMembership().setNumWorkers(1);
    } else if (body.isCreateTable()) {
      reply.envelope().getBody().initTableAck().setId(body.getCreateTable().getId());
    } else {
      return false;
    }
    if (!tessera::SendRouted(shard, in->identity, reply.ToFrame()).ok()) std::abort();
    return body.isCreateTable();
  }

  // Receives until the client's read request comes and answers it; other messages (updates,
  // clocks, unsubscriptions) are dropped. Aborts if none comes within 10 s.
  void AnswerRead() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    zmq::pollitem_t item{shard.handle(), 0, ZMQ_POLLIN, 0};
    while (std::chrono::steady_clock::now() < deadline) {
      if (zmq_poll(&item, 1, 100) <= 0) continue;
      while (auto in = tessera::TryReceiveRouted(shard)) {
        auto msg = tessera::IncomingMessage::Parse(std::move(in->payload));
        if (!msg.ok() || !(*msg)->envelope().getBody().isGet()) continue;
        zmq::message_t reply = RowsReply((*msg)->envelope().getRequestId(),
                                         (*msg)->envelope().getBody().getGet().getRows());
        if (!tessera::SendRouted(shard, in->identity, std::move(reply)).ok()) std::abort();
        return;
      }
    }
    std::fprintf(stderr, "fuzz: the client sent no read request within 10 s\n");
    std::abort();
  }

  zmq::context_t context;
  std::unique_ptr<tessera::Coordinator> coordinator;
  zmq::socket_t shard{context, zmq::socket_type::router};
  std::string client_identity;
  std::unique_ptr<tessera::Client> client;
};

std::vector<std::vector<std::string>> Seeds() {
  auto one = [](uint64_t id, auto fill) {
    OutgoingMessage msg(0, id);
    fill(msg.envelope().getBody());
    return tessera::fuzz::Encode(msg);
  };
  const std::string push = one(0, [](proto::Envelope::Body::Builder b) {
    auto batch = b.initRows();
    batch.setClock(1);
    auto block = batch.initDense(1)[0];
    block.setTable(kTable);
    block.initRows(1).set(0, 3);
    block.initValues().initF32(kWidth);
  });
  const std::string sparse_push = one(0, [](proto::Envelope::Body::Builder b) {
    auto row = b.initRows().initRows(1)[0];
    row.setTable(kTable);
    row.setRow(5);
    row.initValues().initF32(kWidth);
  });
  const std::string error = one(2, [](proto::Envelope::Body::Builder b) {
    tessera::FillError(proto::ErrorCode::NOT_FOUND, "no such table", b.initError());
  });
  const std::string ack =
      one(0, [](proto::Envelope::Body::Builder b) { b.initUpdateAck().setAppliedSeq(1); });
  const std::string leave = one(0, [](proto::Envelope::Body::Builder b) { b.initLeave(); });
  return {{push}, {sparse_push, push}, {error}, {ack}, {leave}, {"garbage"}};
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tessera::fuzz::MaybeWriteSeeds(Seeds());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Harness* harness = new Harness();  // lives as long as the fuzzing process
  for (const std::string& f : tessera::fuzz::SplitFrames(data, size)) {
    if (!tessera::SendRouted(harness->shard, harness->client_identity,
                             zmq::message_t(f.data(), f.size()))
             .ok()) {
      std::abort();
    }
  }
  const std::vector<tessera::RowId> rows = {7, 8};
  std::vector<float> out(rows.size() * kWidth);
  auto ticket = harness->client->StartUncachedRead<float>(0, kTable, rows, out);
  if (!ticket.ok()) return 0;  // the client refuses reads once it has failed: no finding
  harness->AnswerRead();
  // The answer or an error (an input may answer the read first, or fail the client): either
  // way the read completes; a timeout is a client that stopped handling its socket.
  tessera::Status s = harness->client->WaitUncachedRead(*ticket);
  if (!s.ok() && s.code() == tessera::StatusCode::kUnavailable &&
      s.message().find("no answer within") != std::string::npos) {
    std::fprintf(stderr, "fuzz: the client's read did not complete: %s\n", s.ToString().c_str());
    std::abort();
  }
  return 0;
}
