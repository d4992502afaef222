#include "eviction.h"

#include <algorithm>
#include <vector>

#include "tessera/table/wire.h"

namespace tessera::client_internal {

size_t RoomNeeded(const ClientTable& table, Stripe& stripe, std::span<const RowId> rows,
                  BlockCursor& cursor) {
  if (table.stripe_capacity == 0) return 0;
  // Counting only the rows not cached keeps a run of hits from dropping rows for nothing.
  size_t fresh = 0;
  for (size_t i = 0; i < rows.size() && &table.StripeOf(rows[i]) == &stripe; ++i) {
    if (FindEntry(table, stripe, rows[i], cursor) == nullptr) ++fresh;
  }
  if (stripe.cached_rows + fresh <= table.stripe_capacity) return 0;
  return stripe.cached_rows + fresh - table.stripe_capacity;
}

void PrefetchVictims(const ClientTable& table, std::span<const RowId> rows) {
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

// Callers drop a quarter of the stripe's capacity at a time (at least one row; EvictIfOver), so
// that the sweep and the bookkeeping are paid per batch. CLOCK over blocks: the hand skips a
// block (and clears its rows' bits) if any of its rows has its bit set (see
// CacheEntry::referenced) or may not be dropped: not yet answered, with a pending error, or with
// reads waiting on it. A row that has been answered has no request in flight (only rows never
// answered are requested; later values come as pushes), so an eviction never races a reply.
size_t EvictBlocks(ClientTable& table, Stripe& stripe, size_t target, uint32_t num_servers) {
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
  dropped.clear();
  return evicted.size();
}

}  // namespace tessera::client_internal
