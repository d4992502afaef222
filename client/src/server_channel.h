// What a client keeps per server: the update batches the server may not have applied yet (for
// read-my-writes and flow control), the clock its pushes vouch for, and the evicted rows it must
// be told to stop pushing.
//
// Contract: a row arriving from the server is corrected by the deltas of `inflight` batches it
// does not include yet; a batch leaves `inflight` when a message from the server says it was
// applied (Applied). At most kMaxUnackedBatches batches are unacknowledged at a clock boundary
// (the flush waits on `acked`). Evicted rows are unsubscribed in order with later requests of
// them: `forget` is taken and its message queued under `forget_mu`. Lock order: a stripe's
// mutex, then `mu` or `forget_mu`, never the other way round.
#ifndef TESSERA_CLIENT_SRC_SERVER_CHANNEL_H_
#define TESSERA_CLIENT_SRC_SERVER_CHANNEL_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>
#include <zmq.hpp>

#include "tessera/table/row_values.h"
#include "tessera/table/table_spec.h"

namespace tessera::client_internal {

// Evicted rows a server may still push before the client tells it (in one message) to stop.
constexpr size_t kMaxForgetRows = 4096;
// Flow control: update batches a client may have sent to a server and not seen applied; a
// clock boundary that would exceed it waits for the server. Every kAckEvery-th batch asks for an
// acknowledgement. 32 batches of 64 128-float rows are 1 MiB: enough to keep a server busy,
// little enough that a fast writer reuses its buffers instead of queueing all it writes.
constexpr uint64_t kMaxUnackedBatches = 32;
constexpr uint64_t kAckEvery = 8;

struct RowKey {
  TableId table;
  RowId row;
  bool operator==(const RowKey&) const = default;
};
struct RowKeyHash {
  size_t operator()(const RowKey& k) const {
    return std::hash<uint64_t>()(k.row * 0x9e3779b97f4a7c15ULL ^ k.table);
  }
};

// Updates sent to a server that it may not have applied yet. Kept so that a row arriving from
// the server can be corrected by what it does not include yet (read-my-writes).
struct InflightBatch {
  uint64_t seq;
  std::unordered_map<RowKey, RowValues, RowKeyHash> deltas;
};

struct ServerChannel {
  std::string endpoint;
  std::atomic<int64_t> seen_clock{std::numeric_limits<int64_t>::min()};
  // Guards inflight, next_seq and acked_seq; taken after a stripe's lock, never before.
  std::mutex mu;
  std::deque<InflightBatch> inflight;
  uint64_t next_seq = 0;
  uint64_t acked_seq = 0;         // the server has applied our batches up to this one
  std::condition_variable acked;  // acked_seq advanced (or an error came)
  // Row deltas held by `inflight`. Added to under the row's stripe lock, so a reader of a row
  // that holds its stripe lock and sees 0 knows no in-flight batch has a delta for it, and need
  // not take `mu` (pure reads, the common case, never do).
  std::atomic<size_t> inflight_deltas{0};
  // Rows evicted from the cache that this server still pushes to us, per table, not yet
  // unsubscribed. They ride on the next GetRequest of the table to this server (or go alone at a
  // clock, or when many). Guarded by forget_mu, held until the message carrying them is queued,
  // so a later request of one of them cannot overtake its unsubscription. Taken after a stripe's
  // lock, never before.
  std::mutex forget_mu;
  std::unordered_map<TableId, std::vector<RowId>> forget;
  size_t forget_rows = 0;
};

// The server has applied our update batches up to `applied`: their in-flight records go, and a
// flush waiting for room may go on.
void ApplyAck(ServerChannel& ch, uint64_t applied);

// One Unsubscribe message per table of `ch.forget` (from worker `rank`), which it empties.
// REQUIRES: ch.forget_mu, held until the messages are queued.
std::vector<zmq::message_t> TakeForgetFramesLocked(ServerChannel& ch, uint32_t rank);

}  // namespace tessera::client_internal

#endif  // TESSERA_CLIENT_SRC_SERVER_CHANNEL_H_
