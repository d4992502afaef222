// Reads past the process cache (StartUncachedRead, WaitUncachedRead): each reply is copied
// straight into the reader's buffer with the process's own updates added, and the server does
// not subscribe the reader (see client_impl.h for the parts).
#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "client_impl.h"
#include "tessera/table/wire.h"

namespace tessera {

using client_internal::kRowsReceived;
using client_internal::kUncachedRequestBit;
using client_internal::kUncachedRows;

template <typename T>
Result<ReadTicket> Client::Impl::StartUncachedRead(int thread, TableId id,
                                                   std::span<const RowId> rows, T* out) {
  TESSERA_RETURN_IF_ERROR(CheckThread(thread));
  auto t = Table(id, ValueTypeOf<T>());
  if (!t.ok()) return t.status();
  ClientTable& table = **t;
  if (table.spec.sparse) {
    return Status::InvalidArgument(fmt::format(
        "table '{}' has sparse rows; uncached reads are of dense rows only", table.spec.name));
  }
  TESSERA_RETURN_IF_ERROR(CheckRows(table, rows));
  const int64_t need = NeededClock(thread, table);
  const auto num_servers = static_cast<uint32_t>(channels_.size());
  const uint64_t ticket = next_request_id_.fetch_add(1);
  // Each server's share sized first: a reader streaming batches allocates each part once.
  std::vector<uint32_t> owner(rows.size());
  std::vector<size_t> share(num_servers, 0);
  for (size_t i = 0; i < rows.size(); ++i) {
    owner[i] = ServerOfRow(id, rows[i], num_servers);
    ++share[owner[i]];
  }
  std::vector<UncachedRequest> parts(num_servers);
  for (uint32_t s = 0; s < num_servers; ++s) {
    parts[s].rows.resize(share[s]);
    parts[s].positions.resize(share[s]);
    share[s] = 0;  // now: how many of its rows are in
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    UncachedRequest& part = parts[owner[i]];
    const size_t k = share[owner[i]]++;
    part.rows[k] = rows[i];
    part.positions[k] = i;
  }
  auto read = std::make_unique<UncachedRead>(
      UncachedRead{&table, reinterpret_cast<std::byte*>(out), table.spec.width * sizeof(T),
                   thread_clocks_[thread].load(std::memory_order_relaxed)});
  // A server answers at most kMaxReadReplyBytes per request: a larger share goes in several.
  const uint64_t most = table.spec.MaxRowsPerRead();
  std::vector<UncachedRequest> requests;
  for (uint32_t s = 0; s < num_servers; ++s) {
    UncachedRequest& part = parts[s];
    part.ticket = ticket;
    part.server = s;
    if (part.rows.size() <= most) {
      if (!part.rows.empty()) requests.push_back(std::move(part));
      continue;
    }
    for (size_t at = 0; at < part.rows.size(); at += most) {
      const size_t end = std::min<size_t>(part.rows.size(), at + most);
      requests.push_back({ticket, s, std::vector<RowId>(part.rows.begin() + at, part.rows.begin() + end),
                          std::vector<size_t>(part.positions.begin() + at,
                                              part.positions.begin() + end)});
    }
  }
  std::vector<std::pair<int, zmq::message_t>> frames;
  for (const UncachedRequest& r : requests) {
    const uint64_t request = next_request_id_.fetch_add(1) | kUncachedRequestBit;
    frames.emplace_back(static_cast<int>(r.server),
                        GetFrame(request, id, r.rows, need, /*subscribe=*/false, nullptr));
    read->requests.push_back(request);
  }
  {
    std::lock_guard lock(uncached_mu_);
    for (size_t k = 0; k < requests.size(); ++k) {
      uncached_requests_.emplace(read->requests[k], std::move(requests[k]));
    }
    read->outstanding = static_cast<int>(frames.size());
    uncached_in_flight_.fetch_add(read->outstanding, std::memory_order_seq_cst);
    uncached_reads_.emplace(ticket, std::move(read));
  }
  WaitForFlushInProgress();  // after counting the requests in flight (see there)
  for (auto& [server, frame] : frames) Enqueue(server, std::move(frame));
  return ReadTicket{ticket};
}

Status Client::Impl::WaitUncachedRead(ReadTicket ticket) {
  std::unique_lock lock(uncached_mu_);
  auto it = uncached_reads_.find(ticket.id);
  if (it == uncached_reads_.end() || it->second->waited) {
    return Status::InvalidArgument(fmt::format(
        "no uncached read {} to wait for (never started, or waited for already)", ticket.id));
  }
  UncachedRead* read = it->second.get();  // erased only below
  read->waited = true;
  const bool done = role_.AwaitReady(
      lock, uncached_cv_, [&] { return read->outstanding == 0; },
      std::chrono::steady_clock::now() + options_.timeout);
  Status status = read->status;
  if (!done) {
    for (uint64_t request : read->requests) {
      if (uncached_requests_.erase(request) > 0)
        uncached_in_flight_.fetch_sub(1, std::memory_order_acq_rel);
    }
    status = Status::Unavailable(
        fmt::format("uncached read of table '{}': {} of its {} requests got no answer within "
                    "{} ms; abandoned",
                    read->table->spec.name, read->outstanding, read->requests.size(),
                    options_.timeout.count()));
  }
  uncached_reads_.erase(ticket.id);
  return status;
}

// A reply to an uncached read: its rows go straight into the reader's buffer, with the
// process's own updates the server has not applied yet added (as OnRows adds them to cached
// rows). A reply that does not match its request fails the read.
void Client::Impl::OnUncachedRows(int server, uint64_t id, proto::RowBatch::Reader batch) {
  FinishUncachedRequest(id, [&](UncachedRequest& req, UncachedRead& read) {
    return FillUncached(server, batch, req, read);
  });
}

// Ends request `id` of an uncached read with `fill(request, read)`'s status, unless the read
// was abandoned (its waiter timed out): then the reply is dropped.
template <typename Fill>
void Client::Impl::FinishUncachedRequest(uint64_t id, Fill fill) {
  std::lock_guard lock(uncached_mu_);
  auto it = uncached_requests_.find(id);
  if (it == uncached_requests_.end()) {
    log_->debug("dropping the reply to abandoned uncached read request {}", id);
    return;
  }
  UncachedRead& read = *uncached_reads_.at(it->second.ticket);
  if (Status s = fill(it->second, read); !s.ok()) {
    log_->error("uncached read of table '{}': {}", read.table->spec.name, s.ToString());
    if (read.status.ok()) read.status = std::move(s);
  }
  uncached_requests_.erase(it);
  uncached_in_flight_.fetch_sub(1, std::memory_order_acq_rel);
  if (--read.outstanding == 0) uncached_cv_.notify_all();
}

void Client::Impl::FailUncachedRequest(uint64_t id, const Status& status) {
  FinishUncachedRequest(id, [&](UncachedRequest&, UncachedRead&) { return status; });
}

// REQUIRES: uncached_mu_.
Status Client::Impl::FillUncached(int server, proto::RowBatch::Reader batch,
                                  const UncachedRequest& req, const UncachedRead& read) {
  ClientTable& table = *read.table;
  auto dense = batch.getDense();
  if (static_cast<uint32_t>(server) != req.server || batch.getRows().size() != 0 ||
      dense.size() != 1 || dense[0].getTable() != table.spec.id ||
      dense[0].getRows().size() != req.rows.size()) {
    return Status::DataLoss(fmt::format(
        "server {} sent a reply that does not match the request for {} rows to server {}", server,
        req.rows.size(), req.server));
  }
  auto ids = dense[0].getRows();
  for (unsigned j = 0; j < ids.size(); ++j) {
    if (ids[j] != req.rows[j]) {
      return Status::DataLoss(
          fmt::format("server {} sent row {} where row {} was asked", server, ids[j], req.rows[j]));
    }
  }
  auto cells = DenseBlock::Check(dense[0].getValues(), ids.size(), table.spec);
  if (!cells.ok()) return cells.status();
  ServerChannel& ch = *channels_[server];
  StripeRunLock run;
  for (unsigned j = 0; j < ids.size(); ++j) {
    const RowId row = req.rows[j];
    std::byte* dst = read.out + req.positions[j] * read.row_bytes;
    cells->CopyRow(j, dst);
    // Own updates not in the reply, looked up as OnRows does (under the row's stripe lock, so
    // a delta on its way from the update log into an in-flight batch is in one of them).
    Stripe& stripe = table.StripeOf(row);
    run.Hold(stripe);
    if (ch.inflight_deltas.load(std::memory_order_relaxed) > 0) {
      std::lock_guard ch_lock(ch.mu);
      for (const InflightBatch& b : ch.inflight) {
        if (auto d = b.deltas.find(RowKey{table.spec.id, row}); d != b.deltas.end())
          d->second.AddDenseTo(dst);
      }
    }
    if (!stripe.pending.empty()) {
      if (auto o = stripe.oplog.find(row); o != stripe.oplog.end() && o->second.pending)
        o->second.delta.AddDenseTo(dst);
    }
  }
  const int64_t stamp = batch.getClock();
  const uint64_t staleness = read.clock > stamp ? static_cast<uint64_t>(read.clock - stamp) : 0;
  counters_.Count(kRowsReceived, ids.size());
  counters_.Count(kUncachedRows, ids.size());
  counters_.RecordReads(ids.size(), staleness * ids.size(), staleness);
  return Status::Ok();
}

template <typename T>
Result<ReadTicket> Client::StartUncachedRead(int thread, TableId table, std::span<const RowId> rows,
                                             std::span<T> out) {
  const TableSpec* spec = impl_->FindTableSpec(table);
  if (spec != nullptr && out.size() != rows.size() * spec->width) {
    return Status::InvalidArgument(
        fmt::format("StartUncachedRead of {} rows of table '{}' needs {} values of room, not {}",
                    rows.size(), spec->name, rows.size() * spec->width, out.size()));
  }
  return impl_->StartUncachedRead<T>(thread, table, rows, out.data());
}

#define TESSERA_INSTANTIATE(T)                                                                   \
  template Result<ReadTicket> Client::StartUncachedRead<T>(int, TableId, std::span<const RowId>, \
                                                           std::span<T>);
TESSERA_INSTANTIATE(float)
TESSERA_INSTANTIATE(double)
TESSERA_INSTANTIATE(int32_t)
TESSERA_INSTANTIATE(int64_t)
#undef TESSERA_INSTANTIATE

}  // namespace tessera
