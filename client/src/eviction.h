// Eviction from a client table's cache under a capacity (ClientOptions::cache_rows): CLOCK over
// blocks of rows, per stripe, each stripe holding at most its share of the capacity.
//
// Contract: a row may be dropped only once it has been answered, with no error pending, no
// reader waiting on it and its CLOCK bit clear (CacheEntry::referenced); an evicted row loses
// nothing (its pending delta stays in the update log, its in-flight deltas in the server
// channels). EvictBlocks leaves the dropped rows, with their servers, in Stripe::evicted for the
// caller to unsubscribe. Every function REQUIRES the stripe's mutex unless it says otherwise.
#ifndef TESSERA_CLIENT_SRC_EVICTION_H_
#define TESSERA_CLIENT_SRC_EVICTION_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "client_table.h"

namespace tessera::client_internal {

// How many rows the stripe must drop so that the new rows of the run of `rows` that starts here
// (those in this stripe) fit without going over its share; 0 if they fit, or without a capacity.
// Dropping them before the rows are added lets the new rows take the blocks just dropped, which
// the sweep has brought into the CPU's caches (RowIndex reuses the last erased entry first).
// REQUIRES: as FindBlock.
size_t RoomNeeded(const ClientTable& table, Stripe& stripe, std::span<const RowId> rows,
                  BlockCursor& cursor);

// Under a capacity, prefetches what making room for `rows` will look at first in each of their
// stripes (Stripe::victim_hints). Takes no lock: the hints are only addresses to prefetch.
void PrefetchVictims(const ClientTable& table, std::span<const RowId> rows);

// Drops at least `target` rows of the stripe (fewer if that many may not go; whole blocks, so up
// to a block's rows more), appending each to stripe.evicted with its server (of `num_servers`).
// Returns how many rows were dropped. Cursors into the stripe are invalid after it.
size_t EvictBlocks(ClientTable& table, Stripe& stripe, size_t target, uint32_t num_servers);

}  // namespace tessera::client_internal

#endif  // TESSERA_CLIENT_SRC_EVICTION_H_
