// Rows from the servers into the cache: replies to cached reads and pushes of subscribed rows,
// corrected by this process's own updates the server has not applied yet (read-my-writes); a
// reply's dense rows are borrowed, not copied (see client_impl.h for the parts).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "client_impl.h"
#include "tessera/table/wire.h"
#include "tessera/transport/list_bounds.h"

namespace tessera {

using client_internal::ApplyAck;
using client_internal::kMaxSpareGetNodes;
using client_internal::kPushes;
using client_internal::kRowsReceived;
using client_internal::kUncachedRequestBit;

// `message` holds `batch`; it is taken over (and freed later) if cache entries borrow rows
// of it (see CacheEntry::borrowed).
void Client::Impl::OnRows(int server, uint64_t id, proto::RowBatch::Reader batch,
                          std::unique_ptr<IncomingMessage>& message) {
  if (ClaimsEmptyStructs(batch.getRows()) || ClaimsEmptyStructs(batch.getDense())) {
    log_->error("server {} sent a batch whose list claims {} rows of no bytes; dropped", server,
                std::max(batch.getRows().size(), batch.getDense().size()));
    return;
  }
  ServerChannel& ch = *channels_[server];
  int64_t clock = batch.getClock();
  ApplyAck(ch, batch.getAppliedSeq());
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
    counters_.Count(kPushes);
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
        *table, wire.getRow(), [&](RowValues& v) { v.AssignProto(values, table->spec); }, nullptr);
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
          *table, ids[i], [&](RowValues& v) { v.AssignDense(row_cells, table->spec); }, row_cells);
    }
  }
  counters_.Count(kRowsReceived, received);
  run.Release();
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (Stripe* stripe : touched) stripe->cv.notify_all();
  AdvanceSeenClock(ch, clock);
}

// Rows of this server that did not come are unchanged as of `clock` (a server sends the pushes
// of a clock before anything it sends later): wake readers of them.
void Client::Impl::AdvanceSeenClock(ServerChannel& ch, int64_t clock) {
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

}  // namespace tessera
