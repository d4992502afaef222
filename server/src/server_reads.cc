// A server's reads: a get answered at once when the SSP bound holds, else parked until the
// clock advances; the readers it subscribes and the unsubscriptions of evicted rows (see
// server_impl.h for the parts).
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

using server_internal::UnwrittenBlock;

void Server::Impl::OnGet(uint32_t worker, uint64_t request_id, proto::GetRequest::Reader get) {
  auto table = FindTable(get.getTable());
  if (!table.ok()) {
    Reject(peers_[worker].identity, request_id, table.status());
    return;
  }
  ParkedGet req{worker,
                request_id,
                get.getTable(),
                {},
                get.getMinClock(),
                get.getSubscribe(),
                get.getSoleThread()};
  auto rows = get.getRows();
  Status checked = CheckRows(**table, rows);
  if (checked.ok()) checked = CheckRows(**table, get.getUnsubscribe());
  if (checked.ok()) checked = CheckReplySize(**table, rows);
  if (checked.ok() && req.min_clock > clock_) checked = CheckParkingSpace(peers_[worker], rows.size());
  if (!checked.ok()) {
    Reject(peers_[worker].identity, request_id, checked);
    return;
  }
  req.rows.reserve(rows.size());
  for (RowId r : rows) req.rows.push_back(r);
  // Unsubscriptions take effect first: the rows they name are not cached at the client, and
  // any of them this request reads (the client dropped it, then asked for it again) is
  // subscribed again by the answer. Done before the answer, they also free the entries of
  // rows nobody reads any more just before the answer takes entries for the rows it reads:
  // the index hands out the last freed first, so those are still in the CPU's caches.
  Unsubscribe(worker, **table, get.getUnsubscribe());
  if (req.min_clock <= clock_) {
    Answer(req);
  } else if (!FailIfDeadlocked(req)) {
    CountStat([](ServerStats& s) { ++s.parked_gets; });
    ++peers_[worker].parked_gets;
    peers_[worker].parked_rows += req.rows.size();
    parked_.push_back(std::move(req));
  }
}

bool Server::Impl::FailIfDeadlocked(const ParkedGet& req) {
  if (!req.sole_thread) return false;
  for (uint32_t w = 0; w < peers_.size(); ++w) {
    const Peer& p = peers_[w];
    if (w == req.worker || p.at_barrier == 0 || p.clock >= req.min_clock) continue;
    // The reader waited at that barrier too and is past it: the barrier was released, and
    // worker w, not heard from since, is on its way (every worker's k-th barrier has id k).
    if (peers_[req.worker].last_barrier >= p.at_barrier) continue;
    auto table = tables_.find(req.table);
    const std::string name =
        table == tables_.end() ? std::to_string(req.table) : "'" + table->second.spec.name + "'";
    Reject(peers_[req.worker].identity, req.request_id,
           Status::Aborted(fmt::format(
               "worker {} waits at a barrier with its clock at {} (it finished its program: "
               "returned from main or destroyed its tessera::Context), but worker {} waits for "
               "its clock {} to read table {} and so can never get there: the workers' programs "
               "went different ways (did worker {} stop early, with an error?)",
               w, p.clock, req.worker, req.min_clock, name, w)));
    return true;
  }
  return false;
}

void Server::Impl::FailDeadlockedReads() {
  std::vector<ParkedGet> still_parked;
  for (ParkedGet& req : parked_) {
    if (!FailIfDeadlocked(req)) still_parked.push_back(std::move(req));
  }
  parked_ = std::move(still_parked);
}

void Server::Impl::OnUnsubscribe(uint32_t worker, uint64_t request_id,
                                 proto::Unsubscribe::Reader msg) {
  auto table = FindTable(msg.getTable());
  if (!table.ok()) {
    Reject(peers_[worker].identity, request_id, table.status());
    return;
  }
  if (Status s = CheckRows(**table, msg.getRows()); !s.ok()) {
    Reject(peers_[worker].identity, request_id, s);
    return;
  }
  Unsubscribe(worker, **table, msg.getRows());
}

Status Server::Impl::CheckRows(const ShardTable& t, capnp::List<uint64_t>::Reader rows) const {
  for (RowId r : rows) {
    if (r >= t.spec.num_rows) {
      return Status::OutOfRange(fmt::format("row {} out of range for table '{}' ({} rows)", r,
                                            t.spec.name, t.spec.num_rows));
    }
  }
  return Status::Ok();
}

// An answer to `rows` must fit kMaxReadReplyBytes. Dense rows have a fixed size; sparse rows are
// as large as their columns, so their stored sizes are added up when the widest rows could pass
// the bound (a lookup per row, only for reads that large).
Status Server::Impl::CheckReplySize(const ShardTable& t,
                                    capnp::List<uint64_t>::Reader rows) const {
  const uint64_t n = rows.size();
  const uint64_t cell = ValueTypeSize(t.spec.value_type);
  uint64_t bytes = 0;
  if (!t.spec.sparse) {
    bytes = n * t.spec.DenseRowBytes();  // both < 2^32: no overflow
  } else if (n * t.spec.width > kMaxReadReplyBytes / (cell + sizeof(uint32_t))) {
    // (rows < 2^30 and width < 2^32: the product does not overflow; the bytes could.)
    for (RowId r : rows) {
      if (const StoredRow* row = t.rows.Find(r)) bytes += row->values.payload_bytes();
      if (bytes > kMaxReadReplyBytes) break;
    }
  }
  if (bytes <= kMaxReadReplyBytes) return Status::Ok();
  return Status::OutOfRange(
      fmt::format("a read of {} rows of table '{}' would need an answer of more than {} bytes, "
                  "the limit (split it)",
                  n, t.spec.name, kMaxReadReplyBytes));
}

// A worker may keep at most kMaxParkedGets reads of kMaxParkedRows rows waiting for the clock.
Status Server::Impl::CheckParkingSpace(const Peer& peer, size_t rows) const {
  if (peer.parked_gets < server_internal::kMaxParkedGets &&
      peer.parked_rows + rows <= server_internal::kMaxParkedRows) {
    return Status::Ok();
  }
  return Status::OutOfRange(fmt::format(
      "the worker already has {} reads of {} rows waiting for the clock, the limit is {} reads "
      "of {} rows",
      peer.parked_gets, peer.parked_rows, server_internal::kMaxParkedGets,
      server_internal::kMaxParkedRows));
}

// The worker dropped these rows from its cache: stop pushing them to it. A row nobody reads
// any more and nobody has written is all zeros and needs no entry (a later read recreates it),
// so a worker streaming through a table does not grow the shard's indexes.
// REQUIRES: CheckRows(t, rows) is OK.
void Server::Impl::Unsubscribe(uint32_t worker, ShardTable& t, capnp::List<uint64_t>::Reader rows) {
  Peer& peer = peers_[worker];
  uint64_t ended = 0;
  // A client drops rows it read long ago (thousands of rows of traffic back), so the index
  // slots and entries of written rows have left the CPU's caches: each row is two dependent
  // misses. Looking ahead in stages (the slot kAhead rows on, the entry half as far) overlaps
  // them. The readers of unwritten rows are a small index: its slots are asked for ahead.
  constexpr unsigned kAhead = 16;
  auto look_ahead = [&](unsigned i) {
    if (i < rows.size()) {
      t.rows.Prefetch(rows[i]);
      t.unwritten_readers.Prefetch(UnwrittenBlock::BlockOf(rows[i]));
    }
    if (i >= kAhead / 2 && i - kAhead / 2 < rows.size()) {
      // What Unsubscribe reads comes first in the entry (see StoredRow), on one cache line or,
      // for an entry that does not start on one, two.
      if (const StoredRow* r = t.rows.Find(rows[i - kAhead / 2]))
        PrefetchForWrite(r, offsetof(StoredRow, table) + sizeof(TableId));
    }
  };
  for (unsigned i = 0; i < kAhead; ++i) look_ahead(i);
  // Consecutive rows share a block: it is looked up once for them.
  uint64_t block = std::numeric_limits<uint64_t>::max();
  UnwrittenBlock* readers = nullptr;
  for (unsigned i = 0; i < rows.size(); ++i) {
    look_ahead(i + kAhead);
    if (StoredRow* row = t.rows.Find(rows[i])) {
      if (!row->subscribers.Remove(worker)) continue;
    } else {
      if (UnwrittenBlock::BlockOf(rows[i]) != block) {
        block = UnwrittenBlock::BlockOf(rows[i]);
        readers = t.unwritten_readers.Find(block);
      }
      if (readers == nullptr || !readers->Remove(worker, rows[i])) continue;
      if (readers->empty()) {
        t.unwritten_readers.Erase(block);  // and its entry may be reused: look up again
        block = std::numeric_limits<uint64_t>::max();
        readers = nullptr;
      }
    }
    --peer.held_rows;
    ++ended;
  }
  // Most reads carry no unsubscriptions: no stats lock for them.
  if (ended > 0) CountStat([&](ServerStats& s) { s.unsubscribed_rows += ended; });
}

void Server::Impl::Answer(const ParkedGet& req) {
  ShardTable& table = tables_.at(req.table);
  Peer& peer = peers_[req.worker];
  OutgoingMessage reply(options_.rank, req.request_id,
                        static_cast<unsigned>(table.MessageWords(req.rows.size())),
                        frame_pool_.get());
  auto batch = reply.envelope().getBody().initRows();
  batch.setClock(clock_);
  batch.setAppliedSeq(peer.applied_seq);
  // The row to answer with (null: nobody has written it, so it is all zeros), its reader
  // subscribed unless the read is uncached (which leaves no trace). Consecutive unwritten
  // rows share a block of readers: it is looked up once for them (entries stay put while
  // others are added, so the pointer stays good).
  uint64_t block = std::numeric_limits<uint64_t>::max();
  UnwrittenBlock* readers = nullptr;
  auto row_to_answer = [&](RowId id) -> const StoredRow* {
    StoredRow* row = table.rows.Find(id);
    if (!req.subscribe) return row;
    if (row != nullptr) {
      if (row->subscribers.Add(req.worker)) ++peer.held_rows;
      return row;
    }
    if (UnwrittenBlock::BlockOf(id) != block) {
      block = UnwrittenBlock::BlockOf(id);
      readers = table.unwritten_readers.FindOrAdd(block).first;
    }
    if (readers->Add(req.worker, id)) ++peer.held_rows;
    return row;
  };
  if (!table.spec.sparse) {
    table.WriteDenseBlock(
        req.rows.size(), [&](size_t i) { return req.rows[i]; },
        [&](size_t i) { return row_to_answer(req.rows[i]); }, batch.initDense(1)[0]);
  } else {
    auto out = batch.initRows(static_cast<unsigned>(req.rows.size()));
    for (unsigned i = 0; i < req.rows.size(); ++i) {
      out[i].setTable(req.table);
      out[i].setRow(req.rows[i]);
      table.WriteValues(row_to_answer(req.rows[i]), out[i].initValues());
    }
  }
  Send(peer.identity, reply);
  CountStat([](ServerStats& s) { ++s.gets; });
}

}  // namespace tessera
