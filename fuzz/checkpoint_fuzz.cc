// libFuzzer target: a checkpoint's data files (docs/faults.md, "Checkpoints"), given whatever
// they may hold. An input is frames (frames.h); the first byte of the first picks what is read:
//   0 a server's tables file (tables-s0.bin, server/src/server_checkpoint.cc): the second frame
//     is its content, which a parameter-server shard restores (RestoreTables, with the file's
//     true size and crc32, so the parser sees the bytes rather than the checksum refusing
//     them); the further frames are messages to the shard (CreateTable: a table filled from the
//     restored rows)
//   1 a checkpoint directory (runtime/src/checkpoint/checkpoint_store.h): the second frame is its
//     MANIFEST, the third an array's data file a1-w0.bin; FindLatest finds and decodes the
//     manifest, and ReadDataFile reads every file it lists (size and crc32 checked)
// A reader may refuse the files with an error; a crash, a sanitizer report, an allocation past
// libFuzzer's limit or a shard that stops answering is a finding.
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "frames.h"
#include "tessera/common/checked_file.h"
#include "tessera/server/coordinator.h"
#include "tessera/server/server.h"
#include "tessera/table/row_values.h"
#include "tessera/table/wire.h"
#include "tessera/transport/security.h"

namespace {

using tessera::OutgoingMessage;
namespace ckpt = tessera::internal::checkpoint;
namespace fs = std::filesystem;
namespace proto = tessera::proto;

constexpr uint64_t kSentinelId = 0x5e9711e1;
constexpr char kCheckpoint[] = "ckpt-000000000001";

std::span<const char> Span(const std::string& s) { return {s.data(), s.size()}; }

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
}

struct Harness {
  Harness() {
    spdlog::set_level(spdlog::level::off);
    char tmpl[] = "/tmp/tessera-checkpoint-fuzz-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) std::abort();
    dir = tmpl;
    fs::create_directories(dir + "/tables/" + kCheckpoint);
    tessera::CoordinatorOptions co;
    co.listen = "inproc://fuzz-checkpoint-coordinator";
    co.num_servers = 1;
    co.num_workers = 1000;
    co.secret = "fuzz";
    coordinator = std::make_unique<tessera::Coordinator>(co, context);
    if (!coordinator->Start().ok()) std::abort();
    tessera::ServerOptions so;
    so.coordinator = "inproc://fuzz-checkpoint-coordinator";
    so.listen = "inproc://fuzz-checkpoint-server";
    so.secret = "fuzz";
    so.checkpoint_dir = dir + "/tables";
    server = std::make_unique<tessera::Server>(so, context);
    if (!server->Start().ok()) std::abort();
    peer.connect("inproc://fuzz-checkpoint-server");
  }
  ~Harness() { fs::remove_all(dir); }

  // The shard restores `content` as its tables file, then handles `messages`.
  void RestoreTables(const std::string& content, const std::vector<std::string>& messages) {
    WriteFile(dir + "/tables/" + kCheckpoint + "/tables-s0.bin", content);
    OutgoingMessage restore(0, 1);
    auto r = restore.envelope().getBody().initRestoreTables();
    r.setSecret(tessera::SecretProof("fuzz"));
    r.setCheckpoint(kCheckpoint);
    auto f = r.initFiles(1)[0];
    f.setName("tables-s0.bin");
    f.setBytes(content.size());
    f.setCrc32(tessera::Crc32(Span(content)));
    std::vector<std::string> frames = {tessera::fuzz::Encode(restore)};
    frames.insert(frames.end(), messages.begin(), messages.end());
    OutgoingMessage sentinel(999, kSentinelId);  // from an unregistered worker: always refused
    sentinel.envelope().getBody().initClock().setClock(0);
    tessera::fuzz::SendAndSync(peer, frames, sentinel, kSentinelId);
  }

  // A checkpoint directory with `manifest` and `data` as a1-w0.bin: found, and every file its
  // manifest lists read.
  void ReadCheckpoint(const std::string& manifest, const std::string& data) const {
    const std::string root = dir + "/run";
    fs::remove_all(root);
    fs::create_directories(root + "/" + kCheckpoint);
    WriteFile(root + "/" + kCheckpoint + "/MANIFEST", manifest);
    WriteFile(root + "/" + kCheckpoint + "/a1-w0.bin", data);
    std::vector<std::string> notes;
    auto found = ckpt::FindLatest(root, &notes);
    if (!found.ok() || !found->has_value()) return;
    std::string bytes;
    for (const ckpt::ArrayRecord& a : (*found)->manifest.arrays) {
      for (const ckpt::FileRecord& f : a.files) (void)ckpt::ReadDataFile((*found)->path, f, &bytes);
    }
  }

  std::string dir;
  zmq::context_t context;
  std::unique_ptr<tessera::Coordinator> coordinator;
  std::unique_ptr<tessera::Server> server;
  zmq::socket_t peer{context, zmq::socket_type::dealer};
};

// A tables file as a shard writes it: a dense table "t" (float, 100 x 4) and a sparse one "s".
std::string TablesFileSeed() {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<proto::SavedTables>();
  root.setServer(0);
  root.setNumServers(1);
  auto tables = root.initTables(2);
  tessera::TableSpec dense;
  dense.id = 1;
  dense.name = "t";
  dense.value_type = tessera::ValueType::kFloat32;
  dense.num_rows = 100;
  dense.width = 4;
  tessera::TableSpec sparse = dense;
  sparse.id = 2;
  sparse.name = "s";
  sparse.value_type = tessera::ValueType::kInt32;
  sparse.width = 50;
  sparse.sparse = true;
  unsigned t = 0;
  for (const tessera::TableSpec& spec : {dense, sparse}) {
    tessera::TableSpecToProto(spec, tables[t].initSpec());
    auto rows = tables[t].initRows(2);
    for (unsigned i = 0; i < 2; ++i) {
      rows[i].setTable(spec.id);
      rows[i].setRow(3 + 4 * i);
      tessera::RowValues::Zero(spec).ToProto(rows[i].initValues());
    }
    ++t;
  }
  const kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  return std::string(words.asChars().begin(), words.asChars().size());
}

std::string CreateTable(uint32_t id, const char* name, proto::ValueType type, uint32_t width,
                        bool sparse) {
  OutgoingMessage msg(0, 1);
  auto t = msg.envelope().getBody().initCreateTable();
  t.setId(id);
  t.setName(name);
  t.setValueType(type);
  t.setNumRows(100);
  t.setWidth(width);
  t.setSparse(sparse);
  return tessera::fuzz::Encode(msg);
}

std::vector<std::vector<std::string>> Seeds() {
  const std::string data(24, '\x11');
  ckpt::Manifest m;
  m.loop = 1;
  m.workers = 1;
  m.sites = {"apps/mf/mf.cc:118"};
  m.site_of_loop = {0};
  m.accumulators = {{"ab"}};
  m.arrays.push_back({.id = 1,
                      .element_bytes = 4,
                      .count = 6,
                      .rows = 2,
                      .files = {{.name = "a1-w0.bin",
                                 .bytes = data.size(),
                                 .crc32 = tessera::Crc32(Span(data)),
                                 .ranges = {0, 6}}}});
  return {{"\x00", TablesFileSeed(), CreateTable(1, "t", proto::ValueType::FLOAT32, 4, false),
           CreateTable(2, "s", proto::ValueType::INT32, 50, true)},
          {"\x00", "garbage"},
          {"\x01", ckpt::EncodeManifest(m), data},
          {"\x01", ckpt::EncodeManifest(m), "short"}};
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tessera::fuzz::MaybeWriteSeeds(Seeds());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Harness* harness = new Harness();  // lives as long as the fuzzing process
  const std::vector<std::string> frames = tessera::fuzz::SplitFrames(data, size);
  if (frames.size() < 2 || frames[0].empty()) return 0;
  if (static_cast<unsigned char>(frames[0][0]) % 2 == 0) {
    harness->RestoreTables(frames[1], std::vector<std::string>(frames.begin() + 2, frames.end()));
  } else {
    harness->ReadCheckpoint(frames[1], frames.size() > 2 ? frames[2] : std::string());
  }
  return 0;
}
