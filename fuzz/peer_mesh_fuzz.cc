// libFuzzer target: a worker's peer-mesh inbox (runtime/src/distributed/peer_mesh.cc). Two
// meshes of a two-worker job over inproc://; worker 1 sends the input's frames (frames.h) to
// worker 0 on its own connection, then a sentinel PeerMessage for a fresh step, which worker 0
// must receive: every frame before it has been handled by then. A crash, a sanitizer report or a
// sentinel that does not arrive is a finding.
//
// Every well-formed PeerMessage of worker 1 must be held and then received when asked for. One
// kind of frame is left out: worker 1's "leaving" announcement, after which worker 0 rightly
// refuses to wait for it (every later input would then test nothing).
#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "distributed/peer_mesh.h"
#include "frames.h"
#include "tessera/server/coordinator.h"

namespace {

using tessera::OutgoingMessage;
using tessera::internal::PeerMesh;

constexpr uint64_t kSentinelTag = 0x5e9711e1;

std::string PeerFrame(uint32_t from, uint64_t tag, int64_t step, const std::string& payload) {
  OutgoingMessage msg(from, 0);
  auto peer = msg.envelope().getBody().initPeer();
  peer.setTag(tag);
  peer.setStep(step);
  peer.setPayload(kj::arrayPtr(reinterpret_cast<const kj::byte*>(payload.data()), payload.size()));
  return tessera::fuzz::Encode(msg);
}

// What worker 0 must make of a frame from worker 1.
enum class Kind { kDropped, kHeld, kLeaving };

Kind KindOf(const std::string& frame, uint64_t* tag, int64_t* step) {
  auto parsed = tessera::IncomingMessage::Parse(zmq::message_t(frame.data(), frame.size()));
  if (!parsed.ok()) return Kind::kDropped;
  try {
    auto env = (*parsed)->envelope();
    if (!env.getBody().isPeer() || env.getSender() != 1) return Kind::kDropped;
    *tag = env.getBody().getPeer().getTag();
    *step = env.getBody().getPeer().getStep();
    // The mesh's own messages (tag ~0): leaving (INT64_MIN) and a connection's hello (+1).
    if (*tag == ~uint64_t{0} && *step == INT64_MIN) return Kind::kLeaving;
    if (*tag == ~uint64_t{0} && *step == INT64_MIN + 1) return Kind::kDropped;
    return Kind::kHeld;
  } catch (const kj::Exception&) {
    return Kind::kDropped;
  }
}

struct Harness {
  Harness() {
    spdlog::set_level(spdlog::level::off);
    tessera::CoordinatorOptions co;
    co.listen = "inproc://fuzz-mesh-coordinator";
    co.num_servers = 1;  // none start: the mesh does not need them
    co.num_workers = 2;
    co.secret = "fuzz";
    coordinator = std::make_unique<tessera::Coordinator>(co, context);
    if (!coordinator->Start().ok()) std::abort();
    auto connect = [this](int rank) {
      tessera::internal::PeerMeshOptions o;
      o.rank = rank;
      o.num_workers = 2;
      o.coordinator = "inproc://fuzz-mesh-coordinator";
      o.secret = "fuzz";
      o.bind = "inproc://fuzz-mesh-w" + std::to_string(rank);
      o.timeout = std::chrono::seconds(10);
      return PeerMesh::Connect(o, context);
    };
    auto a = std::async(std::launch::async, connect, 0);
    auto b = std::async(std::launch::async, connect, 1);
    auto ra = a.get();
    auto rb = b.get();
    if (!ra.ok() || !rb.ok()) std::abort();
    receiver = std::move(ra).value();
    sender = std::move(rb).value();
  }
  zmq::context_t context;
  std::unique_ptr<tessera::Coordinator> coordinator;
  std::unique_ptr<PeerMesh> receiver;
  std::unique_ptr<PeerMesh> sender;
  int64_t step = 0;
};

std::vector<std::vector<std::string>> Seeds() {
  return {{PeerFrame(1, 7, 0, "payload")},
          {PeerFrame(1, 7, 1, std::string(100, 'x')), PeerFrame(1, 7, 1, "again")},
          {PeerFrame(0, 3, 0, "from myself")},
          {PeerFrame(5, 3, 0, "from outside the job")},
          {"GET / HTTP/1.1\r\n\r\n"},
          {std::string(64, '\xff')}};
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tessera::fuzz::MaybeWriteSeeds(Seeds());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Harness* harness = new Harness();  // lives as long as the fuzzing process
  std::set<std::pair<uint64_t, int64_t>> held;  // what worker 0 must hold for worker 1
  for (const std::string& f : tessera::fuzz::SplitFrames(data, size)) {
    uint64_t tag = 0;
    int64_t step = 0;
    const Kind kind = KindOf(f, &tag, &step);
    if (kind == Kind::kLeaving) continue;
    if (kind == Kind::kHeld) held.emplace(tag, step);
    if (!harness->sender->SendFrame(0, zmq::message_t(f.data(), f.size())).ok()) std::abort();
  }
  // A step no input can have sent yet (inputs use small numbers): negative and fresh.
  const int64_t step = -1 - harness->step++ - (int64_t{1} << 40);
  const std::string sentinel = PeerFrame(1, kSentinelTag, step, "");
  if (!harness->sender->SendFrame(0, zmq::message_t(sentinel.data(), sentinel.size())).ok())
    std::abort();
  auto got = harness->receiver->Receive(1, kSentinelTag, step);
  if (!got.ok()) {
    std::fprintf(stderr, "fuzz: the sentinel did not arrive: %s\n", got.status().ToString().c_str());
    std::abort();
  }
  // Every well-formed message of worker 1 is held for whoever asks: take them (so that the next
  // inputs start with nothing held); one missing is a finding.
  for (const auto& [tag, s] : held) {
    auto msg = harness->receiver->Receive(1, tag, s);
    if (!msg.ok()) {
      std::fprintf(stderr, "fuzz: a message of worker 1 was lost: %s\n",
                   msg.status().ToString().c_str());
      std::abort();
    }
  }
  return 0;
}
