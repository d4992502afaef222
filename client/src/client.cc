#include "tessera/client/client.h"

#include <fmt/format.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <tbb/concurrent_queue.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

#include "tessera/common/logging.h"
#include "tessera/common/prefetch.h"
#include "tessera/table/row_index.h"
#include "tessera/table/row_values.h"
#include "tessera/table/wire.h"
#include "tessera/transport/endpoint.h"
#include "tessera/transport/join.h"
#include "tessera/transport/liveness.h"
#include "tessera/transport/message.h"
#include "tessera/transport/waker.h"

namespace tessera {
namespace {

// Rows are spread over stripes, each with its own lock, so threads touching different rows
// rarely contend.
constexpr size_t kStripes = 64;
// Evicted rows a server may still push before the client tells it (in one message) to stop.
constexpr size_t kMaxForgetRows = 4096;
// Spare nodes of answered read requests kept for reuse (Client::Impl::spare_get_nodes_): more
// than the requests a few readers keep in flight.
constexpr size_t kMaxSpareGetNodes = 64;
// The I/O thread, parked while callers receive, takes the receive role back once this long has
// passed since a caller last received: a push nobody waits for waits at most about this long to
// be applied. Callers let the role go without waking the I/O thread, so one that reads batch
// after batch keeps receiving its replies itself (see AwaitReady); the parked thread sleeps
// until the interval after the latest caller round ends, so while callers keep receiving it
// wakes about once per interval: each wake-up of a thread that finds nothing to do costs the
// other threads of the process CPU (sleeping 2 ms instead of checking every 0.5 ms cut cold
// reads' CPU per row by 7% with one client; 1 ms measured the same as 2 ms). Not longer: pushes
// then wait longer, and data-parallel LDA converged a little slower with 2 ms (bench/README.md
// "Session 8").
constexpr std::chrono::microseconds kParkInterval{1000};
// A caller holding the receive role sleeps in poll at most this long per round.
constexpr std::chrono::milliseconds kMaxReceiveRound{5};
// Flow control: update batches a client may have sent to a server and not seen applied; a
// clock boundary that would exceed it waits for the server. Every kAckEvery-th batch asks for an
// acknowledgement. 32 batches of 64 128-float rows are 1 MiB: enough to keep a server busy,
// little enough that a fast writer reuses its buffers instead of queueing all it writes.
constexpr uint64_t kMaxUnackedBatches = 32;
constexpr uint64_t kAckEvery = 8;
constexpr int kCoordinator = -1;
// Request ids of uncached reads (StartUncachedRead) carry this bit: their replies go to the
// reader's buffer and never into the cache, also after the read was abandoned.
constexpr uint64_t kUncachedRequestBit = uint64_t{1} << 63;

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

// A received reply that cache entries point into instead of copying its rows (see
// CacheEntry::borrowed), freed by whoever lets go of it last. Holds are counted atomically: the
// entries pointing into one reply sit in different stripes, under different locks.
class SharedReply {
 public:
  // Starts with `holds` holds. `held` counts the replies alive (ClientStats::replies_held) and
  // must outlive every hold.
  SharedReply(std::unique_ptr<IncomingMessage> message, uint32_t holds, std::atomic<uint64_t>& held)
      : holds_(holds), held_(held), message_(std::move(message)) {
    held_.fetch_add(1, std::memory_order_relaxed);
  }
  SharedReply(const SharedReply&) = delete;
  SharedReply& operator=(const SharedReply&) = delete;

  // Lets go of `n` holds; the last frees the reply.
  void Release(uint32_t n = 1) {
    if (holds_.fetch_sub(n, std::memory_order_acq_rel) == n) {
      held_.fetch_sub(1, std::memory_order_relaxed);
      delete this;
    }
  }

 private:
  ~SharedReply() = default;
  std::atomic<uint32_t> holds_;
  std::atomic<uint64_t>& held_;
  std::unique_ptr<IncomingMessage> message_;
};

// Copies `bytes` of a borrowed row's cells (CacheEntry::borrowed) out of the reply they came in.
// A function of its own, so that the TSan stage can tell these reads apart
// (tests/sanitizers/tsan.supp): the reply's bytes were written by its sender and handed over by
// libzmq, whose synchronization ThreadSanitizer cannot see.
[[gnu::noinline]] void CopyFromReply(const std::byte* cells, size_t bytes, void* out) {
  std::memcpy(out, cells, bytes);
}

// A row's entry holds only what eviction, a reply and a read touch (the flags, clocks, the
// borrowed row, whether a request failed): 56 bytes, the rare or large parts (an error's
// message, a copy of the row) behind pointers. A block's mask and its 8 entries (EntryBlock)
// then fill 8 consecutive cache lines, which the CPU fetches ahead as a batch walks them
// (entries with the error and the copy inline took three lines, two of them cold between each
// two hot ones), and a block the CLOCK hand reaches, among the least recently cached and long
// out of the CPU's caches, is 8 lines to prefetch.
struct CacheEntry {
  bool valid = false;
  bool subscribed = false;  // the server pushes changes of this row to us
  // Under a cache capacity, the CLOCK bit: the row earns a second chance when the hand reaches
  // it. Set when the row's first copy arrives, so a row requested ahead of its reader (Prefetch)
  // is not dropped before it is read; cleared by its first read, so a stream of rows each read
  // once is evicted in order without the hand sweeping the whole cache; set again by every later
  // read. And the reads waiting on this entry (they hold a reference to it across waits, so it
  // stays).
  bool referenced = false;
  bool read = false;  // read since it was cached
  uint32_t waiters = 0;
  int64_t stamp = std::numeric_limits<int64_t>::min();  // includes all updates from clocks < stamp
  int64_t requested = std::numeric_limits<int64_t>::min();  // min clock of the newest request
  // A dense row answered by a server and not changed here since is not copied: its cells stay
  // in the reply (`borrowed`, inside `reply`, which the entry holds), and `copy` is unused. A
  // reader streaming rows it reads once then costs one copy per row (into the reader's buffer)
  // instead of two. The row is copied into `copy` (Own) when it is read a second time, or
  // before anything changes it, so only rows read at most once keep a reply alive: under a
  // capacity CLOCK drops those within a sweep, and without one a reply held by a few rows costs
  // at most the room of the rows of it that were copied since.
  const std::byte* borrowed = nullptr;
  SharedReply* reply = nullptr;
  // A failed request for this row, reported to the next reader; null if none.
  std::unique_ptr<Status> error;
  // The row's own copy: server value + own updates not yet reflected there. Made at its first
  // use (value()), and kept by Reset for the next row cached in this entry.
  std::unique_ptr<RowValues> copy;

  CacheEntry() = default;
  CacheEntry(const CacheEntry&) = delete;
  CacheEntry& operator=(const CacheEntry&) = delete;
  ~CacheEntry() { Unborrow(); }

  bool failed() const { return error != nullptr; }
  RowValues& value() {
    if (copy == nullptr) copy = std::make_unique<RowValues>();
    return *copy;
  }

  // Hands over the entry's hold on its reply (null if it has none), without copying the row.
  SharedReply* TakeReply() {
    SharedReply* r = reply;
    reply = nullptr;
    borrowed = nullptr;
    return r;
  }
  // Lets go of the reply without copying the row (it is about to be overwritten or dropped).
  void Unborrow() {
    if (SharedReply* r = TakeReply()) r->Release();
  }
  // Copies a borrowed row into its own copy, letting go of its reply; nothing for a row not
  // borrowed (only dense rows are). `spec`: the row's table.
  void Own(const TableSpec& spec) {
    if (borrowed == nullptr) return;
    value().AssignDense(borrowed, spec);
    Unborrow();
  }
  // Copies the row's cells to `out`. REQUIRES: a valid dense row of type T and `width` cells.
  template <typename T>
  void CopyDenseTo(T* out, size_t width) const {
    if (borrowed != nullptr) {
      CopyFromReply(borrowed, width * sizeof(T), out);
    } else {
      auto cells = copy->dense<T>();
      std::copy(cells.begin(), cells.end(), out);
    }
  }

  // For EntryBlock::Reset: as a new entry, but the copy keeps its storage (and stale cells,
  // which nothing reads until a reply overwrites them: `valid` is false), so the next row cached
  // in this entry writes into memory it already owns.
  void Reset() {
    valid = subscribed = referenced = read = false;
    waiters = 0;
    error.reset();
    stamp = requested = std::numeric_limits<int64_t>::min();
    Unborrow();
  }
};
static_assert(sizeof(CacheEntry) == 56, "a block's mask and 8 entries fill 8 cache lines");

// A row's coalesced updates not sent yet. An entry outlives the flush that sends it (zeroed, not
// pending) until the next one, so a row updated every clock reuses its storage.
struct PendingRow {
  RowValues delta;
  bool pending = false;   // delta holds updates not sent yet
  size_t slot = 0;        // its index in Stripe::pending while pending
  double importance = 0;  // accumulated sum |delta / value|, kept under kRelativeMagnitude
};

// A pending row and its update-log entry (entries stay put until erased from the log).
struct PendingRef {
  RowId row;
  PendingRow* entry;
};

using OpLog = std::unordered_map<RowId, PendingRow>;

// The cache entries of one block of consecutive rows (ClientTable::block_shift): looked up,
// queued for CLOCK and evicted together, so a batch of consecutive rows costs one index probe,
// one CLOCK slot and one erase per block instead of per row. A block holds room for
// kMaxBlockRows entries whatever its table's block size (rows past it stay unused); the price is
// memory where a process caches scattered single rows: up to kMaxBlockRows entries per row cached.
constexpr int kMaxBlockShift = 3;
constexpr size_t kMaxBlockRows = size_t{1} << kMaxBlockShift;
struct alignas(64) EntryBlock {
  // Bit k: the block's k-th row is cached (rows[k] is its entry); the other entries are as
  // CacheEntry::Reset leaves them.
  uint8_t present = 0;
  std::array<CacheEntry, kMaxBlockRows> rows;

  // Calls f(k, rows[k]) for each cached row, in order.
  template <typename F>
  void ForEachPresent(F f) {
    for (uint32_t bits = present; bits != 0; bits &= bits - 1) {
      const auto k = static_cast<size_t>(std::countr_zero(bits));
      f(k, rows[k]);
    }
  }
  // For RowIndex::Erase: each cached row's entry reset (keeping its storage, see CacheEntry).
  void Reset() {
    ForEachPresent([](size_t, CacheEntry& e) { e.Reset(); });
    present = 0;
  }
};

static_assert(sizeof(EntryBlock) == 512, "a block's mask and 8 entries fill 8 cache lines");

// Asks the CPU, for a write soon, for the lines of a block's mask and of its first `rows`
// entries. `b` is only an address here (it may be stale): nothing is read through it.
void PrefetchBlock(const EntryBlock* b, size_t rows) {
  const auto* lines = reinterpret_cast<const std::byte*>(b);
  const size_t end = offsetof(EntryBlock, rows) + rows * sizeof(CacheEntry);
  for (size_t at = 0; at < end; at += 64) __builtin_prefetch(lines + at, 1);
}

// A FIFO of cached blocks in CLOCK order, in one ring of slots that doubles when full: a stripe
// of a streaming reader pushes and pops a block per block read, and a ring does that with a
// store and an index, where a deque also walks its map of blocks.
class ClockQueue {
 public:
  struct Slot {
    uint64_t key;  // the block's (ClientTable::BlockOf)
    EntryBlock* block;
  };
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  // The k-th from the front. REQUIRES: k < size().
  const Slot& at(size_t k) const { return slots_[(head_ + k) & mask_]; }
  const Slot& front() const { return at(0); }
  void pop_front() {
    head_ = (head_ + 1) & mask_;
    --size_;
  }
  void push_back(uint64_t key, EntryBlock* block) {
    if (size_ == slots_.size()) Grow();
    slots_[(head_ + size_) & mask_] = {key, block};
    ++size_;
  }

 private:
  void Grow() {
    std::vector<Slot> bigger(std::max<size_t>(16, 2 * slots_.size()));
    for (size_t k = 0; k < size_; ++k) bigger[k] = at(k);
    slots_ = std::move(bigger);
    mask_ = slots_.size() - 1;
    head_ = 0;
  }
  std::vector<Slot> slots_;  // a power of two of them
  size_t mask_ = 0;
  size_t head_ = 0;
  size_t size_ = 0;
};

struct Stripe {
  std::mutex mu;
  std::condition_variable cv;
  // Blocks of cached rows by index key (ClientTable::IndexKeyOf); entries stay put until their
  // block is evicted, and readers wait on them.
  RowIndex<EntryBlock> cache;
  size_t cached_rows = 0;  // rows present in `cache`'s blocks
  // Under a cache capacity: the cached blocks in CLOCK order (the hand at the front).
  ClockQueue clock_order;
  std::vector<std::pair<uint32_t, RowId>> evicted;  // Evict's scratch: (server, row)
  std::vector<uint64_t> evicted_blocks;             // ... and the keys of the blocks dropped
  OpLog oplog;
  std::vector<PendingRef> pending;  // rows whose oplog entry is pending: flush order, O(1) sampling
  // Log entries idle for a whole clock, taken out of the log with their (zeroed) storage and
  // reused for rows that become pending: a working set that moves from clock to clock costs no
  // allocation per row. At most as many as the last flush sent from this stripe.
  std::vector<OpLog::node_type> spare;
  // How many spare entries to keep: the rows pending at a flush, decaying by 1/16 per flush, so
  // a stripe whose rows come back every few clocks (a batch of consecutive rows moves through the
  // stripes block by block) still finds its entries, while a peak does not pin memory for good.
  size_t spare_target = 0;
  // Under a capacity, where the next eviction here will look first: the CLOCK queue's front and
  // the blocks under the hand. Written by each eviction (under mu), read without the lock by a
  // batched read about to make room here, which prefetches them before it takes any lock: the
  // eviction's own prefetch comes a few batches early, and on a busy machine other processes
  // push those lines out of the CPU's caches again. Only addresses to prefetch: possibly stale,
  // never dereferenced.
  // The front, then at most kVictimHints blocks (null after the last).
  static constexpr size_t kVictimHints = 2;
  std::array<std::atomic<const void*>, 1 + kVictimHints> victim_hints{};
};

struct ClientTable {
  ClientTable(TableSpec s, size_t capacity_per_stripe)
      : spec(std::move(s)),
        stripe_capacity(capacity_per_stripe),
        block_shift(capacity_per_stripe == 0
                        ? kMaxBlockShift
                        : std::min<int>(kMaxBlockShift, std::bit_width(capacity_per_stripe) - 1)) {}
  TableSpec spec;
  size_t stripe_capacity;  // cached rows per stripe; 0 = no limit
  std::array<Stripe, kStripes> stripes;
  // Blocks of 2^block_shift consecutive rows land in different stripes, which spreads threads
  // working on different parts of a table. Within a block rows share a stripe: a batch of
  // consecutive rows then touches a few stripes rather than all of them, its cache entries sit
  // side by side, and the I/O thread filling one batch and a reader going through the previous
  // one rarely want the same lock. Under a capacity a block is at most a stripe's share, so any
  // run of consecutive rows that fits the cache fits its stripes. Not larger than 8 rows: blocks
  // of 32 and 64 (fewer locks per batch) made cold reads slower, not faster (bench/README.md
  // "Session 8"). The cache keeps its entries by the same blocks (EntryBlock).
  int block_shift;
  size_t block_rows() const { return size_t{1} << block_shift; }
  uint64_t BlockOf(RowId row) const { return row >> block_shift; }
  size_t SlotOf(RowId row) const { return row & (block_rows() - 1); }
  RowId FirstRowOf(uint64_t key) const { return key << block_shift; }
  // A block's key in its stripe's index: the blocks of a stripe are every kStripes-th, and
  // numbered densely there, consecutive blocks of a stripe (those of successive batches of a
  // stream) sit in neighbouring index slots (RowIndex::Home) instead of one line apart each.
  static uint64_t IndexKeyOf(uint64_t key) { return key / kStripes; }
  Stripe& StripeOf(RowId row) { return stripes[BlockOf(row) % kStripes]; }
};

// The last block looked up in a stripe, for a loop over rows that come in runs of the same
// block (a batch of consecutive rows), so that a block costs one index probe rather than one
// per row. Valid only while the stripe's lock is held and nothing is evicted from it: Forget
// after taking the lock and after any eviction.
struct BlockCursor {
  uint64_t key = ~uint64_t{0};
  EntryBlock* block = nullptr;  // null: `key` has no block (or nothing remembered)
  void Forget() {
    key = ~uint64_t{0};
    block = nullptr;
  }
};

// A batched read's per-call lists (Prefetch, ReadRows), kept per thread index so that a thread
// streaming batches allocates none of them per call (see Client::Impl::ScratchOf).
struct ReadScratch {
  std::vector<std::vector<RowId>> per_server;  // rows to request, by server
  std::vector<size_t> asked;                   // Prefetch: how many of per_server[s] are filled
  std::vector<Stripe*> over;                   // stripes left over their share (see NoteIfOver)
  std::vector<size_t> missing;                 // ReadRows: rows the cache could not answer
  std::vector<bool> missing_was_valid;         // ... and whether each had a stale copy
};

// Holds one stripe's lock at a time while a caller walks rows that come in runs of the same
// stripe (a batch of consecutive rows): the lock is taken once per run, never two at once.
class StripeRunLock {
 public:
  // Locks `stripe` unless it is the one held (releasing that first); true if it was not held.
  // The check is inlined into the callers' per-row loops, the switch is not.
  bool Hold(Stripe& stripe) {
    if (&stripe == held_) [[likely]]
      return false;
    Switch(stripe);
    return true;
  }
  void Release() {
    if (lock_.owns_lock()) lock_.unlock();
    held_ = nullptr;
  }

 private:
  [[gnu::noinline]] void Switch(Stripe& stripe) {
    Release();
    lock_ = std::unique_lock(stripe.mu);
    held_ = &stripe;
  }

  Stripe* held_ = nullptr;
  std::unique_lock<std::mutex> lock_;
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

struct Outbound {
  int target;  // server index, or kCoordinator
  zmq::message_t frame;
  bool early = false;  // an update batch sent from spare budget
};

// Each counter on its own cache line: the I/O thread and the callers' threads count different
// things at the same time.
struct alignas(64) PaddedCounter {
  std::atomic<uint64_t> value{0};
};

enum Counter {
  kGetRequests,
  kCacheHits,
  kColdMisses,
  kStaleWaits,
  kBlockedReads,
  kRowsReceived,
  kEvictions,
  kUncachedRows,
  kFlowWaits,
  kUnackedMax,
  kPushes,
  kUpdateRowsSent,
  kBytesSent,
  kMessagesSent,
  kEarlyBytes,
  kBoundaryBytes,
  kEarlyRows,
  kReads,
  kStalenessSum,
  kStalenessMax,
  kNumCounters
};

struct PendingCall {
  int outstanding = 0;
  Status status;
};

// The importance of adding `delta` (`width` cells) to a row whose cached value is `base` (null:
// not cached): the sum of |delta / value| over its cells, |delta| where the value is 0.
template <typename T>
double RowImportance(const T* delta, size_t width, const RowValues* base) {
  auto cells = base == nullptr ? std::span<const T>() : base->dense<T>();
  double sum = 0;
  for (size_t i = 0; i < width; ++i) {
    double d = std::abs(static_cast<double>(delta[i]));
    double b = cells.empty() ? 0.0 : std::abs(static_cast<double>(cells[i]));
    sum += b == 0 ? d : d / b;
  }
  return sum;
}

// Writes one update batch: rows of dense tables packed in a DenseRows block per table, rows of
// sparse tables one by one. First every row is counted, so the message is sized (one segment,
// no copy) and each block allocated once; then the rows are written in any order.
class BatchWriter {
 public:
  void Count(const TableSpec& spec, const RowValues& delta) {
    if (spec.sparse) {
      ++sparse_rows_;
      sparse_bytes_ += delta.payload_bytes();
      return;
    }
    ++Block(spec).rows;
  }
  // REQUIRES: every row to be written was counted. `pool` (may be null) provides the buffer.
  void Start(uint32_t rank, uint64_t seq, int64_t clock, bool ack_wanted, FramePool* pool) {
    // Per sparse row a Row struct, a Values struct and list headers, about 8 words; per block
    // its cells, a row id per row, and headers.
    size_t words = sparse_bytes_ / sizeof(capnp::word) + sparse_rows_ * 8 + 16;
    for (const DenseBlockOut& b : blocks_) {
      words += (b.rows * b.row_bytes + 7) / sizeof(capnp::word) + b.rows + 16;
    }
    message_ = std::make_unique<OutgoingMessage>(rank, 0, static_cast<unsigned>(words), pool);
    auto update = message_->envelope().getBody().initUpdate();
    update.setSeq(seq);
    update.setClock(clock);
    update.setAckWanted(ack_wanted);
    if (sparse_rows_ > 0) sparse_ = update.initRows(static_cast<unsigned>(sparse_rows_));
    if (!blocks_.empty()) {
      auto dense = update.initDense(static_cast<unsigned>(blocks_.size()));
      for (unsigned i = 0; i < blocks_.size(); ++i) {
        DenseBlockOut& b = blocks_[i];
        dense[i].setTable(b.spec->id);
        b.ids = dense[i].initRows(static_cast<unsigned>(b.rows));
        b.cells = RowValues::InitDenseBlock(dense[i].initValues(), *b.spec, b.rows);
      }
    }
  }
  void Write(const TableSpec& spec, RowId row, const RowValues& delta) {
    ++written_;
    if (spec.sparse) {
      auto out = sparse_[sparse_filled_++];
      out.setTable(spec.id);
      out.setRow(row);
      delta.ToProto(out.initValues());
      return;
    }
    DenseBlockOut& b = Block(spec);
    b.ids.set(b.filled, row);
    delta.CopyDenseTo(b.cells + b.filled * b.row_bytes);
    ++b.filled;
  }
  size_t written() const { return written_; }
  zmq::message_t Finish() { return message_->ToFrame(); }

 private:
  struct DenseBlockOut {
    const TableSpec* spec;
    size_t row_bytes;
    size_t rows = 0;
    unsigned filled = 0;
    capnp::List<uint64_t>::Builder ids;
    std::byte* cells = nullptr;
  };
  // A batch holds rows of a few tables: a linear search beats a map.
  DenseBlockOut& Block(const TableSpec& spec) {
    for (DenseBlockOut& b : blocks_) {
      if (b.spec == &spec) return b;
    }
    blocks_.push_back({&spec, spec.width * ValueTypeSize(spec.value_type)});
    return blocks_.back();
  }

  std::vector<DenseBlockOut> blocks_;
  size_t sparse_rows_ = 0, sparse_bytes_ = 0, written_ = 0;
  unsigned sparse_filled_ = 0;
  capnp::List<proto::Row>::Builder sparse_{nullptr};
  std::unique_ptr<OutgoingMessage> message_;
};

}  // namespace

class Client::Impl {
 public:
  Impl(ClientOptions options, zmq::context_t& context)
      : options_(std::move(options)),
        context_(context),
        coordinator_(context, zmq::socket_type::dealer),
        thread_clocks_(std::make_unique<std::atomic<int64_t>[]>(std::max(1, options_.num_threads))),
        read_scratch_(std::max(1, options_.num_threads)),
        log_(MakeLogger(fmt::format("client-{}", options_.rank))) {
    for (int i = 0; i < std::max(1, options_.num_threads); ++i) thread_clocks_[i] = 0;
  }

  ~Impl() {
    if (started_ && !left_) {
      if (Status s = Leave(); !s.ok()) log_->warn("leaving the job: {}", s.ToString());
    }
    StopIo();
  }

  Status Start() {
    if (options_.coordinator.empty())
      return Status::InvalidArgument("client: no coordinator endpoint");
    if (options_.num_threads < 1)
      return Status::InvalidArgument("client: num_threads must be >= 1");
    ConfigureSocket(coordinator_);
    coordinator_.set(zmq::sockopt::linger, 2000);  // let the final Leave go out
    try {
      coordinator_.connect(options_.coordinator);
    } catch (const zmq::error_t& e) {
      return Status::InvalidArgument(
          fmt::format("cannot connect to coordinator {}: {}", options_.coordinator, e.what()));
    }
    auto liveness = LivenessAgent::Start({.coordinator = options_.coordinator,
                                          .role = proto::Role::WORKER,
                                          .rank = static_cast<uint32_t>(options_.rank),
                                          .secret = options_.secret,
                                          .timeout = options_.heartbeat_timeout},
                                         context_);
    if (!liveness.ok()) return liveness.status();
    liveness_ = std::move(liveness).value();
    auto membership =
        JoinJob(coordinator_,
                {proto::Role::WORKER, static_cast<uint32_t>(options_.rank), "", options_.secret},
                options_.timeout);
    if (!membership.ok()) {
      return Status(membership.status().code(),
                    fmt::format("joining via coordinator {}: {}", options_.coordinator,
                                membership.status().message()));
    }
    const auto& servers = membership->servers;
    num_workers_ = membership->num_workers;
    channels_.reserve(servers.size());
    for (auto ep : servers) {
      auto ch = std::make_unique<ServerChannel>();
      ch->endpoint = ep;
      channels_.push_back(std::move(ch));
      zmq::socket_t socket(context_, zmq::socket_type::dealer);
      ConfigureSocket(socket);
      socket.set(zmq::sockopt::linger, 2000);
      try {
        socket.connect(ep);
      } catch (const zmq::error_t& e) {
        return Status::Unavailable(fmt::format("cannot connect to server {}: {}", ep, e.what()));
      }
      server_sockets_.push_back(std::move(socket));
    }
    receiver_fds_ = ReceiverFds();
    undrained_.assign(server_sockets_.size() + 1, false);
    none_ready_.assign(server_sockets_.size() + 1, false);
    io_thread_ = std::thread([this] { IoLoop(); });
    started_ = true;
    // Introduce ourselves to every server: they serve only registered workers.
    std::vector<std::pair<int, OutgoingMessage*>> msgs;
    std::vector<std::unique_ptr<OutgoingMessage>> owned;
    for (size_t s = 0; s < channels_.size(); ++s) {
      owned.push_back(std::make_unique<OutgoingMessage>(options_.rank, 0));
      auto rr = owned.back()->envelope().getBody().initRegister();
      rr.setRole(proto::Role::WORKER);
      rr.setRank(options_.rank);
      rr.setSecret(options_.secret);
      msgs.emplace_back(static_cast<int>(s), owned.back().get());
    }
    TESSERA_RETURN_IF_ERROR(CallAll(msgs, "registering with the servers"));
    log_->info("joined: {} servers, {} workers", channels_.size(), num_workers_);
    return Status::Ok();
  }

  Status CreateTable(const TableSpec& spec) {
    TESSERA_RETURN_IF_ERROR(CheckStarted("CreateTable"));
    TESSERA_RETURN_IF_ERROR(spec.Validate());
    {
      std::shared_lock lock(tables_mu_);
      if (auto it = tables_.find(spec.id); it != tables_.end()) {
        if (!it->second->spec.SameAs(spec)) {
          return Status::FailedPrecondition(fmt::format(
              "table {} already exists as '{}' with another spec", spec.id, it->second->spec.name));
        }
        return Status::Ok();
      }
    }
    std::vector<std::unique_ptr<OutgoingMessage>> owned;
    std::vector<std::pair<int, OutgoingMessage*>> msgs;
    for (size_t s = 0; s < channels_.size(); ++s) {
      owned.push_back(std::make_unique<OutgoingMessage>(options_.rank, 0));
      TableSpecToProto(spec, owned.back()->envelope().getBody().initCreateTable());
      msgs.emplace_back(static_cast<int>(s), owned.back().get());
    }
    TESSERA_RETURN_IF_ERROR(CallAll(msgs, fmt::format("creating table '{}'", spec.name)));
    std::unique_lock lock(tables_mu_);
    const size_t per_stripe = (options_.cache_rows + kStripes - 1) / kStripes;
    auto [it, inserted] =
        tables_.try_emplace(spec.id, std::make_unique<ClientTable>(spec, per_stripe));
    if (inserted && spec.id < kFastTables)
      fast_tables_[spec.id].store(it->second.get(), std::memory_order_release);
    return Status::Ok();
  }

  const TableSpec* FindTableSpec(TableId id) const {
    std::shared_lock lock(tables_mu_);
    auto it = tables_.find(id);
    return it == tables_.end() ? nullptr : &it->second->spec;
  }

  // The table, or null. Tables are never removed while the client lives, so the ids below
  // kFastTables are read without a lock (a shared lock is a write to a shared cache line, and
  // every read and update asks).
  ClientTable* FindClientTable(TableId id) const {
    if (id < kFastTables) return fast_tables_[id].load(std::memory_order_acquire);
    std::shared_lock lock(tables_mu_);
    auto it = tables_.find(id);
    return it == tables_.end() ? nullptr : it->second.get();
  }

  Result<ClientTable*> Table(TableId id, ValueType type) {
    ClientTable* t = FindClientTable(id);
    if (t == nullptr)
      return Status::NotFound(fmt::format("unknown table {} (CreateTable it first)", id));
    if (t->spec.value_type != type) {
      return Status::InvalidArgument(fmt::format("table '{}' holds {} values, not {}", t->spec.name,
                                                 ValueTypeName(t->spec.value_type),
                                                 ValueTypeName(type)));
    }
    return t;
  }

  Status CheckRow(const ClientTable& t, RowId row) const {
    if (row >= t.spec.num_rows) {
      return Status::OutOfRange(fmt::format("row {} out of range for table '{}' ({} rows)", row,
                                            t.spec.name, t.spec.num_rows));
    }
    return Status::Ok();
  }
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
  Status CheckStarted(const char* call) const {
    if (started_.load(std::memory_order_acquire)) return Status::Ok();
    return Status::FailedPrecondition(fmt::format("client: {} before Start()", call));
  }

  Status CheckThread(int thread) const {
    if (thread < 0 || thread >= options_.num_threads) {
      return Status::InvalidArgument(fmt::format("thread {} out of range (client has {} threads)",
                                                 thread, options_.num_threads));
    }
    return Status::Ok();
  }

  int64_t NeededClock(int thread, const ClientTable& t) const {
    return thread_clocks_[thread].load(std::memory_order_relaxed) -
           static_cast<int64_t>(t.spec.staleness);
  }

  int64_t EffectiveStamp(const CacheEntry& e, uint32_t server) const {
    if (!e.subscribed) return e.stamp;
    return std::max(e.stamp, channels_[server]->seen_clock.load(std::memory_order_acquire));
  }

  // The block of `row` (null if none of its rows is cached), through `cursor`.
  // REQUIRES: stripe.mu; `cursor` valid for it (see BlockCursor).
  // Inlined (as the index lookups it replaces were): it runs several times per row read.
  [[gnu::always_inline]] static EntryBlock* FindBlock(const ClientTable& table, Stripe& stripe,
                                                      RowId row, BlockCursor& cursor) {
    const uint64_t key = table.BlockOf(row);
    if (key != cursor.key) {
      cursor.key = key;
      cursor.block = stripe.cache.Find(ClientTable::IndexKeyOf(key));
    }
    return cursor.block;
  }
  // The row's cache entry, or null if it is not cached. REQUIRES: as FindBlock.
  [[gnu::always_inline]] static CacheEntry* FindEntry(const ClientTable& table, Stripe& stripe,
                                                      RowId row, BlockCursor& cursor) {
    EntryBlock* block = FindBlock(table, stripe, row, cursor);
    const size_t k = table.SlotOf(row);
    return block != nullptr && ((block->present >> k) & 1) != 0 ? &block->rows[k] : nullptr;
  }
  static CacheEntry* FindEntry(const ClientTable& table, Stripe& stripe, RowId row) {
    BlockCursor cursor;
    return FindEntry(table, stripe, row, cursor);
  }

  // The row's cache entry, created if new. A new entry gets no storage for its row: a dense
  // row's reply is borrowed, not copied (CacheEntry::borrowed), and storage is allocated only
  // for rows that are copied (sparse rows, pushes, rows read twice or changed here). Under a
  // capacity, a new block is an evicted one, its entries reset with whatever storage they had
  // kept (RowIndex reuses erased entries; EntryBlock::Reset), and it joins the CLOCK queue;
  // the stripe may hold more than its share until the caller calls EvictIfOver, which batched
  // reads do once their requests are sent (the requests go out sooner, and eviction overlaps
  // the round trip). REQUIRES: as FindBlock.
  CacheEntry& NewOrCachedEntry(ClientTable& table, Stripe& stripe, RowId row, BlockCursor& cursor) {
    const uint64_t key = table.BlockOf(row);
    if (key != cursor.key || cursor.block == nullptr) {
      auto [block, is_new] = stripe.cache.FindOrAdd(ClientTable::IndexKeyOf(key));
      if (is_new && table.stripe_capacity > 0) stripe.clock_order.push_back(key, block);
      cursor.key = key;
      cursor.block = block;
    }
    EntryBlock& block = *cursor.block;
    const size_t k = table.SlotOf(row);
    const auto bit = static_cast<uint8_t>(1u << k);
    if ((block.present & bit) == 0) {
      block.present |= bit;
      ++stripe.cached_rows;
    }
    return block.rows[k];
  }
  CacheEntry& NewOrCachedEntry(ClientTable& table, Stripe& stripe, RowId row) {
    BlockCursor cursor;
    return NewOrCachedEntry(table, stripe, row, cursor);
  }

  // The CLOCK bit after a read (see CacheEntry::referenced). REQUIRES: the entry's stripe lock.
  static void MarkRead(CacheEntry& e) {
    e.referenced = e.read;
    e.read = true;
  }

  // Evicts if the stripe holds more rows than its share. Entries may go: the caller holds no
  // reference to an entry it has not pinned (WaitPin) or that is not waiting for its reply.
  // REQUIRES: stripe.mu.
  void EvictIfOver(ClientTable& table, Stripe& stripe) {
    if (table.stripe_capacity > 0 && stripe.cached_rows > table.stripe_capacity)
      Evict(table, stripe, std::max<size_t>(1, table.stripe_capacity / 4));
  }
  // Lists the stripe in `over` if it holds more rows than its share (rows waiting for replies
  // may not go when room is made), for an EvictIfOver once the caller holds no stripe lock: a
  // batch whose stripes stay within their share takes no lock for it. REQUIRES: stripe.mu.
  static void NoteIfOver(const ClientTable& table, Stripe& stripe, std::vector<Stripe*>& over) {
    if (table.stripe_capacity > 0 && stripe.cached_rows > table.stripe_capacity &&
        (over.empty() || over.back() != &stripe)) {
      over.push_back(&stripe);
    }
  }
  // EvictIfOver for each of `stripes` (consecutive duplicates allowed), each under its lock.
  void EvictIfOver(ClientTable& table, const std::vector<Stripe*>& stripes) {
    if (table.stripe_capacity == 0) return;
    for (size_t i = 0; i < stripes.size(); ++i) {
      if (i > 0 && stripes[i] == stripes[i - 1]) continue;
      std::lock_guard lock(stripes[i]->mu);
      EvictIfOver(table, *stripes[i]);
    }
  }

  // Under a capacity, drops rows of a full stripe so that the new rows of the run of `rows`
  // that starts here (those in this stripe) fit without going over. The blocks dropped are
  // then in the CPU's caches, and the new rows take them at once (RowIndex reuses the last
  // erased entry first); dropped after the rows are added (EvictIfOver), they are fetched cold
  // twice, once to be dropped and once, a batch later, to be reused. Forgets `cursor` if it
  // evicts. REQUIRES: as FindBlock.
  void MakeRoom(ClientTable& table, Stripe& stripe, std::span<const RowId> rows,
                BlockCursor& cursor) {
    if (table.stripe_capacity == 0) return;
    // Counting only the rows not cached keeps a run of hits from dropping rows for nothing.
    size_t fresh = 0;
    for (size_t i = 0; i < rows.size() && &table.StripeOf(rows[i]) == &stripe; ++i) {
      if (FindEntry(table, stripe, rows[i], cursor) == nullptr) ++fresh;
    }
    if (stripe.cached_rows + fresh > table.stripe_capacity) {
      Evict(table, stripe, stripe.cached_rows + fresh - table.stripe_capacity);
      cursor.Forget();
    }
  }

  // Under a capacity, prefetches what making room for `rows` will look at first in each of
  // their stripes (Stripe::victim_hints), before any stripe lock is taken.
  static void PrefetchVictims(ClientTable& table, std::span<const RowId> rows) {
    if (table.stripe_capacity == 0) return;
    const Stripe* last = nullptr;
    for (RowId row : rows) {
      const Stripe& stripe = table.StripeOf(row);
      if (&stripe == last) continue;
      last = &stripe;
      const void* front = stripe.victim_hints[0].load(std::memory_order_relaxed);
      if (front != nullptr) __builtin_prefetch(front);
      for (size_t k = 1; k <= Stripe::kVictimHints; ++k) {
        const void* block = stripe.victim_hints[k].load(std::memory_order_relaxed);
        if (block == nullptr) break;
        PrefetchBlock(static_cast<const EntryBlock*>(block), table.block_rows());
      }
    }
  }

  // Drops at least `target` rows of the stripe (fewer if that many may not go; whole blocks, so
  // up to a block's rows more); EvictIfOver drops a quarter of the stripe's capacity (at least
  // one row), so that the sweep and the bookkeeping are paid per batch. CLOCK over blocks: the
  // hand skips a block (and clears its rows' bits) if any of its rows has its bit set (see
  // CacheEntry::referenced) or may not be dropped: not yet answered, with a pending error, or
  // with reads waiting on it. A row that has been answered has no request in flight (only rows
  // never answered are requested; later values come as pushes), so an eviction never races a
  // reply. The servers learn of the dropped rows through `forget` (see ServerChannel). Cursors
  // into the stripe are invalid after it (BlockCursor). REQUIRES: stripe.mu.
  void Evict(ClientTable& table, Stripe& stripe, size_t target) {
    const auto num_servers = static_cast<uint32_t>(channels_.size());
    const size_t block_rows = table.block_rows();
    // The blocks under the hand are the coldest of the cache: fetch those it will look at
    // together, so their cache misses overlap rather than come one after another.
    // It also leaves them as the stripe's hints (Stripe::victim_hints); those the first call
    // leaves are overwritten by the second before the lock is let go.
    auto fetch_under_hand = [&stripe, block_rows](size_t blocks) {
      const void* front = stripe.clock_order.empty() ? nullptr : &stripe.clock_order.front();
      stripe.victim_hints[0].store(front, std::memory_order_relaxed);
      size_t ahead = 0;
      for (; ahead < std::min(blocks, stripe.clock_order.size()); ++ahead) {
        const ClockQueue::Slot& slot = stripe.clock_order.at(ahead);
        PrefetchBlock(slot.block, block_rows);
        stripe.cache.Prefetch(ClientTable::IndexKeyOf(slot.key));
        if (ahead < Stripe::kVictimHints) {
          stripe.victim_hints[1 + ahead].store(slot.block, std::memory_order_relaxed);
        }
      }
      for (size_t k = ahead; k < Stripe::kVictimHints; ++k) {
        stripe.victim_hints[1 + k].store(nullptr, std::memory_order_relaxed);
      }
    };
    fetch_under_hand((target + block_rows - 1) / block_rows);
    std::vector<std::pair<uint32_t, RowId>>& evicted = stripe.evicted;
    std::vector<uint64_t>& dropped = stripe.evicted_blocks;
    // Rows dropped one after another mostly came in one reply: their holds on it are let go
    // together, one atomic operation (and one miss on a reply long untouched) for the lot.
    SharedReply* letting_go = nullptr;
    uint32_t holds = 0;
    // `target` may exceed what the stripe holds (MakeRoom for a run larger than the capacity).
    for (size_t steps = 2 * stripe.clock_order.size();
         evicted.size() < target && steps > 0 && !stripe.clock_order.empty(); --steps) {
      auto [key, block] = stripe.clock_order.front();
      stripe.clock_order.pop_front();
      bool keep = false;
      block->ForEachPresent([&keep](size_t, const CacheEntry& e) {
        keep |= e.referenced || !e.valid || e.waiters > 0 || e.failed();
      });
      if (keep) {
        block->ForEachPresent([](size_t, CacheEntry& e) { e.referenced = false; });
        stripe.clock_order.push_back(key, block);
        continue;
      }
      const RowId first = table.FirstRowOf(key);
      block->ForEachPresent([&](size_t k, CacheEntry& e) {
        evicted.emplace_back(ServerOfRow(table.spec.id, first + k, num_servers), first + k);
        if (SharedReply* r = e.TakeReply()) {
          if (r != letting_go) {
            if (letting_go != nullptr) letting_go->Release(holds);
            letting_go = r;
            holds = 0;
          }
          ++holds;
        }
      });
      dropped.push_back(key);
    }
    if (letting_go != nullptr) letting_go->Release(holds);
    // Erased last first: the victims are mostly runs of consecutive blocks, which sit in
    // consecutive index slots (RowIndex::Home), and erasing a run's last block first leaves each
    // erase nothing behind it to shift back, where erasing in order would rescan the rest of the
    // run every time.
    for (auto it = dropped.rbegin(); it != dropped.rend(); ++it) {
      stripe.cache.Erase(ClientTable::IndexKeyOf(*it));
    }
    stripe.cached_rows -= evicted.size();
    // And those the next eviction of this stripe will look at (likely as many), which then finds
    // them in the CPU's caches instead of waiting for them.
    fetch_under_hand(dropped.size());
    Count(kEvictions, evicted.size());
    for (uint32_t s = 0; s < num_servers; ++s) {
      ServerChannel& ch = *channels_[s];
      std::lock_guard lock(ch.forget_mu);
      std::vector<RowId>& forget = ch.forget[table.spec.id];
      for (auto [server, row] : evicted) {
        if (server != s) continue;
        forget.push_back(row);
        ++ch.forget_rows;
      }
      if (ch.forget_rows >= kMaxForgetRows) SendForgetLocked(s);
    }
    evicted.clear();
    dropped.clear();
  }

  // Sends every pending unsubscription of server `s`, one message per table.
  // REQUIRES: channels_[s]->forget_mu.
  void SendForgetLocked(uint32_t s) {
    ServerChannel& ch = *channels_[s];
    for (auto& [table, rows] : ch.forget) {
      if (rows.empty()) continue;
      OutgoingMessage msg(options_.rank, 0, static_cast<unsigned>(rows.size() + 16));
      auto body = msg.envelope().getBody().initUnsubscribe();
      body.setTable(table);
      auto list = body.initRows(static_cast<unsigned>(rows.size()));
      for (unsigned i = 0; i < rows.size(); ++i) list.set(i, rows[i]);
      Enqueue(static_cast<int>(s), msg.ToFrame());
      rows.clear();
    }
    ch.forget_rows = 0;
  }

  // Marks the end of a wait on a cache entry (see Read).
  struct WaitPin {
    CacheEntry* entry = nullptr;
    ~WaitPin() {
      if (entry != nullptr) --entry->waiters;
    }
  };

  // Reads one row under the SSP bound and hands the cached value to `copy_out` under the lock.
  template <typename CopyOut>
  Status Read(int thread, TableId id, ValueType type, bool sparse, RowId row, CopyOut copy_out) {
    TESSERA_RETURN_IF_ERROR(CheckThread(thread));
    auto t = Table(id, type);
    if (!t.ok()) return t.status();
    ClientTable& table = **t;
    if (table.spec.sparse != sparse) {
      return Status::InvalidArgument(fmt::format("table '{}' has {} rows; use {}", table.spec.name,
                                                 table.spec.sparse ? "sparse" : "dense",
                                                 table.spec.sparse ? "GetSparse" : "Get"));
    }
    TESSERA_RETURN_IF_ERROR(CheckRow(table, row));
    int64_t need = NeededClock(thread, table);
    uint32_t server = ServerOfRow(id, row, static_cast<uint32_t>(channels_.size()));
    Stripe& stripe = table.StripeOf(row);
    std::unique_lock lock(stripe.mu);
    EvictIfOver(table, stripe);  // before taking an entry, which it might evict
    CacheEntry& entry = NewOrCachedEntry(table, stripe, row);
    // Classified once, on entry: a read waits either for a first copy or for the bound.
    Counter kind = entry.valid ? kStaleWaits : kColdMisses;
    bool waited = false;
    // Declared after `lock`, so destroyed while the stripe is still locked.
    WaitPin pin;
    std::chrono::steady_clock::time_point deadline;  // set when the read first waits
    while (true) {
      if (entry.failed()) {
        Status s = std::move(*entry.error);
        entry.error.reset();
        if (waited) Uncount(kBlockedReads);
        return s;
      }
      if (int64_t stamp = EffectiveStamp(entry, server); entry.valid && stamp >= need) {
        // Single-row reads hand out the row as a RowValues: a borrowed one is copied first.
        entry.Own(table.spec);
        MarkRead(entry);
        copy_out(entry.value());
        Count(waited ? kind : kCacheHits);
        RecordStaleness(thread_clocks_[thread].load(std::memory_order_relaxed) - stamp);
        if (waited) Uncount(kBlockedReads);
        return Status::Ok();
      }
      if (!waited) {
        ++entry.waiters;  // eviction leaves the entry alone until this read is done
        pin.entry = &entry;
        Count(kBlockedReads);
        // Only now: most reads are cache hits, and the clock costs them a few percent.
        deadline = std::chrono::steady_clock::now() + options_.timeout;
      }
      waited = true;
      // A subscribed row needs no request: the server pushes it (or an empty push that vouches
      // for it) every time its clock advances. The request goes out without the stripe lock
      // (SendGet may wait for a flush, which takes stripe locks); the entry is pinned.
      if (!entry.subscribed && entry.requested < need) {
        entry.requested = need;
        lock.unlock();
        SendGet(server, id, std::span<const RowId>(&row, 1), need);
        lock.lock();
        continue;  // the reply may have come meanwhile
      }
      auto changed = [&] {
        return entry.failed() || (entry.valid && EffectiveStamp(entry, server) >= need);
      };
      if (!AwaitReady(lock, stripe.cv, changed, deadline)) {
        Uncount(kBlockedReads);
        return Status::Unavailable(
            fmt::format("read of row {} of table '{}' at clock {} got no answer from server {} "
                        "({}) within {} ms",
                        row, table.spec.name, need, server, channels_[server]->endpoint,
                        options_.timeout.count()));
      }
    }
  }

  // Thread `thread`'s read scratch, emptied. Each thread index is used by one thread at a time
  // (the class contract), and neither Prefetch nor ReadRows calls the other, so no two calls
  // share it. REQUIRES: CheckThread(thread) is OK; Start has made the channels.
  ReadScratch& ScratchOf(int thread) {
    ReadScratch& s = read_scratch_[static_cast<size_t>(thread)];
    s.per_server.resize(channels_.size());
    for (auto& rows : s.per_server) rows.clear();
    s.over.clear();
    s.missing.clear();
    s.missing_was_valid.clear();
    return s;
  }

  Status Prefetch(int thread, TableId id, std::span<const RowId> rows) {
    TESSERA_RETURN_IF_ERROR(CheckThread(thread));
    ClientTable* table = FindClientTable(id);
    if (table == nullptr) return Status::NotFound(fmt::format("unknown table {}", id));
    int64_t need = NeededClock(thread, *table);
    TESSERA_RETURN_IF_ERROR(CheckRows(*table, rows));
    PrefetchVictims(*table, rows);
    ReadScratch& scratch = ScratchOf(thread);
    auto& per_server = scratch.per_server;
    // Each server's list sized for every row and cut to what was asked after: a store per row
    // asked (push_back is left out of line here). The price is zeroing the batch's length per
    // server on each call, which grows with the number of servers.
    std::vector<size_t>& asked = scratch.asked;
    asked.assign(per_server.size(), 0);
    for (std::vector<RowId>& list : per_server) list.resize(rows.size());
    {
      StripeRunLock run;
      BlockCursor cursor;
      for (size_t i = 0; i < rows.size(); ++i) {
        const RowId row = rows[i];
        uint32_t server = ServerOfRow(id, row, static_cast<uint32_t>(channels_.size()));
        Stripe& stripe = table->StripeOf(row);
        if (run.Hold(stripe)) {
          cursor.Forget();
          MakeRoom(*table, stripe, rows.subspan(i), cursor);
        }
        CacheEntry& entry = NewOrCachedEntry(*table, stripe, row, cursor);
        NoteIfOver(*table, stripe, scratch.over);
        if (entry.valid && EffectiveStamp(entry, server) >= need) continue;
        if (entry.subscribed || entry.requested >= need) continue;
        entry.requested = need;
        per_server[server][asked[server]++] = row;
      }
    }
    for (size_t s = 0; s < per_server.size(); ++s) {
      per_server[s].resize(asked[s]);
      if (!per_server[s].empty()) SendGet(static_cast<uint32_t>(s), id, per_server[s], need);
    }
    EvictIfOver(*table, scratch.over);
    return Status::Ok();
  }

  // Adds an update to the row's pending delta and to its cached value. `check(spec)` validates
  // the update against the table; `importance(base)` is the update's sum |delta / value| against
  // the cached value (`base`, null when not cached), evaluated only under kRelativeMagnitude.
  template <typename Check, typename Apply, typename Importance>
  Status Update(TableId id, ValueType type, RowId row, Check check, Apply apply,
                Importance importance) {
    auto t = Table(id, type);
    if (!t.ok()) return t.status();
    ClientTable& table = **t;
    TESSERA_RETURN_IF_ERROR(CheckRow(table, row));
    TESSERA_RETURN_IF_ERROR(check(table.spec));
    Stripe& stripe = table.StripeOf(row);
    std::lock_guard lock(stripe.mu);
    UpdateLocked(table, stripe, row, apply, importance);
    return Status::Ok();
  }

  // Adds whole dense rows: deltas[i * width ...] to rows[i]. Checked whole first, so a bad
  // call adds nothing; then as Update per row, with one stripe lock per run of rows in the
  // same stripe.
  template <typename T>
  Status UpdateRows(TableId id, std::span<const RowId> rows, std::span<const T> deltas) {
    auto t = Table(id, ValueTypeOf<T>());
    if (!t.ok()) return t.status();
    ClientTable& table = **t;
    const size_t width = table.spec.width;
    if (table.spec.sparse || deltas.size() != rows.size() * width) {
      return Status::InvalidArgument(
          fmt::format("IncRows on table '{}' needs {} dense rows of {} values, got {} values",
                      table.spec.name, rows.size(), width, deltas.size()));
    }
    TESSERA_RETURN_IF_ERROR(CheckRows(table, rows));
    StripeRunLock run;
    for (size_t i = 0; i < rows.size(); ++i) {
      const T* delta = deltas.data() + i * width;
      Stripe& stripe = table.StripeOf(rows[i]);
      run.Hold(stripe);
      UpdateLocked(
          table, stripe, rows[i],
          [&](RowValues& v) { AddCells(v.mutable_dense<T>().data(), delta, width); },
          [&](const RowValues* base) { return RowImportance(delta, width, base); });
    }
    return Status::Ok();
  }

  // Update's work once the row is checked. REQUIRES: stripe.mu.
  template <typename Apply, typename Importance>
  void UpdateLocked(ClientTable& table, Stripe& stripe, RowId row, Apply apply,
                    Importance importance) {
    auto it = stripe.oplog.find(row);
    if (it == stripe.oplog.end()) {
      if (!stripe.spare.empty()) {
        OpLog::node_type node = std::move(stripe.spare.back());
        stripe.spare.pop_back();
        node.key() = row;  // its delta is zero and has the table's layout
        it = stripe.oplog.insert(std::move(node)).position;
      } else {
        it = stripe.oplog.try_emplace(row).first;
        it->second.delta = RowValues::Zero(table.spec);
      }
    }
    PendingRow& pending = it->second;
    if (!pending.pending) {
      pending.pending = true;
      pending.slot = stripe.pending.size();
      stripe.pending.push_back({row, &pending});
      int64_t was_pending = pending_rows_.fetch_add(1, std::memory_order_relaxed);
      if (options_.comm.early_sends()) {
        if (options_.comm.policy == SendPolicy::kFifo) {
          std::lock_guard fifo_lock(fifo_mu_);
          fifo_.emplace_back(&table, row);
        }
        // The I/O thread sleeps without a time-out while nothing is pending.
        if (was_pending == 0) waker_.Notify();
      }
    }
    apply(pending.delta);
    CacheEntry* c = FindEntry(table, stripe, row);
    bool cached = c != nullptr && c->valid;
    if (cached) c->Own(table.spec);  // the reply is not ours to change
    if (options_.comm.policy == SendPolicy::kRelativeMagnitude) {
      pending.importance += importance(cached ? &c->value() : nullptr);
    }
    if (cached) apply(c->value());
  }

  Status Clock(int thread) {
    TESSERA_RETURN_IF_ERROR(CheckStarted("Clock"));
    TESSERA_RETURN_IF_ERROR(CheckThread(thread));
    std::lock_guard lock(clock_mu_);
    thread_clocks_[thread].fetch_add(1, std::memory_order_relaxed);
    int64_t min_clock = std::numeric_limits<int64_t>::max();
    for (int i = 0; i < options_.num_threads; ++i)
      min_clock = std::min(min_clock, thread_clocks_[i].load());
    if (min_clock > process_clock_) {
      process_clock_ = min_clock;
      FlushLocked(process_clock_);
    }
    return TakeAsyncError();
  }

  int64_t clock(int thread) const { return thread_clocks_[thread].load(); }

  Status Barrier() {
    TESSERA_RETURN_IF_ERROR(CheckStarted("Barrier"));
    {
      std::lock_guard lock(clock_mu_);
      FlushLocked();
    }
    OutgoingMessage msg(options_.rank, 0);
    msg.envelope().getBody().initBarrier().setId(++barriers_);
    std::vector<std::pair<int, OutgoingMessage*>> msgs = {{kCoordinator, &msg}};
    TESSERA_RETURN_IF_ERROR(CallAll(msgs, "waiting at a barrier"));
    return TakeAsyncError();
  }

  Status Leave() {
    if (!started_ || left_.exchange(true)) return Status::Ok();
    {
      std::lock_guard lock(clock_mu_);
      FlushLocked();
    }
    // Each Leave is acknowledged, servers first: a server acknowledges after applying everything
    // sent before the Leave on the same connection, and only then may the coordinator end the
    // job or this process close its connections. A connection closed with data in flight can
    // lose it (a TCP reset), and losing this worker's last clocks would hold back every other
    // worker's reads.
    std::vector<std::unique_ptr<OutgoingMessage>> owned;
    std::vector<std::pair<int, OutgoingMessage*>> msgs;
    for (size_t s = 0; s < channels_.size(); ++s) {
      owned.push_back(std::make_unique<OutgoingMessage>(options_.rank, 0));
      owned.back()->envelope().getBody().initLeave().setRank(options_.rank);
      msgs.emplace_back(static_cast<int>(s), owned.back().get());
    }
    Status servers = CallAll(msgs, "leaving the servers");
    OutgoingMessage msg(options_.rank, 0);
    msg.envelope().getBody().initLeave().setRank(options_.rank);
    msgs = {{kCoordinator, &msg}};
    Status coordinator = CallAll(msgs, "leaving the job");
    if (liveness_) liveness_->Leave();  // done with the job: neither side watches the other now
    StopIo();
    Status async = TakeAsyncError();
    if (!async.ok()) return async;
    return servers.ok() ? coordinator : servers;
  }

  ClientStats stats() const {
    auto get = [&](Counter c) { return counters_[c].value.load(std::memory_order_relaxed); };
    ClientStats s;
    s.get_requests = get(kGetRequests);
    s.cache_hits = get(kCacheHits);
    s.cold_misses = get(kColdMisses);
    s.stale_waits = get(kStaleWaits);
    s.blocked_reads = get(kBlockedReads);
    s.rows_received = get(kRowsReceived);
    s.evictions = get(kEvictions);
    s.replies_held = replies_held_.load(std::memory_order_relaxed);
    s.uncached_rows = get(kUncachedRows);
    s.flow_control_waits = get(kFlowWaits);
    s.unacked_batches_max = get(kUnackedMax);
    s.pushes = get(kPushes);
    s.update_rows_sent = get(kUpdateRowsSent);
    s.bytes_sent = get(kBytesSent);
    s.messages_sent = get(kMessagesSent);
    s.early_bytes_sent = get(kEarlyBytes);
    s.boundary_bytes_sent = get(kBoundaryBytes);
    s.early_rows_sent = get(kEarlyRows);
    s.reads = get(kReads);
    s.staleness_sum = get(kStalenessSum);
    s.staleness_max = get(kStalenessMax);
    return s;
  }

 private:
  // Counters are relaxed atomics: they are read only for statistics and must cost the hot
  // paths no lock.
  void Count(Counter c, uint64_t n = 1) {
    counters_[c].value.fetch_add(n, std::memory_order_relaxed);
  }
  // Raises counter `c` to `value` if it is below.
  void CountMax(Counter c, uint64_t value) {
    std::atomic<uint64_t>& max = counters_[c].value;
    uint64_t seen = max.load(std::memory_order_relaxed);
    while (value > seen && !max.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
    }
  }
  void Uncount(Counter c) { counters_[c].value.fetch_sub(1, std::memory_order_relaxed); }

  void SetAsyncError(Status status) {
    log_->error("{}", status.ToString());
    std::lock_guard lock(calls_mu_);
    if (async_error_.ok()) async_error_ = std::move(status);
    async_failed_.store(true, std::memory_order_release);
  }

  Status TakeAsyncError() {
    std::lock_guard lock(calls_mu_);
    Status s = std::move(async_error_);
    async_error_ = Status::Ok();
    return s;
  }

  // Sends a message to a server or the coordinator, in order with every message sent before it.
  // The calling thread sends it itself when no other thread is using the sockets (the common
  // case: no hand-over to the I/O thread, no wake-up, no context switch); otherwise it queues it
  // for the I/O thread. Whoever holds socket_mu_ first sends what is queued, so a message never
  // overtakes one queued before it.
  void Send(int target, zmq::message_t frame, bool early = false) {
    std::unique_lock lock(socket_mu_, std::try_to_lock);
    if (!lock.owns_lock()) {
      outbound_.push(Outbound{target, std::move(frame), early});
      waker_.Notify();
      return;
    }
    std::vector<bool>& used = ClearedSentOn();
    SendQueuedLocked(&used);
    SendLocked(Outbound{target, std::move(frame), early}, &used);
    WakeReceiverIfInputLocked(used);
  }

  // sent_on_, a false per socket (sized here: a call may come before Start has made the
  // sockets; once sized, assign reuses the storage). REQUIRES: socket_mu_.
  std::vector<bool>& ClearedSentOn() {
    sent_on_.assign(server_sockets_.size() + 1, false);
    return sent_on_;
  }

  // Sending may have run a socket's pending commands, and with them used up the edge of its
  // ZMQ_FD that would wake the receiver for a message that arrived meanwhile: if a socket in
  // `used` has input waiting, wake the receiver (it drains every socket when input_waker_
  // fires). REQUIRES: socket_mu_.
  void WakeReceiverIfInputLocked(const std::vector<bool>& used) {
    for (int s = kCoordinator; s < static_cast<int>(server_sockets_.size()); ++s) {
      // An undrained socket is read before the receiver polls: its signal is not needed.
      if (used[s + 1] && !undrained_[s + 1] &&
          (SocketOf(s).get(zmq::sockopt::events) & ZMQ_POLLIN) != 0) {
        input_waker_.Notify();
        return;
      }
    }
  }
  void Enqueue(int target, zmq::message_t frame) { Send(target, std::move(frame)); }

  zmq::socket_t& SocketOf(int target) {
    return target == kCoordinator ? coordinator_ : server_sockets_[target];
  }

  // REQUIRES: socket_mu_.
  void SendQueuedLocked(std::vector<bool>* used) {
    Outbound out;
    while (outbound_.try_pop(out)) SendLocked(std::move(out), used);
  }

  // REQUIRES: socket_mu_.
  void SendLocked(Outbound out, std::vector<bool>* used) {
    const size_t bytes = out.frame.size();
    (*used)[out.target + 1] = true;
    try {
      SocketOf(out.target).send(out.frame, zmq::send_flags::none);
    } catch (const zmq::error_t& e) {
      log_->error("send failed: {}", e.what());
      return;
    }
    Count(kBytesSent, bytes);
    Count(kMessagesSent);
    if (out.target != kCoordinator) Count(out.early ? kEarlyBytes : kBoundaryBytes, bytes);
    // Everything sent counts against the budget (the I/O thread's); only early sends wait for it.
    unbudgeted_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }

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

  // The request carries the table's pending unsubscriptions for this server (see
  // ServerChannel::forget). REQUIRES: no stripe lock held (see WaitForFlushInProgress).
  void SendGet(uint32_t server, TableId table, std::span<const RowId> rows, int64_t min_clock) {
    WaitForFlushInProgress();
    uint64_t id = next_request_id_.fetch_add(1);
    {
      std::lock_guard lock(calls_mu_);
      // A spare node (and its row list's storage) from an answered request, if any.
      PendingGets::node_type node;
      if (!spare_get_nodes_.empty()) {
        node = std::move(spare_get_nodes_.back());
        spare_get_nodes_.pop_back();
        node.key() = id;
        node.mapped().first = table;
        node.mapped().second.assign(rows.begin(), rows.end());
        pending_gets_.insert(std::move(node));
      } else {
        pending_gets_[id] = {table, std::vector<RowId>(rows.begin(), rows.end())};
      }
    }
    ServerChannel& ch = *channels_[server];
    std::lock_guard forget_lock(ch.forget_mu);
    std::vector<RowId>* forget = nullptr;
    if (ch.forget_rows > 0) {
      if (auto it = ch.forget.find(table); it != ch.forget.end() && !it->second.empty())
        forget = &it->second;
    }
    zmq::message_t frame = GetFrame(id, table, rows, min_clock, /*subscribe=*/true, forget);
    if (forget != nullptr) {
      ch.forget_rows -= forget->size();
      forget->clear();
    }
    Enqueue(static_cast<int>(server), std::move(frame));
  }

  // A GetRequest, with `forget` (may be null) as its unsubscriptions.
  zmq::message_t GetFrame(uint64_t id, TableId table, std::span<const RowId> rows,
                          int64_t min_clock, bool subscribe, const std::vector<RowId>* forget) {
    const size_t words = rows.size() + (forget != nullptr ? forget->size() : 0) + 24;
    OutgoingMessage msg(options_.rank, id, static_cast<unsigned>(words));
    auto get = msg.envelope().getBody().initGet();
    get.setTable(table);
    get.setMinClock(min_clock);
    get.setSubscribe(subscribe);
    auto list = get.initRows(static_cast<unsigned>(rows.size()));
    for (unsigned i = 0; i < rows.size(); ++i) list.set(i, rows[i]);
    if (forget != nullptr) {
      auto out = get.initUnsubscribe(static_cast<unsigned>(forget->size()));
      for (unsigned i = 0; i < forget->size(); ++i) out.set(i, (*forget)[i]);
    }
    Count(kGetRequests, rows.size());
    return msg.ToFrame();
  }

  // Sends each message as a request and waits for every reply. REQUIRES: messages have
  // request id 0 (a fresh one is assigned).
  Status CallAll(std::vector<std::pair<int, OutgoingMessage*>>& msgs, const std::string& what) {
    uint64_t id = next_request_id_.fetch_add(1);
    {
      std::lock_guard lock(calls_mu_);
      calls_[id].outstanding = static_cast<int>(msgs.size());
    }
    for (auto& [target, msg] : msgs) {
      msg->envelope().setRequestId(id);
      Enqueue(target, msg->ToFrame());
    }
    std::unique_lock lock(calls_mu_);
    bool done = AwaitReady(
        lock, calls_cv_, [&] { return calls_[id].outstanding == 0; },
        std::chrono::steady_clock::now() + options_.timeout);
    Status status = done ? calls_[id].status
                         : Status::Unavailable(fmt::format("{}: no answer within {} ms", what,
                                                           options_.timeout.count()));
    calls_.erase(id);
    return status;
  }

  // The I/O thread sends what is still queued, then exits.
  void StopIo() {
    if (!io_thread_.joinable()) return;
    stop_io_.store(true, std::memory_order_release);
    waker_.Notify();
    io_thread_.join();
  }

  // Boundary flush: every pending row, one batch per server, each followed by `clock` if it is
  // >= 0. REQUIRES: clock_mu_.
  void FlushLocked(int64_t clock = -1) {
    {
      std::lock_guard fifo_lock(fifo_mu_);
      fifo_.clear();  // everything in it is about to be sent
    }
    // Evictions not told yet: a server pushes each of those rows at most until this clock.
    for (uint32_t s = 0; s < channels_.size(); ++s) {
      std::lock_guard lock(channels_[s]->forget_mu);
      if (channels_[s]->forget_rows > 0) SendForgetLocked(s);
    }
    SendPending(nullptr, clock);
  }

  // Moves pending rows into one update batch per server and queues the batches: all rows when
  // `chosen` is null (a boundary: every server gets a batch, carrying `clock`), else the chosen
  // rows still pending (an early send: only servers with rows get one). REQUIRES: clock_mu_, which
  // keeps batch numbers in the order the batches are queued.
  void SendPending(const std::vector<std::pair<ClientTable*, RowId>>* chosen, int64_t clock) {
    // Set before any delta is taken out of the log, cleared once the batches are queued (see
    // SendGet).
    flushing_.store(true, std::memory_order_seq_cst);
    struct Done {
      std::atomic<bool>& flag;
      ~Done() { flag.store(false, std::memory_order_release); }
    } done{flushing_};
    const bool early = chosen != nullptr;
    const auto num_servers = static_cast<uint32_t>(channels_.size());
    // Deltas of rows this process has a cache entry for (or a read in flight) are also kept in
    // the in-flight batch, to correct rows the server sends before applying the batch; while an
    // uncached read is in flight, every delta is. Rows with no entry need no copy: any later
    // request is sent after this batch on the same ordered connection, so its answer includes
    // the batch.
    // The in-flight record of a row goes in under the row's stripe lock, in the same step that
    // takes the row out of the update log: a reply processed in between would find its deltas in
    // neither place.
    // Only batches that keep a delta are recorded in flight: a batch of rows nobody here caches
    // (every batch of a process that only writes) costs no record.
    std::vector<uint64_t> seqs(num_servers, 0);  // 0: no batch for this server
    std::vector<InflightBatch*> batches(num_servers, nullptr);
    auto open_batch = [&](uint32_t s) {
      if (seqs[s] != 0) return;
      ServerChannel& ch = *channels_[s];
      std::unique_lock lock(ch.mu);
      // Flow control at boundaries only: early sends come from the I/O thread, which must not
      // wait, and the budget bounds them anyway.
      if (!early && ch.next_seq - ch.acked_seq >= kMaxUnackedBatches) {
        Count(kFlowWaits);
        auto room = [&] {
          return ch.next_seq - ch.acked_seq < kMaxUnackedBatches ||
                 async_failed_.load(std::memory_order_acquire);
        };
        if (!AwaitReady(lock, ch.acked, room,
                        std::chrono::steady_clock::now() + options_.timeout)) {
          // Sent anyway: nothing is dropped, the queue only grows. The error reaches Clock.
          SetAsyncError(Status::Unavailable(
              fmt::format("server {} ({}) acknowledged no update batch within {} ms", s,
                          ch.endpoint, options_.timeout.count())));
        }
      }
      seqs[s] = ++ch.next_seq;
      CountMax(kUnackedMax, ch.next_seq - ch.acked_seq);
    };
    if (!early) {
      for (uint32_t s = 0; s < num_servers; ++s) open_batch(s);
    } else {
      for (auto [table, row] : *chosen) open_batch(ServerOfRow(table->spec.id, row, num_servers));
    }
    // The in-flight copy of a row's delta (kept only for rows this process caches).
    auto keep = [&](const ClientTable& table, Stripe& stripe, RowId row, uint32_t s,
                    const RowValues& delta) {
      const TableId id = table.spec.id;
      if (FindEntry(table, stripe, row) == nullptr &&
          uncached_in_flight_.load(std::memory_order_seq_cst) == 0)
        return;
      std::lock_guard ch_lock(channels_[s]->mu);
      if (batches[s] == nullptr)
        batches[s] = &channels_[s]->inflight.emplace_back(InflightBatch{seqs[s], {}});
      if (batches[s]->deltas.emplace(RowKey{id, row}, delta).second)
        channels_[s]->inflight_deltas.fetch_add(1, std::memory_order_relaxed);
    };
    // Only this thread (holding clock_mu_) adds to the batches, so `seq` is read without locks.
    std::vector<BatchWriter> writers(num_servers);
    auto start = [&](uint32_t s) {
      writers[s].Start(options_.rank, seqs[s], clock, seqs[s] % kAckEvery == 0, frame_pool_.get());
    };
    uint64_t taken = 0;
    if (!early) {
      // Two passes over the stripes: count the rows per server, then write them straight from
      // the update log into the messages. Rows that become pending in between (updates of a
      // thread already in the next clock) stay for the next flush: the first `counted` entries
      // of each stripe's pending list are the ones counted, since only a flush (under
      // clock_mu_) removes entries and new ones are appended.
      std::shared_lock tables_lock(tables_mu_);
      struct Counted {
        const ClientTable* table;
        Stripe* stripe;
        size_t rows;
      };
      std::vector<Counted> counted;
      for (auto& [id, table] : tables_) {
        for (Stripe& stripe : table->stripes) {
          std::lock_guard lock(stripe.mu);
          // Entries not updated since the last flush leave the log: only rows updated clock
          // after clock keep their entries, so memory follows the working set, not every row
          // ever touched. About one flush's worth of them (spare_target) is kept aside for reuse.
          stripe.spare_target =
              std::max(stripe.pending.size(), stripe.spare_target - stripe.spare_target / 16);
          const size_t keep_spare = stripe.spare_target;
          for (auto it = stripe.oplog.begin(); it != stripe.oplog.end();) {
            auto next = std::next(it);
            if (!it->second.pending) {
              if (stripe.spare.size() < keep_spare) {
                stripe.spare.push_back(stripe.oplog.extract(it));
              } else {
                stripe.oplog.erase(it);
              }
            }
            it = next;
          }
          if (stripe.spare.size() > keep_spare) stripe.spare.resize(keep_spare);
          if (stripe.pending.empty()) continue;
          counted.push_back({table.get(), &stripe, stripe.pending.size()});
          for (const PendingRef& ref : stripe.pending) {
            writers[ServerOfRow(id, ref.row, num_servers)].Count(table->spec, ref.entry->delta);
          }
        }
      }
      for (uint32_t s = 0; s < num_servers; ++s) start(s);
      for (const Counted& c : counted) {
        Stripe& stripe = *c.stripe;
        std::lock_guard lock(stripe.mu);
        for (size_t i = 0; i < c.rows; ++i) {
          RowId row = stripe.pending[i].row;
          PendingRow& p = *stripe.pending[i].entry;
          uint32_t s = ServerOfRow(c.table->spec.id, row, num_servers);
          keep(*c.table, stripe, row, s, p.delta);
          writers[s].Write(c.table->spec, row, p.delta);
          p.delta.SetZero();
          p.pending = false;
          p.importance = 0;
        }
        // Entries appended meanwhile move to the front, with their slots.
        stripe.pending.erase(stripe.pending.begin(),
                             stripe.pending.begin() + static_cast<ptrdiff_t>(c.rows));
        for (size_t i = 0; i < stripe.pending.size(); ++i) stripe.pending[i].entry->slot = i;
        taken += c.rows;
      }
    } else {
      // Early: few rows; move them out, then write.
      struct Outgoing {
        const TableSpec* spec;
        RowId row;
        RowValues delta;
      };
      std::vector<std::vector<Outgoing>> outgoing(num_servers);
      for (auto [table, row] : *chosen) {
        Stripe& stripe = table->StripeOf(row);
        std::lock_guard lock(stripe.mu);
        auto it = stripe.oplog.find(row);
        if (it == stripe.oplog.end() || !it->second.pending)
          continue;  // sent meanwhile, or chosen twice
        uint32_t s = ServerOfRow(table->spec.id, row, num_servers);
        keep(*table, stripe, row, s, it->second.delta);
        outgoing[s].push_back({&table->spec, row, it->second.delta});
        ErasePending(stripe, it);
        ++taken;
      }
      for (uint32_t s = 0; s < num_servers; ++s) {
        if (seqs[s] == 0) continue;
        for (const Outgoing& o : outgoing[s]) writers[s].Count(*o.spec, o.delta);
        start(s);
        for (const Outgoing& o : outgoing[s]) writers[s].Write(*o.spec, o.row, o.delta);
      }
    }
    pending_rows_.fetch_sub(static_cast<int64_t>(taken), std::memory_order_relaxed);
    uint64_t rows_sent = 0;
    for (uint32_t s = 0; s < num_servers; ++s) {
      if (seqs[s] == 0) continue;  // no batch opened for this server
      rows_sent += writers[s].written();
      Send(static_cast<int>(s), writers[s].Finish(), early);
    }
    Count(kUpdateRowsSent, rows_sent);
    if (early) Count(kEarlyRows, rows_sent);
  }

  // Takes a row off the pending list (its delta sent). REQUIRES: stripe.mu.
  void ErasePending(Stripe& stripe, OpLog::iterator it) {
    size_t slot = it->second.slot;
    PendingRef last = stripe.pending.back();
    stripe.pending[slot] = last;
    last.entry->slot = slot;
    stripe.pending.pop_back();
    it->second.pending = false;
    it->second.importance = 0;
    it->second.delta.SetZero();
  }

  // Picks up to rows_per_message pending rows by the policy. Sampling keeps this independent of
  // how many rows are pending: no sort of all of them on every send.
  std::vector<std::pair<ClientTable*, RowId>> ChooseEarlyRows() {
    const CommOptions& comm = options_.comm;
    std::vector<std::pair<ClientTable*, RowId>> chosen;
    if (comm.policy == SendPolicy::kFifo) {
      std::lock_guard lock(fifo_mu_);
      while (!fifo_.empty() && chosen.size() < comm.rows_per_message) {
        chosen.push_back(fifo_.front());
        fifo_.pop_front();
      }
      return chosen;
    }
    std::vector<ClientTable*> tables;
    {
      std::shared_lock lock(tables_mu_);
      for (auto& [id, t] : tables_) tables.push_back(t.get());
    }
    if (tables.empty()) return chosen;
    struct Candidate {
      double importance;
      ClientTable* table;
      RowId row;
    };
    std::vector<Candidate> candidates;
    const int64_t pending = pending_rows_.load(std::memory_order_relaxed);
    if (comm.policy == SendPolicy::kRelativeMagnitude &&
        pending <= static_cast<int64_t>(comm.sample_size)) {
      // Few enough to look at all: the order is exact.
      for (ClientTable* t : tables) {
        for (Stripe& stripe : t->stripes) {
          std::lock_guard lock(stripe.mu);
          for (const PendingRef& ref : stripe.pending)
            candidates.push_back({ref.entry->importance, t, ref.row});
        }
      }
    } else {
      size_t want = comm.policy == SendPolicy::kRandom ? comm.rows_per_message : comm.sample_size;
      std::uniform_int_distribution<size_t> pick_table(0, tables.size() - 1),
          pick_stripe(0, kStripes - 1);
      for (size_t attempt = 0; attempt < 4 * want && candidates.size() < want; ++attempt) {
        ClientTable* t = tables[pick_table(rng_)];
        Stripe& stripe = t->stripes[pick_stripe(rng_)];
        std::lock_guard lock(stripe.mu);
        if (stripe.pending.empty()) continue;
        const PendingRef& ref =
            stripe
                .pending[std::uniform_int_distribution<size_t>(0, stripe.pending.size() - 1)(rng_)];
        candidates.push_back({ref.entry->importance, t, ref.row});
      }
    }
    if (comm.policy == SendPolicy::kRelativeMagnitude &&
        candidates.size() > comm.rows_per_message) {
      std::partial_sort(
          candidates.begin(), candidates.begin() + static_cast<ptrdiff_t>(comm.rows_per_message),
          candidates.end(),
          [](const Candidate& a, const Candidate& b) { return a.importance > b.importance; });
      candidates.resize(comm.rows_per_message);
    }
    for (const Candidate& c : candidates) chosen.emplace_back(c.table, c.row);
    // Sampling with replacement may pick a row twice; the second is skipped when sending.
    return chosen;
  }

  // Spends spare budget on pending rows. Runs on the I/O thread; skips the round if a clock
  // boundary is being flushed right now (it sends everything anyway).
  void SendEarly() {
    std::unique_lock lock(clock_mu_, std::try_to_lock);
    if (!lock.owns_lock()) return;
    auto chosen = ChooseEarlyRows();
    if (!chosen.empty()) SendPending(&chosen, -1);
  }

  void RecordStaleness(int64_t staleness) {
    uint64_t s = staleness > 0 ? static_cast<uint64_t>(staleness) : 0;
    RecordReads(1, s, s);
  }
  void RecordReads(uint64_t reads, uint64_t staleness_sum, uint64_t staleness_max) {
    Count(kReads, reads);
    Count(kStalenessSum, staleness_sum);
    CountMax(kStalenessMax, staleness_max);
  }

 public:
  // Reads dense rows into out[i * width ...]: the rows the cache can answer are copied at once,
  // the others are requested together (one message per server), then waited for in order; a
  // row that arrived meanwhile costs no further wait. Per row it takes one stripe lock (one per
  // run of rows in the same stripe) and no shared counter: the statistics are added once.
  template <typename T>
  Status ReadRows(int thread, TableId id, std::span<const RowId> rows, T* out) {
    TESSERA_RETURN_IF_ERROR(CheckThread(thread));
    auto t = Table(id, ValueTypeOf<T>());
    if (!t.ok()) return t.status();
    ClientTable& table = **t;
    if (table.spec.sparse) {
      return Status::InvalidArgument(
          fmt::format("table '{}' has sparse rows; use GetSparse", table.spec.name));
    }
    TESSERA_RETURN_IF_ERROR(CheckRows(table, rows));
    // Rows requested ahead (Prefetch) have often arrived by now and wait in a socket: if no
    // other thread is receiving, take them in first, so that the pass below finds them instead
    // of listing them as missing and waiting for each.
    if (std::unique_lock role(receive_mu_, std::try_to_lock); role.owns_lock()) {
      ReceiveRound(std::chrono::microseconds(0));
    }
    const size_t width = table.spec.width;
    const int64_t need = NeededClock(thread, table);
    const int64_t clock = thread_clocks_[thread].load(std::memory_order_relaxed);
    const auto num_servers = static_cast<uint32_t>(channels_.size());
    ReadScratch& scratch = ScratchOf(thread);
    auto& per_server = scratch.per_server;
    auto& missing = scratch.missing;
    auto& missing_was_valid = scratch.missing_was_valid;  // a stale copy (a wait for the bound)
    uint64_t hits = 0, taken = 0, staleness_sum = 0, staleness_max = 0;
    // Copies the entry if the bound holds. REQUIRES: its stripe's lock.
    auto try_copy = [&](CacheEntry& e, size_t i, uint32_t server) {
      if (!e.valid || e.failed()) return false;
      int64_t stamp = EffectiveStamp(e, server);
      if (stamp < need) return false;
      // Read again: keep a copy, so that only rows read at most once keep a reply alive.
      if (e.read) e.Own(table.spec);
      MarkRead(e);
      e.CopyDenseTo(out + i * width, width);
      uint64_t st = clock > stamp ? static_cast<uint64_t>(clock - stamp) : 0;
      staleness_sum += st;
      staleness_max = std::max(staleness_max, st);
      return true;
    };
    {
      StripeRunLock run;
      // Room is made at a run's first row not cached, not at its start: rows requested ahead
      // (Prefetch) are all found, and then the run costs one lookup per row instead of two
      // (MakeRoom's count, then the lookup). Rows before that one were found, so the count is
      // the same; eviction may then drop some of them: copied already, or looked up again
      // below. A stripe over its share (rows that came after their batch made room) is
      // trimmed at the start of the run, as before.
      bool room_made = false;
      BlockCursor cursor;
      for (size_t i = 0; i < rows.size(); ++i) {
        Stripe& stripe = table.StripeOf(rows[i]);
        if (run.Hold(stripe)) {
          cursor.Forget();
          room_made = table.stripe_capacity > 0 && stripe.cached_rows > table.stripe_capacity;
          if (room_made) MakeRoom(table, stripe, rows.subspan(i), cursor);
        }
        uint32_t server = ServerOfRow(id, rows[i], num_servers);
        CacheEntry* cached = FindEntry(table, stripe, rows[i], cursor);
        if (cached == nullptr) {
          if (!room_made) MakeRoom(table, stripe, rows.subspan(i), cursor);
          room_made = true;
          cached = &NewOrCachedEntry(table, stripe, rows[i], cursor);
        }
        CacheEntry& e = *cached;
        NoteIfOver(table, stripe, scratch.over);
        if (try_copy(e, i, server)) {
          ++hits;
          continue;
        }
        missing.push_back(i);
        missing_was_valid.push_back(e.valid);
        if (!e.subscribed && e.requested < need && !e.failed()) {
          e.requested = need;
          per_server[server].push_back(rows[i]);
        }
      }
    }
    for (uint32_t s = 0; s < num_servers; ++s) {
      if (!per_server[s].empty()) SendGet(s, id, per_server[s], need);
    }
    // Entries of this pass are found again below: eviction may drop those it copied.
    EvictIfOver(table, scratch.over);
    Count(kCacheHits, hits);
    // Waits for the first row still missing (a full Read: errors, time-out, statistics), then
    // takes every later one that has come meanwhile without waiting, one stripe lock per run
    // of them, and counts them once at the end: a third of a streaming reader's rows come this
    // way, and a lock and a counter per row were 7-10% of its user CPU.
    uint64_t stale_waits = 0, cold_misses = 0;
    auto count_taken = [&] {
      Count(kStaleWaits, stale_waits);
      Count(kColdMisses, cold_misses);
    };
    StripeRunLock run;
    BlockCursor cursor;
    for (size_t k = 0; k < missing.size(); ++k) {
      const size_t i = missing[k];
      const RowId row = rows[i];
      Stripe& stripe = table.StripeOf(row);
      if (run.Hold(stripe)) cursor.Forget();
      CacheEntry* e = FindEntry(table, stripe, row, cursor);
      if (e != nullptr && try_copy(*e, i, ServerOfRow(id, row, num_servers))) {
        ++(missing_was_valid[k] ? stale_waits : cold_misses);
        ++taken;
        continue;
      }
      run.Release();  // Read takes the lock, and waits
      const Status read = Read(thread, id, ValueTypeOf<T>(), false, row, [&](const RowValues& v) {
        auto cells = v.dense<T>();
        std::copy(cells.begin(), cells.end(), out + i * width);
      });
      if (!read.ok()) {
        count_taken();
        return read;
      }
    }
    count_taken();
    // Rows taken without a Read (a Read records its own): the hits and the missing rows that
    // came meanwhile.
    RecordReads(hits + taken, staleness_sum, staleness_max);
    return Status::Ok();
  }

  template <typename T>
  Result<ReadTicket> StartUncachedRead(int thread, TableId id, std::span<const RowId> rows,
                                       T* out) {
    TESSERA_RETURN_IF_ERROR(CheckThread(thread));
    auto t = Table(id, ValueTypeOf<T>());
    if (!t.ok()) return t.status();
    ClientTable& table = **t;
    if (table.spec.sparse) {
      return Status::InvalidArgument(fmt::format(
          "table '{}' has sparse rows; uncached reads are of dense rows only", table.spec.name));
    }
    TESSERA_RETURN_IF_ERROR(CheckRows(table, rows));
    const int64_t need = NeededClock(thread, table);
    const auto num_servers = static_cast<uint32_t>(channels_.size());
    const uint64_t ticket = next_request_id_.fetch_add(1);
    // Each server's share sized first: a reader streaming batches allocates each part once.
    std::vector<uint32_t> owner(rows.size());
    std::vector<size_t> share(num_servers, 0);
    for (size_t i = 0; i < rows.size(); ++i) {
      owner[i] = ServerOfRow(id, rows[i], num_servers);
      ++share[owner[i]];
    }
    std::vector<UncachedRequest> parts(num_servers);
    for (uint32_t s = 0; s < num_servers; ++s) {
      parts[s].rows.resize(share[s]);
      parts[s].positions.resize(share[s]);
      share[s] = 0;  // now: how many of its rows are in
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      UncachedRequest& part = parts[owner[i]];
      const size_t k = share[owner[i]]++;
      part.rows[k] = rows[i];
      part.positions[k] = i;
    }
    auto read = std::make_unique<UncachedRead>(
        UncachedRead{&table, reinterpret_cast<std::byte*>(out), table.spec.width * sizeof(T),
                     thread_clocks_[thread].load(std::memory_order_relaxed)});
    std::vector<std::pair<int, zmq::message_t>> frames;
    for (uint32_t s = 0; s < num_servers; ++s) {
      if (parts[s].rows.empty()) continue;
      const uint64_t request = next_request_id_.fetch_add(1) | kUncachedRequestBit;
      frames.emplace_back(s,
                          GetFrame(request, id, parts[s].rows, need, /*subscribe=*/false, nullptr));
      read->requests.push_back(request);
    }
    {
      std::lock_guard lock(uncached_mu_);
      for (size_t k = 0; k < frames.size(); ++k) {
        parts[frames[k].first].ticket = ticket;
        parts[frames[k].first].server = static_cast<uint32_t>(frames[k].first);
        uncached_requests_.emplace(read->requests[k], std::move(parts[frames[k].first]));
      }
      read->outstanding = static_cast<int>(frames.size());
      uncached_in_flight_.fetch_add(read->outstanding, std::memory_order_seq_cst);
      uncached_reads_.emplace(ticket, std::move(read));
    }
    WaitForFlushInProgress();  // after counting the requests in flight (see there)
    for (auto& [server, frame] : frames) Enqueue(server, std::move(frame));
    return ReadTicket{ticket};
  }

  Status WaitUncachedRead(ReadTicket ticket) {
    std::unique_lock lock(uncached_mu_);
    auto it = uncached_reads_.find(ticket.id);
    if (it == uncached_reads_.end() || it->second->waited) {
      return Status::InvalidArgument(fmt::format(
          "no uncached read {} to wait for (never started, or waited for already)", ticket.id));
    }
    UncachedRead* read = it->second.get();  // erased only below
    read->waited = true;
    const bool done = AwaitReady(
        lock, uncached_cv_, [&] { return read->outstanding == 0; },
        std::chrono::steady_clock::now() + options_.timeout);
    Status status = read->status;
    if (!done) {
      for (uint64_t request : read->requests) {
        if (uncached_requests_.erase(request) > 0)
          uncached_in_flight_.fetch_sub(1, std::memory_order_acq_rel);
      }
      status = Status::Unavailable(
          fmt::format("uncached read of table '{}': {} of its {} requests got no answer within "
                      "{} ms; abandoned",
                      read->table->spec.name, read->outstanding, read->requests.size(),
                      options_.timeout.count()));
    }
    uncached_reads_.erase(ticket.id);
    return status;
  }

 private:
  // Receiving. One thread at a time holds the receive role (receive_mu_): it waits in poll(2) on
  // the sockets' ZMQ_FDs and the waker, then receives everything waiting and handles it. Poll does
  // not touch the sockets, so callers may send on them meanwhile (under socket_mu_). A ZMQ_FD
  // signals only that the socket's state may have changed, and only once: after waking, the
  // receiver drains every socket, and a sender whose send may have consumed a signal checks the
  // socket and wakes the receiver if input is waiting (Send).
  //
  // The I/O thread holds the role while no caller waits. A caller that must wait for a reply
  // (Read, CallAll) takes the role itself, so the reply it waits for reaches it without a
  // hand-over through the I/O thread. The I/O thread parks meanwhile, and the caller wakes it
  // when it is done, so pushes nobody waits for are applied promptly (reads between clocks take
  // whatever has arrived; see docs/parameter-server.md for what leaving them queued cost).

  // Receives what the sockets hold (those `ready` marks, those just sent on, and those left
  // undrained; all if `ready` is null) and handles it; returns whether there was anything.
  // Sends what callers queued first. Each socket is read until it has nothing, which re-arms its
  // ZMQ_FD; a socket whose ZMQ_FD did not signal holds nothing (or a sender saw its signal and
  // woke the waker, which marks all), and skipping it saves the system calls of an empty read.
  // With `one_each`, a socket is read once: one that gave a message is left undrained (see
  // undrained_), and the empty read that re-arms it is saved for later, usually for never (see
  // ReceiveRound). REQUIRES: receive_mu_, and no stripe lock, calls_mu_ or ServerChannel lock
  // (handlers take them).
  bool DrainAndHandle(std::vector<std::pair<int, zmq::message_t>>* received,
                      const std::vector<bool>* ready = nullptr, bool one_each = false) {
    {
      std::lock_guard lock(socket_mu_);
      std::vector<bool>& used = ClearedSentOn();
      SendQueuedLocked(&used);
      for (int s = kCoordinator; s < static_cast<int>(server_sockets_.size()); ++s) {
        // A socket just sent on may have taken its own signal: drain it too.
        if (ready != nullptr && !(*ready)[s + 1] && !used[s + 1] && !undrained_[s + 1]) continue;
        zmq::message_t frame;
        bool got = false;
        while (SocketOf(s).recv(frame, zmq::recv_flags::dontwait)) {
          received->emplace_back(s, std::move(frame));
          got = true;
          if (one_each) break;
        }
        undrained_[s + 1] = one_each && got;
      }
    }
    // Handled without socket_mu_: handlers take stripe locks, and callers holding a stripe
    // lock may send.
    const bool any = !received->empty();
    for (auto& [source, frame] : *received) Handle(source, std::move(frame));
    received->clear();
    return any;
  }

  // The fds a receiver polls: the sockets' ZMQ_FDs (coordinator first), then input_waker_;
  // the I/O thread adds waker_ (see Poll).
  std::vector<pollfd> ReceiverFds() {
    std::vector<pollfd> fds;
    fds.push_back({coordinator_.get(zmq::sockopt::fd), POLLIN, 0});
    for (auto& s : server_sockets_) fds.push_back({s.get(zmq::sockopt::fd), POLLIN, 0});
    fds.push_back({input_waker_.poll_item().fd, POLLIN, 0});
    return fds;
  }

  // Polls `fds` and sets in `ready` (one flag per socket) which sockets to drain: those that
  // signaled, or all if input_waker_ fired (a sender took a socket's signal). `fds` is
  // ReceiverFds(), optionally followed by waker_ (the I/O thread's), or just waker_ (the parked
  // I/O thread, which has nothing to drain and passes no `ready`). A negative `timeout` waits
  // without a limit.
  void Poll(std::vector<pollfd>& fds, std::chrono::microseconds timeout, std::vector<bool>* ready) {
    const size_t sockets = server_sockets_.size() + 1;
    if (ready != nullptr) ready->assign(sockets, false);
    timespec ts{};
    if (timeout.count() >= 0) {
      ts.tv_sec = static_cast<time_t>(timeout.count() / 1000000);
      ts.tv_nsec = static_cast<long>(timeout.count() % 1000000) * 1000;
    }
    if (ppoll(fds.data(), fds.size(), timeout.count() >= 0 ? &ts : nullptr, nullptr) < 0 &&
        errno != EINTR) {
      log_->error("poll failed: {}", std::strerror(errno));
      if (ready != nullptr) ready->assign(sockets, true);
      return;
    }
    for (const pollfd& p : fds) {
      if ((p.revents & POLLIN) == 0) continue;
      if (p.fd == waker_.poll_item().fd) {
        waker_.Drain();
      } else if (p.fd == input_waker_.poll_item().fd) {
        input_waker_.Drain();
        if (ready != nullptr) ready->assign(sockets, true);
        return;
      }
    }
    if (ready != nullptr && fds.size() > sockets) {
      for (size_t i = 0; i < sockets; ++i) (*ready)[i] = (fds[i].revents & POLLIN) != 0;
    }
  }

  // One round of a caller's receiving: handles what is waiting, or else sleeps in poll until
  // something arrives (at most until `deadline`, and at most kMaxReceiveRound, so the role
  // changes hands now and then) and handles that. REQUIRES: as DrainAndHandle.
  void ReceiveRound(std::chrono::steady_clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(
        deadline - std::chrono::steady_clock::now());
    ReceiveRound(std::clamp(left + std::chrono::microseconds(1), std::chrono::microseconds(0),
                            std::chrono::microseconds(kMaxReceiveRound)));
  }
  // The same, waiting at most `wait` (0: takes only what has arrived). Stamped in
  // last_caller_round_ (see kParkInterval).
  // A caller reads one message per socket per round: when replies queue up (requests sent
  // ahead), each round takes the next one without a poll and without the empty read that
  // draining costs (ZeroMQ's getpid and mailbox poll), as a blocking zmq_recv would. Only once
  // a socket is found empty does the receiver poll. What a caller leaves unread is read by the
  // next round, or by the I/O thread once callers stop receiving (within about 1 ms, as for a
  // push that comes after a caller let the role go).
  void ReceiveRound(std::chrono::microseconds wait) {
    if (!DrainAndHandle(&round_received_, &none_ready_, /*one_each=*/true)) {
      // Returns at once if a socket has signaled (or input_waker_ has fired) already.
      Poll(receiver_fds_, wait, &round_ready_);
      DrainAndHandle(&round_received_, &round_ready_, /*one_each=*/true);
    }
    last_caller_round_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                             std::memory_order_relaxed);
  }

  // Waits until ready() (called with `lock` held) or `deadline`, receiving itself when it can
  // take the receive role, else sleeping on `cv` (which the receiver's handlers notify).
  // Returns ready(). REQUIRES: `lock` holds the mutex that ready()'s state and `cv` go with;
  // that mutex is released while receiving, so ready() must be re-checked by the caller's logic
  // only through this function.
  template <typename Ready>
  bool AwaitReady(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, Ready ready,
                  std::chrono::steady_clock::time_point deadline) {
    if (ready()) return true;
    while (!ready() && std::chrono::steady_clock::now() < deadline) {
      std::unique_lock role(receive_mu_, std::try_to_lock);
      if (!role.owns_lock() && io_has_role_.load(std::memory_order_acquire)) {
        // The I/O thread is in poll: ask it to hand the role over, and take it.
        role_wanted_.fetch_add(1, std::memory_order_acq_rel);
        waker_.Notify();
        lock.unlock();
        role.lock();
        role_wanted_.fetch_sub(1, std::memory_order_acq_rel);
        lock.lock();
        if (ready()) break;  // handled while we waited for the role
      }
      if (role.owns_lock()) {
        lock.unlock();
        ReceiveRound(deadline);
        role.unlock();
        lock.lock();
        continue;
      }
      // Another caller receives: its handlers wake us.
      cv.wait_until(lock, deadline);
    }
    // The role is let go without waking the I/O thread: a caller that reads batch after batch
    // takes it again at once, and receives its next reply itself. The parked I/O thread takes it
    // back once callers stop receiving (pushes nobody waits for must still be applied soon: a
    // read between clocks takes whatever has arrived; docs/parameter-server.md "Nodes").
    return ready();
  }

  // The I/O thread: receives while no caller does (see above), sends what callers queued while
  // another thread was using the sockets, and spends spare budget on early sends.
  void IoLoop() {
    std::vector<pollfd> fds = ReceiverFds();
    fds.push_back({waker_.poll_item().fd, POLLIN, 0});
    std::vector<pollfd> parked_fds = {fds.back()};  // waker_ only: input_waker_ is the receiver's
    std::vector<bool> ready(server_sockets_.size() + 1, true);
    const CommOptions& comm = options_.comm;
    // Up to 100 ms of budget (at least one full message) may build up: enough to catch up after
    // the thread was descheduled, little enough to keep any window within a few percent.
    TokenBucket budget(comm.bytes_per_second, std::max(comm.bytes_per_second * 0.1, 64.0 * 1024));
    std::vector<std::pair<int, zmq::message_t>> received;
    std::unique_lock role(receive_mu_);
    io_has_role_.store(true, std::memory_order_release);
    while (true) {
      const bool stopping = stop_io_.load(std::memory_order_acquire);
      if (role.owns_lock()) {
        DrainAndHandle(&received, &ready);
      } else {
        std::lock_guard lock(socket_mu_);
        std::vector<bool>& used = ClearedSentOn();
        SendQueuedLocked(&used);
        WakeReceiverIfInputLocked(used);
      }
      if (stopping) break;
      if (role.owns_lock() && role_wanted_.load(std::memory_order_acquire) > 0) {
        io_has_role_.store(false, std::memory_order_release);
        role.unlock();
      }
      // The role comes back once callers have stopped receiving: while one reads batch after
      // batch (and handles every message that arrives, pushes too), taking it would only make
      // that caller ask for it again.
      const auto since_caller_round =
          std::chrono::steady_clock::now() -
          std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(
              last_caller_round_.load(std::memory_order_relaxed)));
      const bool callers_idle = since_caller_round >= kParkInterval;
      if (!role.owns_lock() && role_wanted_.load(std::memory_order_acquire) == 0 && callers_idle &&
          role.try_lock()) {
        io_has_role_.store(true, std::memory_order_release);
        ready.assign(ready.size(), true);
        continue;  // drain before polling: messages may have waited
      }
      budget.Spend(static_cast<double>(unbudgeted_bytes_.exchange(0, std::memory_order_relaxed)));
      std::chrono::microseconds timeout(-1);
      if (comm.early_sends() && pending_rows_.load(std::memory_order_relaxed) > 0) {
        budget.Refill(TokenBucket::Clock::now());
        timeout = budget.TimeUntilPositive();
      }
      if (!role.owns_lock()) {
        // Until the interval after the latest caller round is over; a whole interval if it is
        // over already (a caller holds the role, or one asked for it).
        auto park =
            callers_idle
                ? kParkInterval
                : std::chrono::ceil<std::chrono::microseconds>(kParkInterval - since_caller_round);
        timeout = timeout.count() < 0 ? park : std::min(timeout, park);
      }
      if (role.owns_lock()) {
        Poll(fds, timeout, &ready);
      } else {
        Poll(parked_fds, timeout, nullptr);  // only waker_: nothing to drain
      }
      if (comm.early_sends()) {
        budget.Spend(static_cast<double>(unbudgeted_bytes_.exchange(0, std::memory_order_relaxed)));
        budget.Refill(TokenBucket::Clock::now());
        if (budget.has_tokens() && pending_rows_.load(std::memory_order_relaxed) > 0) SendEarly();
      }
    }
    if (role.owns_lock()) io_has_role_.store(false, std::memory_order_release);
  }

  void CompleteCall(uint64_t id, const Status& status) {
    std::lock_guard lock(calls_mu_);
    auto it = calls_.find(id);
    if (it == calls_.end()) return;
    if (!status.ok() && it->second.status.ok()) it->second.status = status;
    if (--it->second.outstanding == 0) calls_cv_.notify_all();
  }

  void Handle(int source, zmq::message_t frame) {
    auto parsed = IncomingMessage::Parse(std::move(frame));
    if (!parsed.ok()) {
      log_->error("dropping a bad message from {}: {}",
                  source == kCoordinator ? "the coordinator" : fmt::format("server {}", source),
                  parsed.status().ToString());
      return;
    }
    try {
      auto env = (*parsed)->envelope();
      uint64_t id = env.getRequestId();
      auto body = env.getBody();
      switch (body.which()) {
        case proto::Envelope::Body::ROWS:
          if (source != kCoordinator) OnRows(source, id, body.getRows(), *parsed);
          break;
        case proto::Envelope::Body::ERROR:
          OnError(source, id, StatusFromError(body.getError()));
          break;
        case proto::Envelope::Body::UPDATE_ACK:
          if (source != kCoordinator) OnApplied(source, body.getUpdateAck().getAppliedSeq());
          break;
        case proto::Envelope::Body::TABLE_ACK:
        case proto::Envelope::Body::MEMBERSHIP:
        case proto::Envelope::Body::BARRIER_RELEASE:
        case proto::Envelope::Body::LEAVE:
          CompleteCall(id, Status::Ok());
          break;
        default:
          log_->warn("ignoring an unexpected message from {}", source);
      }
    } catch (const kj::Exception& e) {
      log_->error("dropping a malformed message: {}", e.getDescription().cStr());
    }
  }

  void OnError(int source, uint64_t id, Status status) {
    std::string from = source == kCoordinator ? "coordinator" : fmt::format("server {}", source);
    status = Status(status.code(), fmt::format("{}: {}", from, status.message()));
    if ((id & kUncachedRequestBit) != 0) {
      FinishUncachedRequest(id, [&](UncachedRequest&, UncachedRead&) { return status; });
      return;
    }
    std::pair<TableId, std::vector<RowId>> failed_get;
    bool was_get = false;
    bool was_async = false;
    {
      std::lock_guard lock(calls_mu_);
      if (calls_.count(id) == 0) {
        if (auto it = pending_gets_.find(id); it != pending_gets_.end()) {
          failed_get = std::move(it->second);
          pending_gets_.erase(it);
          was_get = true;
        } else {
          log_->error("{}", status.ToString());
          if (async_error_.ok()) async_error_ = status;
          async_failed_.store(true, std::memory_order_release);
          was_async = true;
        }
      }
    }
    if (was_async) {
      // A flush waiting for acknowledgements stops waiting: the batches will not be applied.
      for (auto& ch : channels_) {
        std::lock_guard lock(ch->mu);
        ch->acked.notify_all();
      }
      return;
    }
    if (!was_get) {
      CompleteCall(id, status);
      return;
    }
    std::shared_lock tables_lock(tables_mu_);
    auto t = tables_.find(failed_get.first);
    if (t == tables_.end()) return;
    for (RowId row : failed_get.second) {
      Stripe& stripe = t->second->StripeOf(row);
      std::lock_guard lock(stripe.mu);
      // Entries a read waits on are never evicted: a missing one has no reader to tell.
      CacheEntry* entry = FindEntry(*t->second, stripe, row);
      if (entry == nullptr) continue;
      entry->error = std::make_unique<Status>(status);
      entry->requested = std::numeric_limits<int64_t>::min();
      stripe.cv.notify_all();
    }
  }

  // A reply to an uncached read: its rows go straight into the reader's buffer, with the
  // process's own updates the server has not applied yet added (as OnRows adds them to cached
  // rows). A reply that does not match its request fails the read.
  void OnUncachedRows(int server, uint64_t id, proto::RowBatch::Reader batch) {
    FinishUncachedRequest(id, [&](UncachedRequest& req, UncachedRead& read) {
      return FillUncached(server, batch, req, read);
    });
  }

  // Ends request `id` of an uncached read with `fill(request, read)`'s status, unless the read
  // was abandoned (its waiter timed out): then the reply is dropped.
  template <typename Fill>
  void FinishUncachedRequest(uint64_t id, Fill fill) {
    std::lock_guard lock(uncached_mu_);
    auto it = uncached_requests_.find(id);
    if (it == uncached_requests_.end()) {
      log_->debug("dropping the reply to abandoned uncached read request {}", id);
      return;
    }
    UncachedRead& read = *uncached_reads_.at(it->second.ticket);
    if (Status s = fill(it->second, read); !s.ok()) {
      log_->error("uncached read of table '{}': {}", read.table->spec.name, s.ToString());
      if (read.status.ok()) read.status = std::move(s);
    }
    uncached_requests_.erase(it);
    uncached_in_flight_.fetch_sub(1, std::memory_order_acq_rel);
    if (--read.outstanding == 0) uncached_cv_.notify_all();
  }

  // REQUIRES: uncached_mu_.
  Status FillUncached(int server, proto::RowBatch::Reader batch, const UncachedRequest& req,
                      const UncachedRead& read) {
    ClientTable& table = *read.table;
    auto dense = batch.getDense();
    if (static_cast<uint32_t>(server) != req.server || batch.getRows().size() != 0 ||
        dense.size() != 1 || dense[0].getTable() != table.spec.id ||
        dense[0].getRows().size() != req.rows.size()) {
      return Status::DataLoss(fmt::format(
          "server {} sent a reply that does not match the request for {} rows to server {}", server,
          req.rows.size(), req.server));
    }
    auto ids = dense[0].getRows();
    for (unsigned j = 0; j < ids.size(); ++j) {
      if (ids[j] != req.rows[j]) {
        return Status::DataLoss(fmt::format("server {} sent row {} where row {} was asked", server,
                                            ids[j], req.rows[j]));
      }
    }
    auto cells = DenseBlock::Check(dense[0].getValues(), ids.size(), table.spec);
    if (!cells.ok()) return cells.status();
    ServerChannel& ch = *channels_[server];
    StripeRunLock run;
    for (unsigned j = 0; j < ids.size(); ++j) {
      const RowId row = req.rows[j];
      std::byte* dst = read.out + req.positions[j] * read.row_bytes;
      cells->CopyRow(j, dst);
      // Own updates not in the reply, looked up as OnRows does (under the row's stripe lock, so
      // a delta on its way from the update log into an in-flight batch is in one of them).
      Stripe& stripe = table.StripeOf(row);
      run.Hold(stripe);
      if (ch.inflight_deltas.load(std::memory_order_relaxed) > 0) {
        std::lock_guard ch_lock(ch.mu);
        for (const InflightBatch& b : ch.inflight) {
          if (auto d = b.deltas.find(RowKey{table.spec.id, row}); d != b.deltas.end())
            d->second.AddDenseTo(dst);
        }
      }
      if (!stripe.pending.empty()) {
        if (auto o = stripe.oplog.find(row); o != stripe.oplog.end() && o->second.pending)
          o->second.delta.AddDenseTo(dst);
      }
    }
    const int64_t stamp = batch.getClock();
    const uint64_t staleness = read.clock > stamp ? static_cast<uint64_t>(read.clock - stamp) : 0;
    Count(kRowsReceived, ids.size());
    Count(kUncachedRows, ids.size());
    RecordReads(ids.size(), staleness * ids.size(), staleness);
    return Status::Ok();
  }

  // The server has applied our update batches up to `applied`: their in-flight records go, and
  // a flush waiting for room may go on.
  void OnApplied(int server, uint64_t applied) {
    ServerChannel& ch = *channels_[server];
    std::lock_guard lock(ch.mu);
    while (!ch.inflight.empty() && ch.inflight.front().seq <= applied) {
      ch.inflight_deltas.fetch_sub(ch.inflight.front().deltas.size(), std::memory_order_relaxed);
      ch.inflight.pop_front();
    }
    if (applied > ch.acked_seq) {
      ch.acked_seq = applied;
      ch.acked.notify_all();
    }
  }

  // `message` holds `batch`; it is taken over (and freed later) if cache entries borrow rows
  // of it (see CacheEntry::borrowed).
  void OnRows(int server, uint64_t id, proto::RowBatch::Reader batch,
              std::unique_ptr<IncomingMessage>& message) {
    ServerChannel& ch = *channels_[server];
    int64_t clock = batch.getClock();
    OnApplied(server, batch.getAppliedSeq());
    if ((id & kUncachedRequestBit) != 0) {
      OnUncachedRows(server, id, batch);
      AdvanceSeenClock(ch, clock);
      return;
    }
    if (id != 0) {
      std::lock_guard lock(calls_mu_);
      auto node = pending_gets_.extract(id);
      if (!node.empty() && spare_get_nodes_.size() < kMaxSpareGetNodes) {
        spare_get_nodes_.push_back(std::move(node));
      }
    } else {
      Count(kPushes);
    }
    auto rows = batch.getRows();
    auto dense = batch.getDense();
    // Readers are woken once per stripe after the whole batch is in: waking one per row makes
    // the reader and this thread trade the CPU for every row of the batch.
    std::vector<Stripe*>& touched = received_touched_;
    touched.clear();
    // A batch's rows come in runs of the same stripe (blocks of consecutive rows): the stripe's
    // lock is held across a run, not taken per row.
    StripeRunLock run;
    BlockCursor cursor;  // valid while `run` holds a lock
    uint64_t received = 0;
    // Rows of a reply that entries borrow share one hold on it each; the reply is created with
    // a hold for every dense row it has (and one for this call), and those not used are let go
    // at the end, so that each row costs no atomic operation here.
    SharedReply* shared = nullptr;
    uint32_t holds = 0, borrowed = 0;
    struct ReleaseUnused {
      SharedReply*& shared;
      uint32_t& holds;
      uint32_t& borrowed;
      ~ReleaseUnused() {
        if (shared != nullptr) shared->Release(holds - borrowed);
      }
    } release_unused{shared, holds, borrowed};
    // Stores one row; `assign(value)` overwrites a cache entry's value with the row's cells;
    // `cells`, if not null, are the row's cells in the reply, which the entry may borrow instead.
    auto take = [&](ClientTable& table, RowId row, auto assign, const std::byte* cells) {
      if (row >= table.spec.num_rows) {
        log_->error("server {} sent row {} of table '{}' ({} rows)", server, row, table.spec.name,
                    table.spec.num_rows);
        return;
      }
      ++received;
      Stripe& stripe = table.StripeOf(row);
      if (run.Hold(stripe)) {
        touched.push_back(&stripe);
        cursor.Forget();
      }
      // A push of a row evicted since (its Unsubscribe may still be on the way) is dropped; a
      // reply to a request is kept even if the row was evicted while the request was in flight.
      const uint64_t last_key = cursor.key;
      CacheEntry* found = FindEntry(table, stripe, row, cursor);
      // A block's entries were last touched when its rows were requested and are long out of
      // the CPU's caches: asked for together at its first row, their misses overlap rather than
      // come one row after another.
      if (cursor.key != last_key && cursor.block != nullptr) {
        PrefetchBlock(cursor.block, table.block_rows());
      }
      if (found == nullptr) {
        if (id == 0) return;
        found = &NewOrCachedEntry(table, stripe, row, cursor);
      }
      CacheEntry& entry = *found;
      // Updates of ours the server has not applied yet, then those not even sent, are added to
      // the row (read-my-writes); only a row without any may be borrowed.
      const RowKey key{table.spec.id, row};
      std::unique_lock ch_lock(ch.mu, std::defer_lock);
      bool add_inflight = false;
      if (ch.inflight_deltas.load(std::memory_order_relaxed) > 0) {
        ch_lock.lock();
        for (const InflightBatch& b : ch.inflight) add_inflight |= b.deltas.contains(key);
      }
      const PendingRow* pending = nullptr;
      // No row of the stripe pending, no lookup (a stream of rows that are only read).
      if (!stripe.pending.empty()) {
        if (auto o = stripe.oplog.find(row); o != stripe.oplog.end() && o->second.pending)
          pending = &o->second;
      }
      entry.Unborrow();
      // Pushes are copied: they refresh rows read before, which a second read would copy.
      if (cells != nullptr && id != 0 && !add_inflight && pending == nullptr) {
        if (shared == nullptr) {
          shared = new SharedReply(std::move(message), holds, replies_held_);
        }
        entry.borrowed = cells;
        entry.reply = shared;
        ++borrowed;
      } else {
        // Overwritten in place: a refreshed row keeps its storage.
        assign(entry.value());
        if (add_inflight) {
          for (const InflightBatch& b : ch.inflight) {
            if (auto d = b.deltas.find(key); d != b.deltas.end()) entry.value().Add(d->second);
          }
        }
        if (pending != nullptr) entry.value().Add(pending->delta);
      }
      if (!entry.valid) entry.referenced = true;  // kept until read (see CacheEntry)
      entry.valid = true;
      entry.subscribed = true;
      entry.stamp = std::max(entry.stamp, clock);
    };
    // No stripe lock while looking up a table.
    auto find_table = [&](TableId tid) {
      run.Release();
      ClientTable* table = FindClientTable(tid);
      if (table == nullptr) log_->error("server {} sent rows of unknown table {}", server, tid);
      return table;
    };
    ClientTable* table = nullptr;  // a batch's rows are mostly of one table: look it up once
    for (auto wire : rows) {
      if (table == nullptr || table->spec.id != wire.getTable()) {
        table = find_table(wire.getTable());
        if (table == nullptr) continue;
      }
      if (Status s = RowValues::CheckProto(wire.getValues(), table->spec); !s.ok()) {
        log_->error("server {} sent a bad row: {}", server, s.ToString());
        continue;
      }
      auto values = wire.getValues();
      take(
          *table, wire.getRow(), [&](RowValues& v) { v.AssignProto(values, table->spec); },
          nullptr);
    }
    if (id != 0) {
      for (auto block : dense) holds += block.getRows().size();
      if (holds > 0) ++holds;  // this call's own
    }
    for (auto block : dense) {
      table = find_table(block.getTable());
      if (table == nullptr) continue;
      auto ids = block.getRows();
      auto cells = DenseBlock::Check(block.getValues(), ids.size(), table->spec);
      if (!cells.ok()) {
        log_->error("server {} sent a bad block of rows: {}", server, cells.status().ToString());
        continue;
      }
      for (unsigned i = 0; i < ids.size(); ++i) {
        const std::byte* row_cells = cells->row(i);
        take(
            *table, ids[i], [&](RowValues& v) { v.AssignDense(row_cells, table->spec); },
            row_cells);
      }
    }
    Count(kRowsReceived, received);
    run.Release();
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (Stripe* stripe : touched) stripe->cv.notify_all();
    AdvanceSeenClock(ch, clock);
  }

  // Rows of this server that did not come are unchanged as of `clock` (a server sends the pushes
  // of a clock before anything it sends later): wake readers of them.
  void AdvanceSeenClock(ServerChannel& ch, int64_t clock) {
    if (clock > ch.seen_clock.load()) {
      ch.seen_clock.store(clock, std::memory_order_release);
      std::shared_lock tables_lock(tables_mu_);
      for (auto& [tid, table] : tables_) {
        for (Stripe& stripe : table->stripes) {
          std::lock_guard lock(stripe.mu);
          stripe.cv.notify_all();
        }
      }
    }
  }

  ClientOptions options_;
  zmq::context_t& context_;
  zmq::socket_t coordinator_;
  std::vector<zmq::socket_t> server_sockets_;  // used only by the I/O thread after Start
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

  std::mutex socket_mu_;  // held by whoever uses the sockets after Start: see Send, IoLoop
  // The receive role (see DrainAndHandle). Taken before stripe locks, calls_mu_ and channel
  // locks, never while holding one.
  std::mutex receive_mu_;
  std::atomic<bool> io_has_role_{false};  // the I/O thread holds receive_mu_
  std::atomic<int> role_wanted_{0};       // callers asking the I/O thread for the role
  // When a caller last ended a receive round (steady clock ticks; see kParkInterval).
  std::atomic<std::chrono::steady_clock::rep> last_caller_round_{0};
  std::vector<pollfd> receiver_fds_;  // ReceiverFds(), for callers holding the role (guarded by it)
  // Sockets a caller's round read a message from and left without reading them empty (index
  // s + 1; guarded by socket_mu_): their ZMQ_FD does not signal what they still hold, so every
  // receiver reads them before it polls.
  std::vector<bool> undrained_;
  std::vector<bool> none_ready_;  // no socket signaled: a DrainAndHandle mask (fixed after Start)
  // Scratch kept across calls, so that a round of receiving allocates nothing: which sockets a
  // call sent on (guarded by socket_mu_), and a caller's round's poll result and messages
  // (guarded by the receive role, receive_mu_).
  std::vector<bool> sent_on_;
  std::vector<bool> round_ready_;
  std::vector<std::pair<int, zmq::message_t>> round_received_;
  std::vector<Stripe*> received_touched_;     // OnRows: stripes a batch filled (the receive role's)
  tbb::concurrent_queue<Outbound> outbound_;  // messages waiting for socket_mu_
  std::atomic<uint64_t> unbudgeted_bytes_{0};  // sent, not yet spent from the I/O thread's budget
  std::atomic<bool> stop_io_{false};
  std::atomic<int64_t> pending_rows_{0};  // rows in the update logs of all stripes
  std::mutex fifo_mu_;
  std::deque<std::pair<ClientTable*, RowId>> fifo_;  // kFifo: rows in the order they became pending
  std::mt19937_64 rng_{0x7e55e7a};                   // I/O thread only
  Waker waker_;        // the I/O thread's: queued sends, pending updates, the receive role
  Waker input_waker_;  // the receiver's: a socket has input whose signal a sender took
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

  std::array<PaddedCounter, kNumCounters> counters_{};
  std::shared_ptr<spdlog::logger> log_;
  // Buffers of large update batches, built by the flushing thread and freed by ZeroMQ's I/O
  // thread once sent: allocated per batch, glibc trims the heap after the frees and faults pages
  // in for the next ones, as it did for a server's answers (inc +6% to +11%).
  std::shared_ptr<FramePool> frame_pool_ = FramePool::Create(size_t{16} << 20);
};

Client::Client(ClientOptions options, zmq::context_t& context)
    : impl_(std::make_unique<Impl>(std::move(options), context)) {}
Client::~Client() = default;
Status Client::Start() { return impl_->Start(); }
Status Client::CreateTable(const TableSpec& spec) { return impl_->CreateTable(spec); }
const TableSpec* Client::FindTable(TableId id) const { return impl_->FindTableSpec(id); }
Status Client::Prefetch(int thread, TableId table, std::span<const RowId> rows) {
  return impl_->Prefetch(thread, table, rows);
}
Status Client::WaitUncachedRead(ReadTicket ticket) { return impl_->WaitUncachedRead(ticket); }
Status Client::Clock(int thread) { return impl_->Clock(thread); }
int64_t Client::clock(int thread) const { return impl_->clock(thread); }
Status Client::Barrier() { return impl_->Barrier(); }
Status Client::Leave() { return impl_->Leave(); }
ClientStats Client::stats() const { return impl_->stats(); }

template <typename T>
Status Client::Get(int thread, TableId table, RowId row, std::vector<T>* out) {
  return impl_->Read(thread, table, ValueTypeOf<T>(), false, row, [&](const RowValues& v) {
    auto cells = v.dense<T>();
    out->assign(cells.begin(), cells.end());
  });
}

template <typename T>
Status Client::GetRows(int thread, TableId table, std::span<const RowId> rows, std::span<T> out) {
  const TableSpec* spec = impl_->FindTableSpec(table);
  if (spec != nullptr && out.size() != rows.size() * spec->width) {
    return Status::InvalidArgument(
        fmt::format("GetRows of {} rows of table '{}' needs {} values of room, not {}", rows.size(),
                    spec->name, rows.size() * spec->width, out.size()));
  }
  return impl_->ReadRows<T>(thread, table, rows, out.data());
}

template <typename T>
Result<ReadTicket> Client::StartUncachedRead(int thread, TableId table, std::span<const RowId> rows,
                                             std::span<T> out) {
  const TableSpec* spec = impl_->FindTableSpec(table);
  if (spec != nullptr && out.size() != rows.size() * spec->width) {
    return Status::InvalidArgument(
        fmt::format("StartUncachedRead of {} rows of table '{}' needs {} values of room, not {}",
                    rows.size(), spec->name, rows.size() * spec->width, out.size()));
  }
  return impl_->StartUncachedRead<T>(thread, table, rows, out.data());
}

template <typename T>
Status Client::GetSparse(int thread, TableId table, RowId row,
                         std::vector<std::pair<uint32_t, T>>* out) {
  return impl_->Read(thread, table, ValueTypeOf<T>(), true, row, [&](const RowValues& v) {
    auto cols = v.columns();
    auto vals = v.values<T>();
    out->resize(cols.size());
    for (size_t i = 0; i < cols.size(); ++i) (*out)[i] = {cols[i], vals[i]};
  });
}

template <typename T>
Status Client::Inc(TableId table, RowId row, uint32_t column, T delta) {
  return impl_->Update(
      table, ValueTypeOf<T>(), row,
      [&](const TableSpec& spec) {
        if (column < spec.width) return Status::Ok();
        return Status::OutOfRange(fmt::format("column {} out of range for table '{}' (width {})",
                                              column, spec.name, spec.width));
      },
      [&](RowValues& v) { v.AddCell<T>(column, delta); },
      [&](const RowValues* base) {
        double d = std::abs(static_cast<double>(delta));
        double b = base == nullptr ? 0.0 : std::abs(base->CellAsDouble(column));
        return b == 0 ? d : d / b;
      });
}

template <typename T>
Status Client::IncRow(TableId table, RowId row, std::span<const T> delta) {
  return impl_->Update(
      table, ValueTypeOf<T>(), row,
      [&](const TableSpec& spec) {
        if (!spec.sparse && delta.size() == spec.width) return Status::Ok();
        return Status::InvalidArgument(
            fmt::format("IncRow on table '{}' needs a dense row of {} values, got {}", spec.name,
                        spec.width, delta.size()));
      },
      [&](RowValues& v) {
        auto cells = v.mutable_dense<T>();
        AddCells(cells.data(), delta.data(), cells.size());
      },
      [&](const RowValues* base) { return RowImportance(delta.data(), delta.size(), base); });
}

template <typename T>
Status Client::IncRows(TableId table, std::span<const RowId> rows, std::span<const T> deltas) {
  return impl_->UpdateRows<T>(table, rows, deltas);
}

#define TESSERA_INSTANTIATE(T)                                                                     \
  template Status Client::Get<T>(int, TableId, RowId, std::vector<T>*);                            \
  template Status Client::GetRows<T>(int, TableId, std::span<const RowId>, std::span<T>);          \
  template Result<ReadTicket> Client::StartUncachedRead<T>(int, TableId, std::span<const RowId>,   \
                                                           std::span<T>);                          \
  template Status Client::GetSparse<T>(int, TableId, RowId, std::vector<std::pair<uint32_t, T>>*); \
  template Status Client::Inc<T>(TableId, RowId, uint32_t, T);                                     \
  template Status Client::IncRow<T>(TableId, RowId, std::span<const T>);                           \
  template Status Client::IncRows<T>(TableId, std::span<const RowId>, std::span<const T>);
TESSERA_INSTANTIATE(float)
TESSERA_INSTANTIATE(double)
TESSERA_INSTANTIATE(int32_t)
TESSERA_INSTANTIATE(int64_t)
#undef TESSERA_INSTANTIATE

}  // namespace tessera
