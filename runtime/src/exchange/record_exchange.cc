#include "exchange/record_exchange.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fmt/format.h>
#include <kj/io.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "exchange/capnp_util.h"
#include "tessera/proto/tessera.capnp.h"

namespace tessera::internal {
namespace {

std::string EncodeShipment(const std::vector<RecordBatch>& batches) {
  size_t words = 16;
  for (const RecordBatch& b : batches)
    words += 8 + b.keys.size() + b.values.size() / 8 + 2 * b.size();
  capnp::MallocMessageBuilder message(static_cast<unsigned>(std::min<size_t>(words, 1u << 28)));
  auto list =
      message.initRoot<proto::RecordShipment>().initArrays(static_cast<unsigned>(batches.size()));
  for (size_t a = 0; a < batches.size(); ++a) {
    const RecordBatch& b = batches[a];
    auto out = list[static_cast<unsigned>(a)];
    auto keys = out.initKeys(static_cast<unsigned>(b.keys.size()));
    for (size_t i = 0; i < b.keys.size(); ++i) keys.set(static_cast<unsigned>(i), b.keys[i]);
    out.setValues(
        kj::arrayPtr(reinterpret_cast<const kj::byte*>(b.values.data()), b.values.size()));
    auto high = out.initOrderHigh(static_cast<unsigned>(b.size()));
    auto low = out.initOrderLow(static_cast<unsigned>(b.size()));
    for (size_t i = 0; i < b.size(); ++i) {
      high.set(static_cast<unsigned>(i), b.order[i].high);
      low.set(static_cast<unsigned>(i), b.order[i].low);
    }
  }
  return FlattenMessage(message);
}

// The batches of `bytes`, one per array, checked against the arrays' ranks and element sizes.
Status DecodeShipment(const std::string& bytes, const std::vector<ArrayBase*>& arrays, int from,
                      std::vector<std::vector<RecordBatch>>* into) {
  return WithPeerMessage<proto::RecordShipment>(
      bytes, "record shipment", [&](proto::RecordShipment::Reader m) -> Status {
        auto list = m.getArrays();
        if (list.size() != arrays.size()) {
          return Status::DataLoss(fmt::format("worker {} sent elements of {} arrays, expected {}",
                                              from, list.size(), arrays.size()));
        }
        for (unsigned a = 0; a < list.size(); ++a) {
          auto in = list[a];
          // Each list taken once: the reader's traversal limit counts every take.
          const auto keys = in.getKeys();
          const auto values = in.getValues();
          const auto high = in.getOrderHigh();
          const auto low = in.getOrderLow();
          const size_t n = high.size();
          const size_t rank = static_cast<size_t>(arrays[a]->rank());
          const size_t e = arrays[a]->element_bytes();
          if (low.size() != n || keys.size() != n * rank || values.size() != n * e) {
            return Status::DataLoss(
                fmt::format("worker {} sent {} keys, {} value bytes and {}/{} places for array #{}",
                            from, keys.size(), values.size(), n, low.size(), arrays[a]->id()));
          }
          RecordBatch b;
          b.keys.resize(n * rank);
          for (size_t i = 0; i < b.keys.size(); ++i) {
            const int64_t k = keys[static_cast<unsigned>(i)];
            if (k < 0 || k >= arrays[a]->extent(static_cast<int>(i % rank))) {
              return Status::DataLoss(fmt::format(
                  "worker {} sent a key out of the shape of array #{}", from, arrays[a]->id()));
            }
            b.keys[i] = k;
          }
          b.values.assign(reinterpret_cast<const char*>(values.begin()),
                          reinterpret_cast<const char*>(values.end()));
          b.order.resize(n);
          for (unsigned i = 0; i < n; ++i) b.order[i] = {high[i], low[i]};
          (*into)[a].push_back(std::move(b));
        }
        return Status::Ok();
      });
}

}  // namespace

Result<std::vector<std::vector<uint64_t>>> AllGatherCounts(const AllGatherFn& all_gather,
                                                           const std::vector<uint64_t>& local) {
  capnp::MallocMessageBuilder message(
      static_cast<unsigned>(std::min<size_t>(local.size() + 16, 1u << 28)));
  auto counts =
      message.initRoot<proto::KeyCounts>().initCounts(static_cast<unsigned>(local.size()));
  for (size_t i = 0; i < local.size(); ++i) counts.set(static_cast<unsigned>(i), local[i]);
  Result<std::vector<std::string>> all = all_gather(FlattenMessage(message));
  if (!all.ok()) return all.status();
  std::vector<std::vector<uint64_t>> out(all->size());
  for (size_t w = 0; w < all->size(); ++w) {
    Status s = WithPeerMessage<proto::KeyCounts>(
        (*all)[w], "key counts", [&](proto::KeyCounts::Reader m) -> Status {
          const auto counts = m.getCounts();
          if (counts.size() != local.size()) {
            return Status::DataLoss(fmt::format("worker {} sent {} counts, expected {}", w,
                                                counts.size(), local.size()));
          }
          out[w].reserve(counts.size());
          for (uint64_t c : counts) out[w].push_back(c);
          return Status::Ok();
        });
    if (!s.ok()) return s;
  }
  return out;
}

Result<std::vector<uint64_t>> SumCounts(const AllGatherFn& all_gather,
                                        std::vector<uint64_t> local) {
  Result<std::vector<std::vector<uint64_t>>> all = AllGatherCounts(all_gather, local);
  if (!all.ok()) return all.status();
  std::vector<uint64_t> sum(local.size(), 0);
  for (const std::vector<uint64_t>& w : *all) {
    for (size_t i = 0; i < w.size(); ++i) sum[i] += w[i];
  }
  return sum;
}

std::vector<uint64_t> LocalKeyCounts(const ArrayBase& a, int dim) {
  std::vector<uint64_t> counts(static_cast<size_t>(std::max<int64_t>(a.extent(dim), 0)), 0);
  const int64_t n = a.size();
  for (int64_t p = 0; p < n; ++p) ++counts[static_cast<size_t>(a.key_component(p, dim))];
  return counts;
}

RecordPlan PlanFromCuts(int dim, int64_t extent, const std::vector<int64_t>& cuts, int per_worker,
                        int num_workers, int64_t global_size) {
  RecordPlan plan;
  plan.dim = dim;
  plan.global_size = global_size;
  plan.bounds.assign(static_cast<size_t>(num_workers) + 1, extent);
  plan.bounds[0] = 0;
  // Block b holds key values v with cuts[b - 1] <= v < cuts[b] (BlockOf).
  for (int w = 1; w < num_workers; ++w) {
    const size_t c = static_cast<size_t>(w * per_worker) - 1;
    plan.bounds[static_cast<size_t>(w)] = c < cuts.size() ? cuts[c] : extent;
  }
  return plan;
}

size_t OwnerOf(const RecordPlan& plan, int64_t v) {
  const auto it = std::upper_bound(plan.bounds.begin() + 1, plan.bounds.end() - 1, v);
  return static_cast<size_t>(it - (plan.bounds.begin() + 1));
}

Status Repartition(const AllToAllFn& all_to_all, int rank, const std::vector<ArrayBase*>& arrays,
                   const std::vector<RecordPlan>& plans, uint64_t* bytes_sent) {
  const size_t workers = plans.empty() ? 1 : plans[0].bounds.size() - 1;
  std::vector<std::vector<RecordBatch>> out(workers, std::vector<RecordBatch>(arrays.size()));
  for (size_t a = 0; a < arrays.size(); ++a) {
    const RecordPlan& plan = plans[a];
    std::vector<RecordBatch> by_worker(workers);
    arrays[a]->ExportRecords([&plan](const int64_t* key) { return OwnerOf(plan, key[plan.dim]); },
                             &by_worker);
    for (size_t w = 0; w < workers; ++w) out[w][a] = std::move(by_worker[w]);
  }
  return ExchangeRecords(all_to_all, rank, arrays, plans, std::move(out), bytes_sent);
}

Status ExchangeRecords(const AllToAllFn& all_to_all, int rank, const std::vector<ArrayBase*>& arrays,
                       const std::vector<RecordPlan>& plans,
                       std::vector<std::vector<RecordBatch>> out, uint64_t* bytes_sent) {
  const size_t workers = out.size();
  std::vector<std::vector<RecordBatch>> in(arrays.size());
  for (size_t a = 0; a < arrays.size(); ++a) {
    in[a].push_back(std::move(out[static_cast<size_t>(rank)][a]));
  }
  std::vector<std::string> messages(workers);
  for (size_t w = 0; w < workers; ++w) {
    if (static_cast<int>(w) != rank) messages[w] = EncodeShipment(out[w]);
    if (bytes_sent != nullptr) *bytes_sent += messages[w].size();
    std::vector<RecordBatch>().swap(out[w]);
  }
  Result<std::vector<std::string>> got = all_to_all(std::move(messages));
  if (!got.ok()) return got.status();
  for (size_t w = 0; w < got->size(); ++w) {
    if (static_cast<int>(w) == rank) continue;
    TESSERA_RETURN_IF_ERROR(DecodeShipment((*got)[w], arrays, static_cast<int>(w), &in));
    std::string().swap((*got)[w]);
  }
  for (size_t a = 0; a < arrays.size(); ++a) {
    RecordPartition p;
    p.dim = plans[a].dim;
    p.lo = plans[a].bounds[static_cast<size_t>(rank)];
    p.hi = plans[a].bounds[static_cast<size_t>(rank) + 1];
    p.global_size = plans[a].global_size;
    arrays[a]->ImportRecords(std::move(in[a]), &p);
  }
  return Status::Ok();
}

Status GatherWhole(const AllGatherFn& all_gather, ArrayBase* array, uint64_t* bytes_sent) {
  std::vector<RecordBatch> mine(1);
  array->ExportRecords([](const int64_t*) { return size_t{0}; }, &mine);
  std::string shipment = EncodeShipment(mine);
  const size_t shipment_bytes = shipment.size();
  Result<std::vector<std::string>> all = all_gather(std::move(shipment));
  if (bytes_sent != nullptr && all.ok()) *bytes_sent += shipment_bytes * (all->size() - 1);
  if (!all.ok()) return all.status();
  std::vector<std::vector<RecordBatch>> in(1);
  for (size_t w = 0; w < all->size(); ++w) {
    TESSERA_RETURN_IF_ERROR(DecodeShipment((*all)[w], {array}, static_cast<int>(w), &in));
    std::string().swap((*all)[w]);
  }
  array->ImportRecords(std::move(in[0]), nullptr);
  return Status::Ok();
}

}  // namespace tessera::internal
