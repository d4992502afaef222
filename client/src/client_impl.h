// Client::Impl: the coordinator of a client's parts. It owns them and runs the flows that cross
// them; each flow lives in the file of its concern:
//   client.cc          joining the job, tables, clocks, barriers, leaving, calls, dispatch
//   cached_reads.cc    reads through the cache (Get, GetRows, Prefetch), requests, eviction
//   uncached_reads.cc  reads past the cache (StartUncachedRead, WaitUncachedRead)
//   updates.cc         the update log: Inc*, coalescing, flushes, flow control, early sends
//   replies.cc         server replies and pushes into the cache (subscriptions, read-my-writes)
// The parts: the row cache (row_cache.h) and tables by stripes (client_table.h), eviction
// (eviction.h), the update log (update_log.h), server channels (server_channel.h), managed
// communication (comm_scheduler.h), the sockets (sockets.h), the receive role and the I/O thread
// (receive_role.h), and the statistics (client_counters.h).
//
// Lock order: the receive role, uncached_mu_ and clock_mu_ first; then a stripe's mutex; then a
// server channel's mutexes or calls_mu_. socket_mu_ (ClientSockets) is taken last and alone.
#ifndef TESSERA_CLIENT_SRC_CLIENT_IMPL_H_
#define TESSERA_CLIENT_SRC_CLIENT_IMPL_H_

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "client_counters.h"
#include "client_table.h"
#include "comm_scheduler.h"
#include "receive_role.h"
#include "server_channel.h"
#include "sockets.h"
#include "tessera/client/client.h"
#include "tessera/transport/liveness.h"
#include "tessera/transport/message.h"
#include "tessera/transport/waker.h"

namespace tessera {
namespace client_internal {

// Request ids of uncached reads (StartUncachedRead) carry this bit: their replies go to the
// reader's buffer and never into the cache, also after the read was abandoned.
constexpr uint64_t kUncachedRequestBit = uint64_t{1} << 63;
// Spare nodes of answered read requests kept for reuse (Client::Impl::spare_get_nodes_): more
// than the requests a few readers keep in flight.
constexpr size_t kMaxSpareGetNodes = 64;

// A batched read's per-call lists (Prefetch, ReadRows), kept per thread index so that a thread
// streaming batches allocates none of them per call (see Client::Impl::ScratchOf).
struct ReadScratch {
  std::vector<std::vector<RowId>> per_server;  // rows to request, by server
  std::vector<size_t> asked;                   // Prefetch: how many of per_server[s] are filled
  std::vector<Stripe*> over;                   // stripes left over their share (see NoteIfOver)
  std::vector<size_t> missing;                 // ReadRows: rows the cache could not answer
  std::vector<bool> missing_was_valid;         // ... and whether each had a stale copy
};

// An uncached read (StartUncachedRead): where its rows go, and how many requests are unanswered.
struct UncachedRead {
  ClientTable* table;
  std::byte* out;
  size_t row_bytes;
  int64_t clock;  // the reading thread's clock, for the staleness statistics
  int outstanding = 0;
  bool waited = false;  // a thread waits for it (or did)
  Status status;        // the first error of any of its requests
  std::vector<uint64_t> requests;
};

// One server's part of an uncached read: the rows asked, in the order of the request and so of
// the reply's block, and where each goes (row j at out + positions[j] * row_bytes).
struct UncachedRequest {
  uint64_t ticket;
  uint32_t server;
  std::vector<RowId> rows;
  std::vector<size_t> positions;
};

// A call (CallAll) waiting for its replies.
struct PendingCall {
  int outstanding = 0;
  Status status;
};

}  // namespace client_internal

class Client::Impl final : public client_internal::IoHandler {
 public:
  Impl(ClientOptions options, zmq::context_t& context);
  ~Impl();

  Status Start();
  Status CreateTable(const TableSpec& spec);
  const TableSpec* FindTableSpec(TableId id) const;

  // Cached reads (cached_reads.cc). Read hands the cached value to `copy_out` under the lock.
  template <typename CopyOut>
  Status Read(int thread, TableId id, ValueType type, bool sparse, RowId row, CopyOut copy_out);
  Status Prefetch(int thread, TableId id, std::span<const RowId> rows);
  template <typename T>
  Status ReadRows(int thread, TableId id, std::span<const RowId> rows, T* out);

  // Uncached reads (uncached_reads.cc).
  template <typename T>
  Result<ReadTicket> StartUncachedRead(int thread, TableId id, std::span<const RowId> rows, T* out);
  Status WaitUncachedRead(ReadTicket ticket);

  // Updates (updates.cc). `check(spec)` validates the update against the table; `apply(value)`
  // adds it; `importance(base)` is its sum |delta / value| against the cached value (`base`, null
  // when not cached), evaluated only under kRelativeMagnitude.
  template <typename Check, typename Apply, typename Importance>
  Status Update(TableId id, ValueType type, RowId row, Check check, Apply apply,
                Importance importance);
  template <typename T>
  Status UpdateRows(TableId id, std::span<const RowId> rows, std::span<const T> deltas);

  Status Clock(int thread);
  int64_t clock(int thread) const { return thread_clocks_[thread].load(); }
  Status Barrier();
  Status Leave();
  void Abandon();
  ClientStats stats() const {
    return counters_.Stats(replies_held_.load(std::memory_order_relaxed));
  }

  // IoHandler.
  void Handle(int source, zmq::message_t frame) override;
  void SendEarly() override;

 private:
  using BlockCursor = client_internal::BlockCursor;
  using CacheEntry = client_internal::CacheEntry;
  using ClientTable = client_internal::ClientTable;
  using InflightBatch = client_internal::InflightBatch;
  using OpLog = client_internal::OpLog;
  using PendingCall = client_internal::PendingCall;
  using PendingRow = client_internal::PendingRow;
  using ReadScratch = client_internal::ReadScratch;
  using RowKey = client_internal::RowKey;
  using ServerChannel = client_internal::ServerChannel;
  using SharedReply = client_internal::SharedReply;
  using Stripe = client_internal::Stripe;
  using StripeRunLock = client_internal::StripeRunLock;
  using UncachedRead = client_internal::UncachedRead;
  using UncachedRequest = client_internal::UncachedRequest;
  using Counter = client_internal::Counter;
  static constexpr int kCoordinator = client_internal::kCoordinator;

  // Tables and checks (client.cc).
  // The table, or null. Tables are never removed while the client lives, so the ids below
  // kFastTables are read without a lock (a shared lock is a write to a shared cache line, and
  // every read and update asks).
  ClientTable* FindClientTable(TableId id) const {
    if (id < kFastTables) return fast_tables_[id].load(std::memory_order_acquire);
    std::shared_lock lock(tables_mu_);
    auto it = tables_.find(id);
    return it == tables_.end() ? nullptr : it->second.get();
  }
  Result<ClientTable*> Table(TableId id, ValueType type);
  std::vector<ClientTable*> AllTables() const;
  Status CheckRow(const ClientTable& t, RowId row) const;
  // CheckRow of each row; a Status is made only for a bad one (a batch of good rows costs a
  // comparison per row, not a Status made and dropped).
  Status CheckRows(const ClientTable& t, std::span<const RowId> rows) const {
    for (RowId row : rows) {
      if (row >= t.spec.num_rows) [[unlikely]]
        return CheckRow(t, row);
    }
    return Status::Ok();
  }
  // The calls that talk to the job need the servers Start found: before it there are no
  // sockets to send on (and no tables, so reads and updates fail with NotFound).
  Status CheckStarted(const char* call) const;
  Status CheckThread(int thread) const;
  int64_t NeededClock(int thread, const ClientTable& t) const {
    return thread_clocks_[thread].load(std::memory_order_relaxed) -
           static_cast<int64_t>(t.spec.staleness);
  }
  // The clock a cached row is current for: its own stamp, or its server's pushes' if subscribed.
  int64_t EffectiveStamp(const CacheEntry& e, uint32_t server) const {
    if (!e.subscribed) return e.stamp;
    return std::max(e.stamp, channels_[server]->seen_clock.load(std::memory_order_acquire));
  }

  // Errors that reach the caller at its next Clock or Barrier (client.cc).
  void SetAsyncError(Status status);
  Status TakeAsyncError();
  // Sends each message as a request and waits for every reply. REQUIRES: messages have
  // request id 0 (a fresh one is assigned).
  Status CallAll(std::vector<std::pair<int, OutgoingMessage*>>& msgs, const std::string& what);
  void CompleteCall(uint64_t id, const Status& status);
  void OnError(int source, uint64_t id, Status status);
  // The I/O thread sends what is still queued, then exits.
  void StopIo();
  void Enqueue(int target, zmq::message_t frame) { sockets_.Send(target, std::move(frame)); }

  // Cached reads and eviction (cached_reads.cc).
  ReadScratch& ScratchOf(int thread);
  void SendGet(uint32_t server, TableId table, std::span<const RowId> rows, int64_t min_clock);
  zmq::message_t GetFrame(uint64_t id, TableId table, std::span<const RowId> rows,
                          int64_t min_clock, bool subscribe, const std::vector<RowId>* forget);
  // A get request must not overtake an update batch that a flush in progress is building: the
  // flush may have taken a delta of one of its rows out of the update log before the row had a
  // cache entry (or an uncached read in flight), so that it kept no in-flight copy, and the reply
  // would then miss the process's own write. So while a flush is under way, a request waits for
  // it to queue its batches. A flush that starts later sees the row's entry (under the stripe
  // lock) or uncached_in_flight_ (seq_cst on both sides: the flag, then the count in the flush;
  // the count, then the flag here) and keeps the delta. REQUIRES: no stripe lock held (the flush
  // takes them).
  void WaitForFlushInProgress() {
    if (flushing_.load(std::memory_order_seq_cst)) std::lock_guard wait(clock_mu_);
  }
  void EvictIfOver(ClientTable& table, Stripe& stripe);
  void EvictIfOver(ClientTable& table, const std::vector<Stripe*>& stripes);
  void MakeRoom(ClientTable& table, Stripe& stripe, std::span<const RowId> rows,
                BlockCursor& cursor);
  void Evict(ClientTable& table, Stripe& stripe, size_t target);
  void SendForgetLocked(uint32_t s);

  // Uncached reads (uncached_reads.cc).
  void OnUncachedRows(int server, uint64_t id, proto::RowBatch::Reader batch);
  template <typename Fill>
  void FinishUncachedRequest(uint64_t id, Fill fill);
  // Ends request `id` of an uncached read with an error reply.
  void FailUncachedRequest(uint64_t id, const Status& status);
  Status FillUncached(int server, proto::RowBatch::Reader batch, const UncachedRequest& req,
                      const UncachedRead& read);

  // The update log (updates.cc).
  template <typename Apply, typename Importance>
  void UpdateLocked(ClientTable& table, Stripe& stripe, RowId row, Apply apply,
                    Importance importance);
  void FlushLocked(int64_t clock = -1);
  void SendPending(const std::vector<std::pair<ClientTable*, RowId>>* chosen, int64_t clock);
  void ErasePending(Stripe& stripe, OpLog::iterator it);

  // Replies and pushes (replies.cc).
  void OnRows(int server, uint64_t id, proto::RowBatch::Reader batch,
              std::unique_ptr<IncomingMessage>& message);
  void AdvanceSeenClock(ServerChannel& ch, int64_t clock);

  ClientOptions options_;
  zmq::context_t& context_;
  std::shared_ptr<spdlog::logger> log_;
  client_internal::ClientCounters counters_;
  Waker waker_;  // the I/O thread's: queued sends, pending updates, the receive role
  client_internal::CommScheduler comm_;
  client_internal::ClientSockets sockets_;
  client_internal::ReceiveRole role_;
  std::vector<std::unique_ptr<ServerChannel>> channels_;
  uint32_t num_workers_ = 0;

  // Replies that cache entries borrow rows of (ClientStats::replies_held). Declared before the
  // tables: the entries let go of their replies when the tables are destroyed.
  std::atomic<uint64_t> replies_held_{0};
  mutable std::shared_mutex tables_mu_;
  std::unordered_map<TableId, std::unique_ptr<ClientTable>> tables_;
  static constexpr TableId kFastTables = 64;
  std::array<std::atomic<ClientTable*>, kFastTables> fast_tables_{};  // tables_[id] for small ids

  std::unique_ptr<std::atomic<int64_t>[]> thread_clocks_;
  std::vector<ReadScratch> read_scratch_;
  std::mutex clock_mu_;                // serializes flushes and clock messages
  std::atomic<bool> flushing_{false};  // SendPending is under way (under clock_mu_)
  int64_t process_clock_ = 0;
  uint64_t barriers_ = 0;

  std::vector<Stripe*> received_touched_;  // OnRows: stripes a batch filled (the receive role's)
  std::atomic<bool> stop_io_{false};
  std::thread io_thread_;
  std::atomic<uint64_t> next_request_id_{1};
  std::atomic<bool> started_{false};  // Start made the sockets and the I/O thread
  std::atomic<bool> left_{false};
  std::unique_ptr<LivenessAgent> liveness_;  // null without heartbeats

  std::mutex calls_mu_;
  std::condition_variable calls_cv_;
  std::unordered_map<uint64_t, PendingCall> calls_;
  // Requests of rows for the cache not answered yet: their table and rows, for an error reply.
  using PendingGets = std::unordered_map<uint64_t, std::pair<TableId, std::vector<RowId>>>;
  PendingGets pending_gets_;
  // Nodes of answered requests, reused by the next ones: a reader streaming batches then
  // allocates nothing per request. At most kMaxSpareGetNodes.
  std::vector<PendingGets::node_type> spare_get_nodes_;
  Status async_error_;
  std::atomic<bool> async_failed_{false};  // async_error_ was set (sticky; read without calls_mu_)

  // Uncached reads. uncached_mu_ is taken before stripe and channel locks, never while holding
  // one.
  std::mutex uncached_mu_;
  std::condition_variable uncached_cv_;
  std::unordered_map<uint64_t, std::unique_ptr<UncachedRead>> uncached_reads_;  // by ticket
  std::unordered_map<uint64_t, UncachedRequest> uncached_requests_;             // by request id
  // Requests of uncached reads not answered yet: while there are any, flushes keep every delta
  // in flight (see SendPending).
  std::atomic<int64_t> uncached_in_flight_{0};

  // Buffers of large update batches, built by the flushing thread and freed by ZeroMQ's I/O
  // thread once sent: pooled, so that glibc does not trim the heap after the frees and fault
  // pages in again for the next batches.
  std::shared_ptr<FramePool> frame_pool_ = FramePool::Create(size_t{16} << 20);
};

}  // namespace tessera

#endif  // TESSERA_CLIENT_SRC_CLIENT_IMPL_H_
