// A server's pushes: at each clock advance the changed rows each worker holds (or an empty batch
// that vouches for them), and between clocks, under managed communication, the rows the policy
// ranks first (see server_impl.h for the parts).
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
#include "tessera/transport/message.h"

namespace tessera {

using server_internal::kClean;
using server_internal::kLeftClock;
using server_internal::kPushedEarly;

// Sends every client the rows it has read that changed, stamped with the new clock. Clients
// treat an empty push as "everything you hold from me is current as of this clock".
void Server::Impl::Push() {
  std::vector<const StoredRow*> changed;
  changed.reserve(dirty_.size());
  for (StoredRow* row : dirty_) {
    if (row->dirty_epoch >= 0) changed.push_back(row);
    row->dirty_epoch = kClean;
    row->change = 0;
  }
  dirty_.clear();
  changed_rows_ = 0;
  uint64_t pushed = SendRows(changed, /*every_peer=*/true);
  CountStat([&](ServerStats& s) { s.rows_pushed += pushed; });
}

// Sends `rows` to the workers holding them, at the current clock; with `every_peer`, also an
// empty batch to workers holding none (a clock advance). Returns the rows sent.
uint64_t Server::Impl::SendRows(const std::vector<const StoredRow*>& rows, bool every_peer) {
  std::vector<std::vector<const StoredRow*>> out(peers_.size());
  for (const StoredRow* row : rows) {
    row->subscribers.ForEach([&](uint32_t w) { out[w].push_back(row); });
  }
  uint64_t sent = 0;
  for (uint32_t w = 0; w < peers_.size(); ++w) {
    Peer& peer = peers_[w];
    if (peer.identity.empty() || peer.clock == kLeftClock || peer.unreachable) continue;
    // A clock advance goes to the workers holding rows of this shard (for them an empty push
    // vouches that their rows are current). A worker holding none has nothing to learn from it:
    // its reads go out as requests, answered with the clock.
    if (out[w].empty() && (!every_peer || peer.held_rows == 0)) continue;
    // Rows of dense tables go packed, a block per table; rows of sparse tables one by one.
    std::vector<std::pair<ShardTable*, std::vector<const StoredRow*>>> dense;
    std::vector<std::pair<ShardTable*, const StoredRow*>> sparse;
    size_t words = 16;
    for (const StoredRow* row : out[w]) {
      ShardTable* table = &tables_.at(row->table);
      if (table->spec.sparse) {
        sparse.emplace_back(table, row);
        words += table->MessageWords(1);
        continue;
      }
      auto it =
          std::find_if(dense.begin(), dense.end(), [&](const auto& d) { return d.first == table; });
      if (it == dense.end()) it = dense.insert(dense.end(), {table, {}});
      it->second.push_back(row);
    }
    for (const auto& [table, rows] : dense) words += table->MessageWords(rows.size());
    OutgoingMessage msg(options_.rank, 0, static_cast<unsigned>(words), frame_pool_.get());
    auto batch = msg.envelope().getBody().initRows();
    batch.setClock(clock_);
    batch.setAppliedSeq(peer.applied_seq);
    if (!sparse.empty()) {
      auto wire = batch.initRows(static_cast<unsigned>(sparse.size()));
      for (unsigned i = 0; i < sparse.size(); ++i) {
        const auto& [table, row] = sparse[i];
        wire[i].setTable(row->table);
        wire[i].setRow(row->id);
        table->WriteValues(row, wire[i].initValues());
      }
    }
    if (!dense.empty()) {
      auto blocks = batch.initDense(static_cast<unsigned>(dense.size()));
      for (unsigned i = 0; i < dense.size(); ++i) {
        const std::vector<const StoredRow*>& rows = dense[i].second;
        dense[i].first->WriteDenseBlock(
            rows.size(), [&](size_t k) { return rows[k]->id; }, [&](size_t k) { return rows[k]; },
            blocks[i]);
      }
    }
    sent += out[w].size();
    Send(peer.identity, msg);
  }
  return sent;
}

// Spends spare budget between clock advances on the changed rows the policy ranks first.
void Server::Impl::PushEarly() {
  const CommOptions& comm = options_.comm;
  std::vector<StoredRow*> candidates;
  for (StoredRow* row : dirty_) {
    if (row->dirty_epoch >= 0) candidates.push_back(row);
  }
  if (candidates.empty()) return;
  size_t n = std::min(comm.rows_per_message, candidates.size());
  switch (comm.policy) {
    case SendPolicy::kFifo:
      break;  // dirty_ lists rows in the order they changed
    case SendPolicy::kRandom:
      std::shuffle(candidates.begin(), candidates.end(), rng_);
      break;
    default: {
      auto more_changed = [](const StoredRow* a, const StoredRow* b) {
        return a->change > b->change;
      };
      if (candidates.size() > comm.sample_size) {
        // Sample instead of ranking every changed row on every send.
        std::shuffle(candidates.begin(), candidates.end(), rng_);
        candidates.resize(comm.sample_size);
      }
      std::partial_sort(candidates.begin(), candidates.begin() + static_cast<ptrdiff_t>(n),
                        candidates.end(), more_changed);
    }
  }
  candidates.resize(n);
  for (StoredRow* row : candidates) {
    row->dirty_epoch = kPushedEarly;
    row->change = 0;
  }
  changed_rows_ -= candidates.size();
  uint64_t sent =
      SendRows(std::vector<const StoredRow*>(candidates.begin(), candidates.end()), false);
  CountStat([&](ServerStats& s) { s.early_rows_pushed += sent; });
}

}  // namespace tessera
