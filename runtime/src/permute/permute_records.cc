#include "permute/permute_records.h"

#include <capnp/message.h>
#include <fmt/format.h>
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>

#include "exchange/capnp_util.h"
#include "schedule/loop_blocks.h"
#include "tessera/common/check.h"
#include "tessera/proto/tessera.capnp.h"

namespace tessera::internal {
namespace {

// A share is shipped in at least this many rounds (as the loaders do), so that small arrays take
// the same path as large ones.
constexpr size_t kMinRounds = 8;
// At most this many bytes of elements (keys and values) per worker and round: measured against
// 256Ki-element rounds (megabyte messages, each a fresh mapping) before workers raised their trim
// threshold (bench/README.md, "LDA and load_docword on a 22M-token corpus"); not re-tuned since,
// as assign_permuted's rounds were.
constexpr size_t kRoundBytes = size_t{64} << 10;

// Elements on their way to one worker: permuted keys (rank each) and raw values.
struct Outgoing {
  std::vector<int64_t> keys;
  std::vector<char> values;
  size_t size(size_t rank) const { return keys.size() / rank; }
};

// A RecordShipment of one SparseRecords without places (the receiver orders by key itself).
std::string Encode(const Outgoing& out) {
  capnp::MallocMessageBuilder message(static_cast<unsigned>(
      std::min<size_t>(32 + out.keys.size() + out.values.size() / 8, 1u << 28)));
  auto records = message.initRoot<proto::RecordShipment>().initArrays(1)[0];
  auto keys = records.initKeys(static_cast<unsigned>(out.keys.size()));
  for (size_t i = 0; i < out.keys.size(); ++i) keys.set(static_cast<unsigned>(i), out.keys[i]);
  records.setValues(
      kj::arrayPtr(reinterpret_cast<const kj::byte*>(out.values.data()), out.values.size()));
  return FlattenMessage(message);
}

// Places the elements of worker `from`'s message in `result`; each must fall in the rows this
// worker reserved.
Status PlaceFrom(const std::string& bytes, int from, ArrayBase* result,
                 std::vector<int64_t>* scratch) {
  return WithPeerMessage<proto::RecordShipment>(
      bytes, fmt::format("permuted elements from worker {}", from),
      [&](proto::RecordShipment::Reader shipment) -> Status {
        const auto arrays = shipment.getArrays();
        if (arrays.size() != 1) {
          return Status::DataLoss(
              fmt::format("worker {} sent permuted elements of {} arrays", from, arrays.size()));
        }
        const auto keys = arrays[0].getKeys();
        const auto values = arrays[0].getValues();
        const size_t rank = static_cast<size_t>(result->rank()), e = result->element_bytes();
        const size_t n = values.size() / e;
        if (values.size() % e != 0 || keys.size() != n * rank ||
            arrays[0].getOrderHigh().size() != 0 || arrays[0].getOrderLow().size() != 0) {
          return Status::DataLoss(
              fmt::format("worker {} sent {} key components and {} value "
                          "bytes of rank-{} elements of {} bytes",
                          from, keys.size(), values.size(), rank, e));
        }
        scratch->resize(keys.size());
        for (size_t i = 0; i < keys.size(); ++i) (*scratch)[i] = keys[static_cast<unsigned>(i)];
        if (!result->PlaceInRows(scratch->data(), values.begin(), n, from)) {
          return Status::DataLoss(fmt::format(
              "worker {} sent a permuted element outside this worker's rows or beyond their "
              "counts",
              from));
        }
        return Status::Ok();
      });
}

}  // namespace

Result<PermuteReport> PermuteRecords(const PermuteOptions& options, const ArrayBase& source,
                                     const std::vector<int>& perm, ArrayBase* result) {
  const int N = source.rank();
  TESSERA_CHECK_MSG(source.is_sparse() && result->is_sparse() && result->rank() == N &&
                        static_cast<int>(perm.size()) == N &&
                        result->element_bytes() == source.element_bytes(),
                    "PermuteRecords: arrays of different kinds");
  const bool job = options.num_workers > 1 && options.all_gather && options.all_to_all;
  const RecordPartition* held = source.record_partition();
  TESSERA_CHECK_MSG(held == nullptr || job, "PermuteRecords: a partitioned source outside a job");
  const size_t rank = static_cast<size_t>(N), bytes = source.element_bytes();
  const int64_t n = source.size();
  const int64_t* keys = n > 0 ? source.key_data() : nullptr;
  const char* values = static_cast<const char*>(const_cast<ArrayBase&>(source).value_data());
  std::vector<int64_t> permuted(rank);
  auto permute = [&](int64_t p) {
    for (size_t d = 0; d < rank; ++d) permuted[d] = keys[static_cast<size_t>(p) * rank + perm[d]];
  };

  PermuteReport report;
  std::vector<uint64_t> counts = LocalKeyCounts(source, perm[0]);  // of the new key[0]
  if (held == nullptr && !(job && options.keep_partitioned)) {
    // Whole from the local source.
    result->ReserveRows(0, 1, counts);
    for (int64_t p = 0; p < n; ++p) {
      permute(p);
      if (!result->PlaceInRows(permuted.data(), values + static_cast<size_t>(p) * bytes, 1, 0)) {
        return Status::Internal("PermuteRecords: an element outside the result's shape");
      }
    }
    if (!result->FinishRows(nullptr)) {
      return Status::Internal("PermuteRecords: the source holds a key twice");
    }
    report.held = result->size();
    return report;
  }

  // Equal-count ranges of the new key[0], one per worker, from every worker's elements; the
  // rows this worker will hold get one part per sender (PlaceInRows), so that the rows of a
  // source in key order and split by rank come in sorted.
  const int W = options.num_workers;
  int64_t global_size = n;
  std::vector<std::vector<uint64_t>> by_sender;
  if (held != nullptr) {
    Result<std::vector<std::vector<uint64_t>>> all = AllGatherCounts(options.all_gather, counts);
    if (!all.ok()) return all.status();
    by_sender = std::move(*all);
    for (int w = 0; w < W; ++w) {
      if (w == options.rank) continue;
      for (size_t v = 0; v < counts.size(); ++v) counts[v] += by_sender[w][v];
    }
    global_size = held->global_size;
  }
  const RecordPlan plan =
      PlanFromCuts(0, result->extent(0), CutsFromCounts(counts, W), 1, W, global_size);
  const size_t me = static_cast<size_t>(options.rank);
  RecordPartition mine;
  mine.dim = 0;
  mine.lo = plan.bounds[me];
  mine.hi = plan.bounds[me + 1];
  mine.global_size = global_size;
  const int parts = held != nullptr ? W : 1;
  std::vector<uint64_t> slots;
  slots.reserve(static_cast<size_t>((mine.hi - mine.lo) * parts));
  for (int64_t v = mine.lo; v < mine.hi; ++v) {
    if (held == nullptr) {
      slots.push_back(counts[v]);
    } else {
      for (int w = 0; w < W; ++w) slots.push_back(by_sender[w][v]);
    }
  }
  result->ReserveRows(mine.lo, parts, slots);
  std::vector<uint64_t>().swap(counts);
  std::vector<uint64_t>().swap(slots);
  std::vector<std::vector<uint64_t>>().swap(by_sender);

  if (held == nullptr) {
    // Every worker holds the whole source: each keeps its range.
    for (int64_t p = 0; p < n; ++p) {
      permute(p);
      if (permuted[0] < mine.lo || permuted[0] >= mine.hi) continue;
      if (!result->PlaceInRows(permuted.data(), values + static_cast<size_t>(p) * bytes, 1, 0)) {
        return Status::Internal("PermuteRecords: an element outside the result's shape");
      }
    }
  } else {
    // Rounds: the busiest worker's share fixes how many, alike on every worker.
    Result<std::vector<std::vector<uint64_t>>> sizes =
        AllGatherCounts(options.all_gather, {static_cast<uint64_t>(n)});
    if (!sizes.ok()) return sizes.status();
    uint64_t most = 0;
    for (const std::vector<uint64_t>& s : *sizes) most = std::max(most, s[0]);
    const size_t round =
        std::clamp<size_t>((most + kMinRounds - 1) / kMinRounds, 1,
                           std::min(options.round_elements,
                                    std::max<size_t>(1, kRoundBytes / (rank * 8 + bytes))));
    std::vector<int64_t> scratch;
    for (uint64_t begin = 0; begin < most; begin += round) {
      const int64_t first = std::min<int64_t>(static_cast<int64_t>(begin), n);
      const int64_t last = std::min<int64_t>(static_cast<int64_t>(begin + round), n);
      std::vector<Outgoing> out(static_cast<size_t>(W));
      for (int64_t p = first; p < last; ++p) {
        permute(p);
        Outgoing& o = out[OwnerOf(plan, permuted[0])];
        o.keys.insert(o.keys.end(), permuted.begin(), permuted.end());
        const char* v = values + static_cast<size_t>(p) * bytes;
        o.values.insert(o.values.end(), v, v + bytes);
      }
      if (!result->PlaceInRows(out[me].keys.data(), out[me].values.data(), out[me].size(rank),
                               options.rank)) {
        return Status::Internal("PermuteRecords: an element outside the result's shape");
      }
      std::vector<std::string> messages(static_cast<size_t>(W));
      for (size_t w = 0; w < out.size(); ++w) {
        if (w != me) {
          messages[w] = Encode(out[w]);
          report.bytes_sent += messages[w].size();
        }
        out[w] = Outgoing();
      }
      Result<std::vector<std::string>> got = options.all_to_all(std::move(messages));
      if (!got.ok()) return got.status();
      for (size_t w = 0; w < got->size(); ++w) {
        if (w == me) continue;
        TESSERA_RETURN_IF_ERROR(PlaceFrom((*got)[w], static_cast<int>(w), result, &scratch));
        std::string().swap((*got)[w]);
      }
      ++report.rounds;
    }
  }
  const auto ordering = std::chrono::steady_clock::now();
  const bool finished = result->FinishRows(&mine);
  report.order_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - ordering).count();
  if (!finished) {
    return Status::DataLoss(
        "the permuted elements this worker received do not match the counts every worker sent "
        "(an element lost or held twice)");
  }
  // The round buffers are freed; what glibc keeps of them (distributed/malloc_policy.h) goes
  // back, or it would count in every worker's peak.
  malloc_trim(0);
  if (!options.keep_partitioned) {
    TESSERA_RETURN_IF_ERROR(GatherWhole(options.all_gather, result, &report.bytes_sent));
    report.held = result->size();
    return report;
  }
  report.partitioned = true;
  report.held = result->size();
  report.lo = mine.lo;
  report.hi = mine.hi;
  return report;
}

}  // namespace tessera::internal
