// libFuzzer target: a parameter-server shard's message handling (server/src/server*.cc), driven
// over inproc:// by a peer sending the fuzz input's frames (frames.h): registrations, tables,
// reads, update batches, clocks, unsubscriptions, garbage. A crash, a sanitizer report or a server
// that stops answering is a finding.
#include <spdlog/spdlog.h>

#include <memory>

#include "frames.h"
#include "tessera/server/coordinator.h"
#include "tessera/server/server.h"
#include "tessera/transport/security.h"

namespace {

using tessera::OutgoingMessage;
namespace proto = tessera::proto;

constexpr uint64_t kSentinelId = 0x5e9711e1;

struct Harness {
  Harness() {
    spdlog::set_level(spdlog::level::off);
    tessera::CoordinatorOptions co;
    co.listen = "inproc://fuzz-server-coordinator";
    co.num_servers = 1;
    co.num_workers = 1000;
    co.secret = "fuzz";
    coordinator = std::make_unique<tessera::Coordinator>(co, context);
    if (!coordinator->Start().ok()) std::abort();
    tessera::ServerOptions so;
    so.coordinator = "inproc://fuzz-server-coordinator";
    so.listen = "inproc://fuzz-server";
    so.secret = "fuzz";
    server = std::make_unique<tessera::Server>(so, context);
    if (!server->Start().ok()) std::abort();
    peer.connect("inproc://fuzz-server");
  }
  zmq::context_t context;
  std::unique_ptr<tessera::Coordinator> coordinator;
  std::unique_ptr<tessera::Server> server;
  zmq::socket_t peer{context, zmq::socket_type::dealer};
};

std::vector<std::vector<std::string>> Seeds() {
  auto one = [](auto fill) {
    OutgoingMessage msg(0, 1);
    fill(msg.envelope().getBody());
    return tessera::fuzz::Encode(msg);
  };
  const std::string reg = one([](proto::Envelope::Body::Builder b) {
    auto r = b.initRegister();
    r.setRole(proto::Role::WORKER);
    r.setRank(0);
    r.setSecret(tessera::SecretProof("fuzz"));
  });
  const std::string table = one([](proto::Envelope::Body::Builder b) {
    auto t = b.initCreateTable();
    t.setId(1);
    t.setName("t");
    t.setValueType(proto::ValueType::FLOAT32);
    t.setNumRows(100);
    t.setWidth(4);
  });
  const std::string sparse = one([](proto::Envelope::Body::Builder b) {
    auto t = b.initCreateTable();
    t.setId(2);
    t.setName("s");
    t.setValueType(proto::ValueType::INT32);
    t.setNumRows(100);
    t.setWidth(50);
    t.setSparse(true);
  });
  const std::string get = one([](proto::Envelope::Body::Builder b) {
    auto g = b.initGet();
    g.setTable(1);
    auto rows = g.initRows(2);
    rows.set(0, 3);
    rows.set(1, 7);
  });
  const std::string update = one([](proto::Envelope::Body::Builder b) {
    auto u = b.initUpdate();
    u.setSeq(1);
    u.setClock(1);
    u.setAckWanted(true);
    auto d = u.initDense(1)[0];
    d.setTable(1);
    d.initRows(1).set(0, 3);
    auto v = d.initValues().initF32(4);
    for (unsigned i = 0; i < 4; ++i) v.set(i, 1.5f);
  });
  const std::string sparse_update = one([](proto::Envelope::Body::Builder b) {
    auto u = b.initUpdate();
    u.setSeq(2);
    auto r = u.initRows(1)[0];
    r.setTable(2);
    r.setRow(5);
    r.initValues().initColumns(1).set(0, 7);
    r.getValues().initI32(1).set(0, 2);
  });
  const std::string unsubscribe = one([](proto::Envelope::Body::Builder b) {
    auto u = b.initUnsubscribe();
    u.setTable(1);
    u.initRows(1).set(0, 3);
  });
  const std::string clock = one([](proto::Envelope::Body::Builder b) { b.initClock().setClock(2); });
  return {{reg, table, get, update, get}, {reg, sparse, sparse_update, clock}, {reg, unsubscribe},
          {table}, {"garbage"}};
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tessera::fuzz::MaybeWriteSeeds(Seeds());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Harness* harness = new Harness();  // lives as long as the fuzzing process
  OutgoingMessage sentinel(999, kSentinelId);  // from an unregistered worker: always refused
  sentinel.envelope().getBody().initClock().setClock(0);
  tessera::fuzz::SendAndSync(harness->peer, tessera::fuzz::SplitFrames(data, size), sentinel,
                             kSentinelId);
  return 0;
}
