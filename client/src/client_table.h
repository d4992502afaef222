// A table as the client holds it: its rows spread over kStripes stripes, each with one lock over
// the stripe's cache entries (row_cache.h) and update log (update_log.h), and the lookups of a
// row's cache entry.
//
// Contract: a row belongs to the stripe of its block (ClientTable::StripeOf); everything about
// the row on this client (its cache entry, its pending delta, readers waiting for it) is guarded
// by that stripe's mutex. Tables are created once and live as long as the client.
#ifndef TESSERA_CLIENT_SRC_CLIENT_TABLE_H_
#define TESSERA_CLIENT_SRC_CLIENT_TABLE_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "row_cache.h"
#include "tessera/table/row_index.h"
#include "tessera/table/table_spec.h"
#include "update_log.h"

namespace tessera::client_internal {

// Rows are spread over stripes, each with its own lock, so threads touching different rows
// rarely contend.
constexpr size_t kStripes = 64;

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
  // run of consecutive rows that fits the cache fits its stripes. Not larger than 8 rows: larger
  // blocks made cold reads slower (bench/README.md, ps_bench tuning notes). The cache keeps its
  // entries by the same blocks (EntryBlock).
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
  const Stripe& StripeOf(RowId row) const { return stripes[BlockOf(row) % kStripes]; }
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

// The block of `row` (null if none of its rows is cached), through `cursor`.
// REQUIRES: stripe.mu; `cursor` valid for it (see BlockCursor).
// Inlined (as the index lookups it replaces were): it runs several times per row read.
[[gnu::always_inline]] inline EntryBlock* FindBlock(const ClientTable& table, Stripe& stripe,
                                                    RowId row, BlockCursor& cursor) {
  const uint64_t key = table.BlockOf(row);
  if (key != cursor.key) {
    cursor.key = key;
    cursor.block = stripe.cache.Find(ClientTable::IndexKeyOf(key));
  }
  return cursor.block;
}
// The row's cache entry, or null if it is not cached. REQUIRES: as FindBlock.
[[gnu::always_inline]] inline CacheEntry* FindEntry(const ClientTable& table, Stripe& stripe,
                                                    RowId row, BlockCursor& cursor) {
  EntryBlock* block = FindBlock(table, stripe, row, cursor);
  const size_t k = table.SlotOf(row);
  return block != nullptr && ((block->present >> k) & 1) != 0 ? &block->rows[k] : nullptr;
}
inline CacheEntry* FindEntry(const ClientTable& table, Stripe& stripe, RowId row) {
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
inline CacheEntry& NewOrCachedEntry(ClientTable& table, Stripe& stripe, RowId row,
                                    BlockCursor& cursor) {
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
inline CacheEntry& NewOrCachedEntry(ClientTable& table, Stripe& stripe, RowId row) {
  BlockCursor cursor;
  return NewOrCachedEntry(table, stripe, row, cursor);
}

// The CLOCK bit after a read (see CacheEntry::referenced). REQUIRES: the entry's stripe lock.
inline void MarkRead(CacheEntry& e) {
  e.referenced = e.read;
  e.read = true;
}

// Lists the stripe in `over` if it holds more rows than its share (rows waiting for replies
// may not go when room is made), for an EvictIfOver once the caller holds no stripe lock: a
// batch whose stripes stay within their share takes no lock for it. REQUIRES: stripe.mu.
inline void NoteIfOver(const ClientTable& table, Stripe& stripe, std::vector<Stripe*>& over) {
  if (table.stripe_capacity > 0 && stripe.cached_rows > table.stripe_capacity &&
      (over.empty() || over.back() != &stripe)) {
    over.push_back(&stripe);
  }
}

}  // namespace tessera::client_internal

#endif  // TESSERA_CLIENT_SRC_CLIENT_TABLE_H_
