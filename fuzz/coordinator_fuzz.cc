// libFuzzer target: the coordinator's message handling (server/src/coordinator.cc), driven over
// inproc:// by a peer sending the fuzz input's frames (frames.h). A crash, a sanitizer report or a
// coordinator that stops answering is a finding.
#include <spdlog/spdlog.h>

#include <memory>

#include "frames.h"
#include "tessera/server/coordinator.h"
#include "tessera/transport/security.h"

namespace {

using tessera::OutgoingMessage;
namespace proto = tessera::proto;

constexpr uint64_t kSentinelId = 0x5e9711e1;

struct Harness {
  Harness() {
    spdlog::set_level(spdlog::level::off);
    tessera::CoordinatorOptions o;
    o.listen = "inproc://fuzz-coordinator";
    o.num_servers = 2;
    o.num_workers = 1000;  // so that inputs can hardly make every worker leave (the job's end)
    o.secret = "fuzz";
    coordinator = std::make_unique<tessera::Coordinator>(o, context);
    if (!coordinator->Start().ok()) std::abort();
    peer.connect("inproc://fuzz-coordinator");
  }
  zmq::context_t context;
  std::unique_ptr<tessera::Coordinator> coordinator;
  zmq::socket_t peer{context, zmq::socket_type::dealer};
};

std::vector<std::vector<std::string>> Seeds() {
  auto one = [](auto fill) {
    OutgoingMessage msg(0, 1);
    fill(msg.envelope().getBody());
    return tessera::fuzz::Encode(msg);
  };
  const std::string proof = tessera::SecretProof("fuzz");
  const std::string reg_worker = one([&](proto::Envelope::Body::Builder b) {
    auto r = b.initRegister();
    r.setRole(proto::Role::WORKER);
    r.setRank(3);
    r.setSecret(proof);
  });
  const std::string reg_server = one([&](proto::Envelope::Body::Builder b) {
    auto r = b.initRegister();
    r.setRole(proto::Role::SERVER);
    r.setRank(1);
    r.setEndpoint("tcp://127.0.0.1:1");
    r.setSecret(proof);
  });
  const std::string barrier =
      one([](proto::Envelope::Body::Builder b) { b.initBarrier().setId(1); });
  const std::string announce = one([&](proto::Envelope::Body::Builder b) {
    auto a = b.initAnnouncePeer();
    a.setRank(2);
    a.setEndpoint("tcp://127.0.0.1:2");
    a.setSecret(proof);
  });
  const std::string heartbeat = one([&](proto::Envelope::Body::Builder b) {
    auto h = b.initHeartbeat();
    h.setRole(proto::Role::WORKER);
    h.setRank(3);
    h.setPid(42);
    h.setHost("node");
    h.setSecret(proof);
  });
  const std::string leave = one([](proto::Envelope::Body::Builder b) { b.initLeave().setRank(3); });
  return {{reg_worker, barrier, barrier}, {reg_server}, {announce, announce}, {heartbeat},
          {reg_worker, leave},            {"garbage"},  {std::string(64, '\xff')}};
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tessera::fuzz::MaybeWriteSeeds(Seeds());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Harness* harness = new Harness();  // lives as long as the fuzzing process
  OutgoingMessage sentinel(0, kSentinelId);
  sentinel.envelope().getBody().initTableAck().setId(0);  // "does not handle this message"
  tessera::fuzz::SendAndSync(harness->peer, tessera::fuzz::SplitFrames(data, size), sentinel,
                             kSentinelId);
  return 0;
}
