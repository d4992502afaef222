// Reads through the process cache: Get, GetSparse, GetRows and Prefetch, the requests they send,
// and the eviction they cause (see client_impl.h for the parts).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <vector>

#include "client_impl.h"
#include "eviction.h"
#include "tessera/table/wire.h"

namespace tessera {

using client_internal::EvictBlocks;
using client_internal::kBlockedReads;
using client_internal::kCacheHits;
using client_internal::kColdMisses;
using client_internal::kEvictions;
using client_internal::kGetRequests;
using client_internal::kMaxForgetRows;
using client_internal::kMaxSpareGetNodes;
using client_internal::kStaleWaits;
using client_internal::PrefetchVictims;
using client_internal::RoomNeeded;
using client_internal::TakeForgetFramesLocked;

namespace {

// Marks the end of a wait on a cache entry (see Read).
struct WaitPin {
  client_internal::CacheEntry* entry = nullptr;
  ~WaitPin() {
    if (entry != nullptr) --entry->waiters;
  }
};

}  // namespace

// Reads one row under the SSP bound and hands the cached value to `copy_out` under the lock.
template <typename CopyOut>
Status Client::Impl::Read(int thread, TableId id, ValueType type, bool sparse, RowId row,
                          CopyOut copy_out) {
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
      if (waited) counters_.Uncount(kBlockedReads);
      return s;
    }
    if (int64_t stamp = EffectiveStamp(entry, server); entry.valid && stamp >= need) {
      // Single-row reads hand out the row as a RowValues: a borrowed one is copied first.
      entry.Own(table.spec);
      MarkRead(entry);
      copy_out(entry.value());
      counters_.Count(waited ? kind : kCacheHits);
      counters_.RecordStaleness(thread_clocks_[thread].load(std::memory_order_relaxed) - stamp);
      if (waited) counters_.Uncount(kBlockedReads);
      return Status::Ok();
    }
    if (!waited) {
      ++entry.waiters;  // eviction leaves the entry alone until this read is done
      pin.entry = &entry;
      counters_.Count(kBlockedReads);
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
    if (!role_.AwaitReady(lock, stripe.cv, changed, deadline)) {
      counters_.Uncount(kBlockedReads);
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
client_internal::ReadScratch& Client::Impl::ScratchOf(int thread) {
  ReadScratch& s = read_scratch_[static_cast<size_t>(thread)];
  s.per_server.resize(channels_.size());
  for (auto& rows : s.per_server) rows.clear();
  s.over.clear();
  s.missing.clear();
  s.missing_was_valid.clear();
  return s;
}

Status Client::Impl::Prefetch(int thread, TableId id, std::span<const RowId> rows) {
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

// Reads dense rows into out[i * width ...]: the rows the cache can answer are copied at once,
// the others are requested together (one message per server), then waited for in order; a
// row that arrived meanwhile costs no further wait. Per row it takes one stripe lock (one per
// run of rows in the same stripe) and no shared counter: the statistics are added once.
template <typename T>
Status Client::Impl::ReadRows(int thread, TableId id, std::span<const RowId> rows, T* out) {
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
  role_.ReceiveWaitingIfIdle();
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
  counters_.Count(kCacheHits, hits);
  // Waits for the first row still missing (a full Read: errors, time-out, statistics), then
  // takes every later one that has come meanwhile without waiting, one stripe lock per run
  // of them, and counts them once at the end: a third of a streaming reader's rows come this
  // way, and a lock and a counter per row were 7-10% of its user CPU.
  uint64_t stale_waits = 0, cold_misses = 0;
  auto count_taken = [&] {
    counters_.Count(kStaleWaits, stale_waits);
    counters_.Count(kColdMisses, cold_misses);
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
  counters_.RecordReads(hits + taken, staleness_sum, staleness_max);
  return Status::Ok();
}

// The request carries the table's pending unsubscriptions for this server (see
// ServerChannel::forget). REQUIRES: no stripe lock held (see WaitForFlushInProgress).
void Client::Impl::SendGet(uint32_t server, TableId table, std::span<const RowId> rows,
                           int64_t min_clock) {
  // A server answers at most kMaxReadReplyBytes per request: more rows go in several.
  if (const ClientTable* t = rows.size() > 1 ? FindClientTable(table) : nullptr; t != nullptr) {
    const uint64_t most = t->spec.MaxRowsPerRead();
    while (rows.size() > most) {
      SendGet(server, table, rows.first(most), min_clock);
      rows = rows.subspan(most);
    }
  }
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
zmq::message_t Client::Impl::GetFrame(uint64_t id, TableId table, std::span<const RowId> rows,
                                      int64_t min_clock, bool subscribe,
                                      const std::vector<RowId>* forget) {
  const size_t words = rows.size() + (forget != nullptr ? forget->size() : 0) + 24;
  OutgoingMessage msg(options_.rank, id, static_cast<unsigned>(words));
  auto get = msg.envelope().getBody().initGet();
  get.setTable(table);
  get.setMinClock(min_clock);
  get.setSubscribe(subscribe);
  get.setSoleThread(options_.num_threads == 1);
  auto list = get.initRows(static_cast<unsigned>(rows.size()));
  for (unsigned i = 0; i < rows.size(); ++i) list.set(i, rows[i]);
  if (forget != nullptr) {
    auto out = get.initUnsubscribe(static_cast<unsigned>(forget->size()));
    for (unsigned i = 0; i < forget->size(); ++i) out.set(i, (*forget)[i]);
  }
  counters_.Count(kGetRequests, rows.size());
  return msg.ToFrame();
}

// Evicts if the stripe holds more rows than its share. Entries may go: the caller holds no
// reference to an entry it has not pinned (WaitPin) or that is not waiting for its reply.
// REQUIRES: stripe.mu.
void Client::Impl::EvictIfOver(ClientTable& table, Stripe& stripe) {
  if (table.stripe_capacity > 0 && stripe.cached_rows > table.stripe_capacity)
    Evict(table, stripe, std::max<size_t>(1, table.stripe_capacity / 4));
}

// EvictIfOver for each of `stripes` (consecutive duplicates allowed), each under its lock.
void Client::Impl::EvictIfOver(ClientTable& table, const std::vector<Stripe*>& stripes) {
  if (table.stripe_capacity == 0) return;
  for (size_t i = 0; i < stripes.size(); ++i) {
    if (i > 0 && stripes[i] == stripes[i - 1]) continue;
    std::lock_guard lock(stripes[i]->mu);
    EvictIfOver(table, *stripes[i]);
  }
}

// Under a capacity, drops rows of a full stripe so that the new rows of the run of `rows` that
// starts here fit without going over (RoomNeeded). Forgets `cursor` if it evicts. REQUIRES: as
// FindBlock.
void Client::Impl::MakeRoom(ClientTable& table, Stripe& stripe, std::span<const RowId> rows,
                            BlockCursor& cursor) {
  if (const size_t drop = RoomNeeded(table, stripe, rows, cursor); drop > 0) {
    Evict(table, stripe, drop);
    cursor.Forget();
  }
}

// Drops at least `target` rows of the stripe (EvictBlocks); the servers learn of the dropped rows
// through their channels' `forget` lists. REQUIRES: stripe.mu.
void Client::Impl::Evict(ClientTable& table, Stripe& stripe, size_t target) {
  const auto num_servers = static_cast<uint32_t>(channels_.size());
  counters_.Count(kEvictions, EvictBlocks(table, stripe, target, num_servers));
  for (uint32_t s = 0; s < num_servers; ++s) {
    ServerChannel& ch = *channels_[s];
    std::lock_guard lock(ch.forget_mu);
    std::vector<RowId>& forget = ch.forget[table.spec.id];
    for (auto [server, row] : stripe.evicted) {
      if (server != s) continue;
      forget.push_back(row);
      ++ch.forget_rows;
    }
    if (ch.forget_rows >= kMaxForgetRows) SendForgetLocked(s);
  }
  stripe.evicted.clear();
}

// Sends every pending unsubscription of server `s`, one message per table.
// REQUIRES: channels_[s]->forget_mu.
void Client::Impl::SendForgetLocked(uint32_t s) {
  for (zmq::message_t& frame : TakeForgetFramesLocked(*channels_[s], options_.rank)) {
    Enqueue(static_cast<int>(s), std::move(frame));
  }
}

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
Status Client::GetSparse(int thread, TableId table, RowId row,
                         std::vector<std::pair<uint32_t, T>>* out) {
  return impl_->Read(thread, table, ValueTypeOf<T>(), true, row, [&](const RowValues& v) {
    auto cols = v.columns();
    auto vals = v.values<T>();
    out->resize(cols.size());
    for (size_t i = 0; i < cols.size(); ++i) (*out)[i] = {cols[i], vals[i]};
  });
}

#define TESSERA_INSTANTIATE(T)                                                            \
  template Status Client::Get<T>(int, TableId, RowId, std::vector<T>*);                   \
  template Status Client::GetRows<T>(int, TableId, std::span<const RowId>, std::span<T>); \
  template Status Client::GetSparse<T>(int, TableId, RowId, std::vector<std::pair<uint32_t, T>>*);
TESSERA_INSTANTIATE(float)
TESSERA_INSTANTIATE(double)
TESSERA_INSTANTIATE(int32_t)
TESSERA_INSTANTIATE(int64_t)
#undef TESSERA_INSTANTIATE

}  // namespace tessera
