// Server::Impl: a server shard's node. One loop thread owns all of its state; the flows are in
// the files of their concern:
//   server.cc          joining the job, the loop, dispatch, registration, tables, rejections
//   server_reads.cc    reads (answered now or parked until the clock allows), subscriptions
//   server_updates.cc  update batches applied to the shard, the workers' vector clock
//   server_push.cc     pushes of changed rows at each clock, and early under a budget
// The parts: a table's shard (shard_table.h) and who reads its rows (row_readers.h).
#ifndef TESSERA_SERVER_SRC_SERVER_IMPL_H_
#define TESSERA_SERVER_SRC_SERVER_IMPL_H_

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>
#include <zmq.hpp>

#include "shard_table.h"
#include "tessera/common/log_throttle.h"
#include "tessera/server/server.h"
#include "tessera/transport/handshake_watch.h"
#include "tessera/transport/liveness.h"
#include "tessera/transport/message.h"
#include "tessera/transport/node_thread.h"

namespace tessera {
namespace server_internal {

// The clock of a worker that left: it holds back nobody's reads.
constexpr int64_t kLeftClock = std::numeric_limits<int64_t>::max();

// Bounds on what the workers' messages make a server keep (docs/security.md);
// a request past one is refused with an error, nothing is allocated for it.
// Tables of a job: a program makes one per shared array, a handful.
constexpr size_t kMaxTables = 4096;
// Reads of one worker waiting for the clock (a worker ahead of the others by more than the
// staleness bound): a read blocks its thread or is a batch (GetRows, Prefetch), so a worker has
// a few per thread and loop; the rows they name are kept until answered (8 bytes each).
constexpr size_t kMaxParkedGets = size_t{1} << 16;
constexpr uint64_t kMaxParkedRows = uint64_t{1} << 26;

// A worker as this server knows it.
struct Peer {
  std::string identity;       // empty until the worker registers here
  bool unreachable = false;   // its connection is gone; logged once, skipped by pushes
  int64_t clock = 0;          // the worker completed clocks < clock
  uint64_t applied_seq = 0;   // its update batches applied here, in order
  uint64_t held_rows = 0;     // rows of this shard it has read (and so is pushed)
  uint64_t at_barrier = 0;    // the barrier it waits at (WaitingAtBarrier), 0 when it does not
  uint64_t last_barrier = 0;  // the latest barrier it said it waits at, also once past it
  size_t parked_gets = 0;     // its reads in parked_
  uint64_t parked_rows = 0;   // the rows they name
};

// A read that waits until the server's clock reaches its bound.
struct ParkedGet {
  uint32_t worker;
  uint64_t request_id;
  TableId table;
  std::vector<RowId> rows;
  int64_t min_clock;
  bool subscribe;            // false: an uncached read (see GetRequest)
  bool sole_thread = false;  // the reader's process has one thread (see WaitingAtBarrier)
};

}  // namespace server_internal

class Server::Impl {
 public:
  Impl(ServerOptions options, zmq::context_t& context);
  ~Impl() { Stop(); }

  Status Start();
  const std::string& endpoint() const { return endpoint_; }
  void WaitUntilDone() { loop_.WaitUntilDone(); }
  void Stop() { loop_.Stop(); }
  ServerStats stats() const {
    std::lock_guard lock(stats_mu_);
    return stats_;
  }

 private:
  using ParkedGet = server_internal::ParkedGet;
  using Peer = server_internal::Peer;
  using ShardTable = server_internal::ShardTable;
  using StoredRow = server_internal::StoredRow;

  template <typename F>
  void CountStat(F f) {
    std::lock_guard lock(stats_mu_);
    f(stats_);
  }

  // The loop and its messages (server.cc).
  void Loop();
  void HandleCoordinator(zmq::message_t frame);
  bool Send(const std::string& identity, OutgoingMessage& msg);
  // A worker whose send queue filled (ServerOptions::send_queue): logs it and starts dropping.
  void Overrun(const std::string& identity);
  // Sends the overrun workers not told yet their Error, where it fits (see ServerOptions).
  void TellOverrun();
  // Whether some overrun peer has not been told yet (overrun_ is empty but for failing jobs).
  bool Untold() const {
    return std::any_of(overrun_.begin(), overrun_.end(),
                       [](const auto& e) { return !e.second.told; });
  }
  // A connection event of the socket (HandshakeWatch): drops are judged once the socket has been
  // read empty, so that a peer's last messages are read before its connection's end.
  void OnConnectionEvent(uint16_t event, uint32_t fd);
  void JudgeDrops();
  void Reject(const std::string& identity, uint64_t request_id, proto::ErrorCode code,
              const std::string& text);
  void Reject(const std::string& identity, uint64_t request_id, const Status& status);
  template <typename Fill>
  void Reject(const std::string& identity, uint64_t request_id, const std::string& logged,
              Fill fill);
  void HandleClient(const std::string& identity, zmq::message_t payload);
  void OnRegister(const std::string& identity, uint64_t request_id, proto::Register::Reader reg);
  void OnCreateTable(const std::string& identity, uint64_t request_id,
                     proto::TableSpec::Reader wire);
  Result<ShardTable*> FindTable(TableId id);

  // Reads and subscriptions (server_reads.cc).
  void OnGet(uint32_t worker, uint64_t request_id, proto::GetRequest::Reader get);
  void OnUnsubscribe(uint32_t worker, uint64_t request_id, proto::Unsubscribe::Reader msg);
  Status CheckRows(const ShardTable& t, capnp::List<uint64_t>::Reader rows) const;
  Status CheckReplySize(const ShardTable& t, capnp::List<uint64_t>::Reader rows) const;
  Status CheckParkingSpace(const Peer& peer, size_t rows) const;
  void Unsubscribe(uint32_t worker, ShardTable& t, capnp::List<uint64_t>::Reader rows);
  void Answer(const ParkedGet& req);
  // Reads that can never be answered: their single-threaded reader waits for the clock of a
  // worker that waits at a barrier (WaitingAtBarrier). Fails them, naming both; true if `req`
  // is one (it is then answered with the error, not parked).
  bool FailIfDeadlocked(const ParkedGet& req);
  void FailDeadlockedReads();

  // Updates and clocks (server_updates.cc).
  bool OnUpdate(uint32_t worker, proto::UpdateBatch::Reader batch);
  void OnClock(uint32_t worker, int64_t clock);

  // Checkpoints of tables (server_checkpoint.cc).
  Result<std::string> CheckpointDirectory(const std::string& checkpoint) const;
  void OnSaveTables(const std::string& identity, uint64_t request_id,
                    proto::SaveTables::Reader save);
  void OnRestoreTables(const std::string& identity, uint64_t request_id,
                       proto::RestoreTables::Reader restore);
  Status LoadTablesFile(const std::string& dir, proto::TablesFile::Reader file);
  // Fills a table just created from the restored checkpoint, if it holds one of its name.
  bool FillRestored(ShardTable& t);

  // Pushes (server_push.cc).
  void Push();
  uint64_t SendRows(const std::vector<const StoredRow*>& rows, bool every_peer);
  void PushEarly();
  bool HasChangedRows() const { return changed_rows_ > 0; }

  ServerOptions options_;
  zmq::context_t& context_;
  zmq::socket_t socket_;
  zmq::socket_t coordinator_;
  std::unique_ptr<LivenessAgent> liveness_;  // null without heartbeats
  std::shared_ptr<spdlog::logger> log_;
  std::string endpoint_;
  std::string proof_;          // SecretProof(options_.secret): what a client's Register carries
  HandshakeWatch handshakes_;  // after socket_: stops watching before the socket closes

  // Loop-thread state.
  LogThrottle reject_log_;
  uint32_t num_workers_ = 0;
  uint32_t num_servers_ = 1;
  std::vector<Peer> peers_;
  std::unordered_map<TableId, ShardTable> tables_;
  // A restored checkpoint's tables (every server's rows), by name, until each is created again.
  struct RestoredTable {
    TableSpec spec;
    std::vector<std::pair<RowId, RowValues>> rows;
  };
  std::unordered_map<std::string, RestoredTable> restored_;
  std::vector<StoredRow*> dirty_;  // rows changed since the last clock advance
  size_t changed_rows_ = 0;        // rows of dirty_ changed since last sent
  uint64_t bytes_since_refill_ = 0;
  std::mt19937_64 rng_{0x5e7e5};
  std::vector<ParkedGet> parked_;
  int64_t clock_ = 0;
  bool finished_ = false;
  // Buffers of answers and pushes, reused (see FramePool): frames in flight hold it too.
  std::shared_ptr<FramePool> frame_pool_ = FramePool::Create();
  bool socket_may_have_input_ = true;  // see Loop
  // Peers (by identity) whose send queue filled: messages dropped since, and whether the Error
  // that says so reached their queue.
  struct OverrunState {
    uint64_t dropped = 0;
    bool told = false;
  };
  std::unordered_map<std::string, OverrunState> overrun_;
  // Connections (file descriptors) that delivered a message, with the worker that registered on
  // it (-1: none); drops not judged yet; the connection of the message being handled.
  std::unordered_map<int, int> connections_;
  std::vector<int> drops_;
  int current_fd_ = -1;

  mutable std::mutex stats_mu_;
  ServerStats stats_;

  NodeThread loop_;  // last: stopped (by ~Impl) before the state it uses goes away
};

}  // namespace tessera

#endif  // TESSERA_SERVER_SRC_SERVER_IMPL_H_
