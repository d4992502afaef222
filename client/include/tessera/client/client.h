// Client: a worker process's connection to the parameter server.
//
// One Client per worker process, shared by its threads. It keeps a process cache of the rows
// the process has read, an update log that coalesces increments per row until they are sent,
// and applies the process's own increments to what it reads (read-my-writes).
//
// Consistency (SSP). Each of the process's `num_threads` threads has a clock, advanced by
// Clock(). A thread at clock c reading a table with staleness s sees every update issued before
// clock c - s by every worker (and possibly newer ones); otherwise the read waits. The process
// sends its coalesced updates, then its clock, when its slowest thread clocks. Rows the process
// has read are pushed to it by the servers as they change, so a re-read costs no round trip.
//
// Thread safety: every method may be called concurrently, except that each thread index
// (0 .. num_threads-1) must be used by one thread at a time.
#ifndef TESSERA_CLIENT_CLIENT_H_
#define TESSERA_CLIENT_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "tessera/common/status.h"
#include "tessera/table/table_spec.h"
#include "tessera/transport/comm_budget.h"

namespace tessera {

struct ClientOptions {
  // This worker's rank, 0 .. num_workers-1. Default: 0.
  int rank = 0;
  // The coordinator's endpoint. REQUIRES: not empty.
  std::string coordinator;
  // The job secret: authenticates every tcp/ipc connection (CURVE, tessera/transport/security.h)
  // and registrations (SecretProof). Default: empty, unauthenticated.
  std::string secret;
  // Threads of this process that call Clock(). Default: 1.
  int num_threads = 1;
  // How long to wait for a peer before failing with Unavailable: for membership, table creation,
  // a read the SSP bound holds back, or a barrier. Default: 10 minutes, since a read legitimately
  // waits for the slowest worker's clock.
  std::chrono::milliseconds timeout{600000};
  // Managed communication: whether and how pending updates go out between clock boundaries,
  // and the bandwidth budget. Default: off (updates go out at clock boundaries only).
  CommOptions comm;
  // The process cache's capacity, in rows of each table; 0 = no limit. Default: 0 (every row
  // read stays cached, as an SSP cache that rows never leave). With a limit, reading a new row
  // into a full cache first drops rows read least recently (a CLOCK sweep; rows a read waits
  // for are kept), and the servers stop pushing the dropped rows. A limit bounds the memory of
  // a worker that reads more of a table than it revisits, and lets a stream of new rows reuse
  // the storage of dropped ones instead of faulting in fresh memory.
  uint64_t cache_rows = 0;
  // Heartbeats to the coordinator from a thread of their own (tessera/transport/liveness.h);
  // 0 = none. Default: 0 (a launched worker's comes from TESSERA_HEARTBEAT_TIMEOUT).
  std::chrono::milliseconds heartbeat_timeout{0};
};

// Counters for tests and monitoring.
struct ClientStats {
  uint64_t get_requests = 0;   // rows requested from servers
  uint64_t cache_hits = 0;     // reads served from the process cache without a request
  uint64_t cold_misses = 0;    // reads of rows not cached yet: one round trip
  uint64_t stale_waits = 0;    // reads of cached rows that waited for the SSP bound
  uint64_t blocked_reads = 0;  // reads waiting right now (a gauge, not a counter)
  uint64_t rows_received = 0;  // rows in replies and pushes
  uint64_t evictions = 0;      // rows dropped from the cache to respect `cache_rows`
  // Replies kept because cached rows point into them instead of holding a copy (rows read at
  // most once since they came; a gauge, not a counter).
  uint64_t replies_held = 0;
  uint64_t uncached_rows = 0;  // rows read by StartUncachedRead (not in the counts above)
  // Flow control: clock boundaries that waited for a server to apply earlier update batches
  // (at most 32 may be unacknowledged per server), and the most that ever were.
  uint64_t flow_control_waits = 0;
  uint64_t unacked_batches_max = 0;
  uint64_t pushes = 0;  // push messages received
  uint64_t update_rows_sent = 0;
  uint64_t bytes_sent = 0;
  uint64_t messages_sent = 0;
  uint64_t early_bytes_sent = 0;     // update batches sent early from spare budget
  uint64_t boundary_bytes_sent = 0;  // update batches sent at clock boundaries, barriers, leave
  uint64_t early_rows_sent = 0;
  // Observed staleness: for each read at clock c answered by a row current as of clock t,
  // max(0, c - t). The staleness a read may have is the table's bound plus one.
  uint64_t reads = 0;
  uint64_t staleness_sum = 0;
  uint64_t staleness_max = 0;
};

// An uncached read in progress (Client::StartUncachedRead), to be waited for once.
struct ReadTicket {
  uint64_t id = 0;
};

class Client {
 public:
  // `context` must outlive the client.
  Client(ClientOptions options, zmq::context_t& context);
  // Calls Leave() if the client is still in the job.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Registers with the coordinator, learns the servers and connects to them. Before Start,
  // CreateTable, Clock and Barrier return FailedPrecondition, and reads and updates find no
  // table (NotFound).
  Status Start();

  // Creates the table on every server, or checks that it exists with this spec. Every worker
  // may (and in SPMD programs does) create the same table.
  Status CreateTable(const TableSpec& spec);
  const TableSpec* FindTable(TableId id) const;

  // Reads dense row `row` into `out` (resized to the width) as seen by thread `thread`.
  // REQUIRES: T is the table's value type.
  template <typename T>
  Status Get(int thread, TableId table, RowId row, std::vector<T>* out);
  // Reads dense rows `rows` into `out` (row i at out[i * width]), each as Get would, but asking
  // the servers for all the rows the cache cannot answer at once (one message per server) and
  // paying the per-row costs of Get (a lock, the checks, the statistics) once per batch.
  // REQUIRES: T is the table's value type; out.size() == rows.size() * width.
  template <typename T>
  Status GetRows(int thread, TableId table, std::span<const RowId> rows, std::span<T> out);
  // Reads a sparse row: (column, value) pairs sorted by column.
  template <typename T>
  Status GetSparse(int thread, TableId table, RowId row, std::vector<std::pair<uint32_t, T>>* out);
  // Requests every row of `rows` that the SSP bound does not let the cache answer, in one
  // message per server, without waiting; a later Get of those rows waits for the replies.
  Status Prefetch(int thread, TableId table, std::span<const RowId> rows);

  // Uncached reads, for rows a process reads once (loading, evaluating or saving a model):
  // StartUncachedRead asks the servers for dense rows `rows` (one message per server) and
  // returns without waiting; each reply is written straight into `out` (row i at
  // out[i * width]) by whichever thread receives it; WaitUncachedRead returns once all have
  // come. The rows do not enter the process cache (none is evicted for them, and cached copies
  // are neither used nor refreshed) and the servers do not push them later, so a row costs one
  // copy and no bookkeeping on either side. The SSP bound and read-my-writes hold as for
  // GetRows: thread `thread`'s clock sets the bound, and the process's own updates not yet
  // applied by a server when its reply arrives are added to the rows.
  // REQUIRES: T is the table's value type; out.size() == rows.size() * width; `out` stays
  // valid, and is neither read nor written by the caller, until WaitUncachedRead(ticket)
  // returns.
  template <typename T>
  Result<ReadTicket> StartUncachedRead(int thread, TableId table, std::span<const RowId> rows,
                                       std::span<T> out);
  // Waits for a read started by StartUncachedRead (any thread may wait, once per ticket).
  // After `timeout` with replies missing it returns Unavailable and abandons the read: replies
  // that come later are dropped, and `out` is no longer written. An unknown ticket, or one
  // waited for already, is InvalidArgument.
  Status WaitUncachedRead(ReadTicket ticket);

  // Adds `delta` to one cell. REQUIRES: T is the table's value type.
  template <typename T>
  Status Inc(TableId table, RowId row, uint32_t column, T delta);
  // Adds a whole dense row (`delta.size()` == width).
  template <typename T>
  Status IncRow(TableId table, RowId row, std::span<const T> delta);
  // Adds whole dense rows: deltas[i * width, (i + 1) * width) to rows[i], as IncRow of each
  // would, with the per-call costs (the checks, a stripe lock) paid per call or per run of rows
  // in one stripe. All or nothing: a bad row or size refuses the call before anything is added.
  // REQUIRES: T is the table's value type; deltas.size() == rows.size() * width.
  template <typename T>
  Status IncRows(TableId table, std::span<const RowId> rows, std::span<const T> deltas);

  // Thread `thread` finished its current clock. When the slowest thread of the process
  // advances, the process sends its updates and its clock to every server. Returns an error a
  // server reported for an earlier update batch, if any.
  Status Clock(int thread);
  int64_t clock(int thread) const;

  // Sends pending updates, then blocks until every worker of the job has called Barrier() the
  // same number of times. Call it from one thread of the process.
  Status Barrier();

  // Sends pending updates and tells the servers and the coordinator this worker is done. Returns
  // once each of them has acknowledged (or after `timeout`: Unavailable), so everything the
  // worker sent has been applied and the process may exit. Idempotent.
  Status Leave();

  // This process failed and will not go on with the job (e.g. it could not join its peers):
  // stops the heartbeats without leaving, so that the coordinator reports the process and fails
  // the job within the heartbeat timeout instead of waiting for it. The destructor then does not
  // Leave(). A Client whose Start() failed abandons by itself when destroyed.
  void Abandon();

  ClientStats stats() const;

  // The template members are defined in client.cc and instantiated for float, double, int32_t
  // and int64_t, the value types a table can have.

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera

#endif  // TESSERA_CLIENT_CLIENT_H_
