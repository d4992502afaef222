// A server's updates: batches of deltas applied to its shard in each worker's order, the changed
// rows listed for the next push, and the workers' vector clock (see server_impl.h for the parts).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "server_impl.h"
#include "tessera/common/prefetch.h"
#include "tessera/table/row_values.h"
#include "tessera/table/wire.h"
#include "tessera/transport/list_bounds.h"
#include "tessera/transport/message.h"

namespace tessera {

using server_internal::kClean;
using server_internal::kLeftClock;

// Returns false when the batch was rejected (and the client told why).
bool Server::Impl::OnUpdate(uint32_t worker, proto::UpdateBatch::Reader batch) {
  Peer& peer = peers_[worker];
  uint64_t seq = batch.getSeq();
  if (seq <= peer.applied_seq) {
    log_->warn("worker {} resent update batch {}; ignored (already applied)", worker, seq);
    CountStat([](ServerStats& s) { ++s.duplicate_batches; });
    return true;
  }
  if (seq != peer.applied_seq + 1) {
    Reject(peer.identity, 0,
           Status::DataLoss(fmt::format("update batch {} from worker {} arrived after batch {}; "
                                        "batches in between were lost",
                                        seq, worker, peer.applied_seq)));
    return false;
  }
  // Decode and check the whole batch before applying any of it: a bad row rejects the batch
  // as a unit, so nothing is half-applied.
  auto rows = batch.getRows();
  if (ClaimsEmptyStructs(rows) || ClaimsEmptyStructs(batch.getDense())) {
    Reject(peer.identity, 0, proto::ErrorCode::MALFORMED,
           fmt::format("update batch {} from worker {}: a list of {} rows of no bytes", seq, worker,
                       std::max(rows.size(), batch.getDense().size())));
    return false;
  }
  std::vector<std::pair<ShardTable*, proto::Row::Reader>> checked;
  // Not more up front than a plain batch needs: the count is the sender's word until the rows
  // are checked.
  checked.reserve(std::min<size_t>(rows.size(), size_t{1} << 16));
  ShardTable* last = nullptr;  // a batch's rows are mostly of one table: look it up once
  for (auto row : rows) {
    Result<ShardTable*> table = last;
    if (last == nullptr || last->spec.id != row.getTable()) table = FindTable(row.getTable());
    if (!table.ok()) {
      Reject(peer.identity, 0, table.status());
      return false;
    }
    last = *table;
    if (row.getRow() >= (*table)->spec.num_rows) {
      Reject(
          peer.identity, 0,
          Status::OutOfRange(fmt::format("update to row {} of table '{}' ({} rows)", row.getRow(),
                                         (*table)->spec.name, (*table)->spec.num_rows)));
      return false;
    }
    if (Status s = RowValues::CheckProto(row.getValues(), (*table)->spec); !s.ok()) {
      Reject(peer.identity, 0, s);
      return false;
    }
    checked.emplace_back(*table, row);
  }
  struct CheckedBlock {
    ShardTable* table;
    capnp::List<uint64_t>::Reader ids;
    DenseBlock cells;
  };
  std::vector<CheckedBlock> blocks;
  for (auto block : batch.getDense()) {
    Result<ShardTable*> table = FindTable(block.getTable());
    if (!table.ok()) {
      Reject(peer.identity, 0, table.status());
      return false;
    }
    auto ids = block.getRows();
    Status rows_ok = CheckRows(**table, ids);
    auto cells = DenseBlock::Check(block.getValues(), ids.size(), (*table)->spec);
    if (!rows_ok.ok() || !cells.ok()) {
      Reject(peer.identity, 0, rows_ok.ok() ? cells.status() : rows_ok);
      return false;
    }
    blocks.push_back({*table, ids, *cells});
  }
  const bool weigh =
      options_.comm.early_sends() && options_.comm.policy == SendPolicy::kRelativeMagnitude;
  // A changed row is pushed at the next clock advance to the workers that read it.
  auto changed = [&](StoredRow* row) {
    if (row->subscribers.empty()) return;
    if (row->dirty_epoch == kClean) dirty_.push_back(row);
    if (row->dirty_epoch < 0) ++changed_rows_;
    row->dirty_epoch = clock_;
  };
  for (auto& [table, wire] : checked) {
    StoredRow* row = &table->RowToUpdate(wire.getRow());
    if (weigh && !row->subscribers.empty()) {
      auto delta = RowValues::FromProto(wire.getValues(), table->spec);  // checked above
      row->change += delta->RelativeMagnitude(row->values);
    }
    row->values.AddProto(wire.getValues(), table->spec);
    changed(row);
  }
  RowValues delta;  // for weighing a packed row
  for (const CheckedBlock& b : blocks) {
    // A worker's rows come back a whole working set of traffic later, out of the CPU's caches,
    // and each is three dependent misses (index slot, entry, cells). Looking ahead in stages
    // (slots kAhead rows on, entries 2/3 of that, cells 1/3) overlaps them.
    constexpr unsigned kAhead = 12;
    RowIndex<StoredRow>& index = b.table->rows;
    auto look_ahead = [&](unsigned i) {
      if (i < b.ids.size()) index.Prefetch(b.ids[i]);
      if (i >= kAhead / 3 && i - kAhead / 3 < b.ids.size()) {
        if (const StoredRow* r = index.Find(b.ids[i - kAhead / 3])) PrefetchObject(r);
      }
      if (i >= 2 * kAhead / 3 && i - 2 * kAhead / 3 < b.ids.size()) {
        if (const StoredRow* r = index.Find(b.ids[i - 2 * kAhead / 3]))
          r->values.PrefetchCellsForWrite();
      }
    };
    for (unsigned i = 0; i < kAhead; ++i) look_ahead(i);
    for (unsigned i = 0; i < b.ids.size(); ++i) {
      look_ahead(i + kAhead);
      StoredRow* row = &b.table->RowToUpdate(b.ids[i]);
      if (weigh && !row->subscribers.empty()) {
        delta.AssignDense(b.cells.row(i), b.table->spec);
        row->change += delta.RelativeMagnitude(row->values);
      }
      row->values.AddDense(b.cells.row(i));
      changed(row);
    }
  }
  peer.applied_seq = seq;
  CountStat([](ServerStats& s) { ++s.update_batches; });
  return true;
}

void Server::Impl::OnClock(uint32_t worker, int64_t clock) {
  Peer& peer = peers_[worker];
  if (clock < peer.clock) {
    Reject(peer.identity, 0,
           Status::InvalidArgument(fmt::format("worker {} moved its clock back from {} to {}",
                                               worker, peer.clock, clock)));
    return;
  }
  peer.clock = clock;
  int64_t min_clock = kLeftClock;
  for (const Peer& p : peers_) min_clock = std::min(min_clock, p.clock);
  if (min_clock <= clock_) return;
  clock_ = min_clock;
  CountStat([&](ServerStats& s) { s.clock = clock_; });
  Push();
  // Answer the reads that waited for this clock.
  std::vector<ParkedGet> still_parked;
  for (auto& req : parked_) {
    if (req.min_clock <= clock_) {
      --peers_[req.worker].parked_gets;
      peers_[req.worker].parked_rows -= req.rows.size();
      Answer(req);
    } else {
      still_parked.push_back(std::move(req));
    }
  }
  parked_ = std::move(still_parked);
}

}  // namespace tessera
