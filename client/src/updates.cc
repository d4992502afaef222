// The update log: Inc, IncRow and IncRows coalesced per row, clock boundaries' flushes with
// their flow control, and early sends of managed communication (see client_impl.h for the parts).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "client_impl.h"
#include "tessera/table/wire.h"

namespace tessera {

using client_internal::BatchWriter;
using client_internal::kAckEvery;
using client_internal::kEarlyRows;
using client_internal::kFlowWaits;
using client_internal::kMaxUnackedBatches;
using client_internal::kUnackedMax;
using client_internal::kUpdateRowsSent;
using client_internal::PendingRef;
using client_internal::RowImportance;

// Adds an update to the row's pending delta and to its cached value.
template <typename Check, typename Apply, typename Importance>
Status Client::Impl::Update(TableId id, ValueType type, RowId row, Check check, Apply apply,
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
Status Client::Impl::UpdateRows(TableId id, std::span<const RowId> rows,
                                std::span<const T> deltas) {
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
void Client::Impl::UpdateLocked(ClientTable& table, Stripe& stripe, RowId row, Apply apply,
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
    // The I/O thread sleeps without a time-out while nothing is pending.
    if (comm_.NotePending(&table, row)) waker_.Notify();
  }
  apply(pending.delta);
  CacheEntry* c = FindEntry(table, stripe, row);
  bool cached = c != nullptr && c->valid;
  if (cached) c->Own(table.spec);  // the reply is not ours to change
  if (comm_.options().policy == SendPolicy::kRelativeMagnitude) {
    pending.importance += importance(cached ? &c->value() : nullptr);
  }
  if (cached) apply(c->value());
}

// Boundary flush: every pending row, one batch per server, each followed by `clock` if it is
// >= 0. REQUIRES: clock_mu_.
void Client::Impl::FlushLocked(int64_t clock) {
  comm_.ClearFifo();  // everything in it is about to be sent
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
void Client::Impl::SendPending(const std::vector<std::pair<ClientTable*, RowId>>* chosen,
                               int64_t clock) {
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
      counters_.Count(kFlowWaits);
      auto room = [&] {
        return ch.next_seq - ch.acked_seq < kMaxUnackedBatches ||
               async_failed_.load(std::memory_order_acquire);
      };
      if (!role_.AwaitReady(lock, ch.acked, room,
                            std::chrono::steady_clock::now() + options_.timeout)) {
        // Sent anyway: nothing is dropped, the queue only grows. The error reaches Clock.
        SetAsyncError(Status::Unavailable(
            fmt::format("server {} ({}) acknowledged no update batch within {} ms", s, ch.endpoint,
                        options_.timeout.count())));
      }
    }
    seqs[s] = ++ch.next_seq;
    counters_.CountMax(kUnackedMax, ch.next_seq - ch.acked_seq);
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
  comm_.Sent(static_cast<int64_t>(taken));
  uint64_t rows_sent = 0;
  for (uint32_t s = 0; s < num_servers; ++s) {
    if (seqs[s] == 0) continue;  // no batch opened for this server
    rows_sent += writers[s].written();
    sockets_.Send(static_cast<int>(s), writers[s].Finish(), early);
  }
  counters_.Count(kUpdateRowsSent, rows_sent);
  if (early) counters_.Count(kEarlyRows, rows_sent);
}

// Takes a row off the pending list (its delta sent). REQUIRES: stripe.mu.
void Client::Impl::ErasePending(Stripe& stripe, OpLog::iterator it) {
  size_t slot = it->second.slot;
  PendingRef last = stripe.pending.back();
  stripe.pending[slot] = last;
  last.entry->slot = slot;
  stripe.pending.pop_back();
  it->second.pending = false;
  it->second.importance = 0;
  it->second.delta.SetZero();
}

// Spends spare budget on pending rows. Runs on the I/O thread; skips the round if a clock
// boundary is being flushed right now (it sends everything anyway).
void Client::Impl::SendEarly() {
  std::unique_lock lock(clock_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  auto chosen = comm_.ChooseEarlyRows([this] { return AllTables(); });
  if (!chosen.empty()) SendPending(&chosen, -1);
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

#define TESSERA_INSTANTIATE(T)                                           \
  template Status Client::Inc<T>(TableId, RowId, uint32_t, T);           \
  template Status Client::IncRow<T>(TableId, RowId, std::span<const T>); \
  template Status Client::IncRows<T>(TableId, std::span<const RowId>, std::span<const T>);
TESSERA_INSTANTIATE(float)
TESSERA_INSTANTIATE(double)
TESSERA_INSTANTIATE(int32_t)
TESSERA_INSTANTIATE(int64_t)
#undef TESSERA_INSTANTIATE

}  // namespace tessera
