// The client's row cache, one entry per cached row: what a cached row holds, how entries are
// grouped into blocks of consecutive rows, and the CLOCK queue eviction walks.
//
// Contract: an entry holds the server's value of a row plus this process's own updates the value
// does not include yet, valid for reads at clocks up to `stamp` (or the server's pushes, when
// `subscribed`). A dense row answered by a server may be borrowed from the reply it came in
// (SharedReply) until it is read a second time or changed. Entries are grouped by blocks of up
// to kMaxBlockRows consecutive rows (EntryBlock), looked up, queued and evicted per block.
// Nothing here locks: every entry belongs to a stripe (client_table.h), whose mutex guards it.
#ifndef TESSERA_CLIENT_SRC_ROW_CACHE_H_
#define TESSERA_CLIENT_SRC_ROW_CACHE_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "tessera/common/status.h"
#include "tessera/table/row_values.h"
#include "tessera/table/table_spec.h"
#include "tessera/transport/message.h"

namespace tessera::client_internal {

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
// A function of its own (row_cache.cc), so that the TSan stage can tell these reads apart
// (tests/sanitizers/tsan.supp): the reply's bytes were written by its sender and handed over by
// libzmq, whose synchronization ThreadSanitizer cannot see.
[[gnu::noinline]] void CopyFromReply(const std::byte* cells, size_t bytes, void* out);

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
inline void PrefetchBlock(const EntryBlock* b, size_t rows) {
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

}  // namespace tessera::client_internal

#endif  // TESSERA_CLIENT_SRC_ROW_CACHE_H_
