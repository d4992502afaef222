// load_triples for arrays a distributed job keeps partitioned (internal/load_share.h).
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fmt/format.h>
#include <kj/io.h>
#include <spdlog/spdlog.h>
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>

#include "internal/capnp_util.h"
#include "internal/load_share.h"
#include "internal/loop_blocks.h"
#include "internal/record_exchange.h"
#include "tessera/proto/tessera.capnp.h"

namespace tessera::internal {
namespace {

// What one worker said in a LoadedIds message.
struct WorkerIds {
  Status error;
  bool error_in_test = false;
  std::vector<int64_t> users, items;
  uint64_t train = 0, test = 0;
};

std::vector<int64_t> Distinct(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::string EncodeIds(const RatingShare& share) {
  std::vector<int64_t> users, items;
  if (share.error.ok()) {
    for (const auto* set : {&share.train, &share.test}) {
      for (const RatingRecord& r : *set) {
        users.push_back(r.user);
        items.push_back(r.item);
      }
    }
  }
  users = Distinct(std::move(users));
  items = Distinct(std::move(items));
  capnp::MallocMessageBuilder message(
      static_cast<unsigned>(std::min<size_t>(16 + users.size() + items.size(), 1u << 28)));
  auto m = message.initRoot<proto::LoadedIds>();
  if (!share.error.ok()) {
    m.setError(share.error.message().empty() ? std::string(StatusCodeName(share.error.code()))
                                             : share.error.message());
    m.setErrorCode(ErrorCodeToProto(share.error.code()));
    m.setErrorInTest(share.error_in_test);
  }
  auto u = m.initUsers(static_cast<unsigned>(users.size()));
  for (size_t i = 0; i < users.size(); ++i) u.set(static_cast<unsigned>(i), users[i]);
  auto it = m.initItems(static_cast<unsigned>(items.size()));
  for (size_t i = 0; i < items.size(); ++i) it.set(static_cast<unsigned>(i), items[i]);
  m.setTrainCount(share.train.size());
  m.setTestCount(share.test.size());
  return FlattenMessage(message);
}

Status DecodeIds(const std::string& bytes, int from, WorkerIds* out) {
  if (bytes.empty() || bytes.size() % sizeof(capnp::word) != 0) {
    return Status::DataLoss(fmt::format("worker {} sent {} bytes of ids", from, bytes.size()));
  }
  kj::Array<capnp::word> words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes.data(), bytes.size());
  try {
    capnp::FlatArrayMessageReader reader(words.asPtr(), PeerPayloadOptions(words.size()));
    auto m = reader.getRoot<proto::LoadedIds>();
    if (m.getError().size() > 0) {
      out->error = StatusFromProto(m.getErrorCode(), m.getError());
      out->error_in_test = m.getErrorInTest();
    }
    for (int64_t id : m.getUsers()) out->users.push_back(id);
    for (int64_t id : m.getItems()) out->items.push_back(id);
    out->train = m.getTrainCount();
    out->test = m.getTestCount();
  } catch (const kj::Exception& e) {
    return Status::DataLoss(
        fmt::format("malformed ids from worker {}: {}", from, e.getDescription().cStr()));
  }
  return Status::Ok();
}

// The first error of any worker, in rank order: one that is not `later` before one that is.
Result<std::vector<WorkerIds>> GatherIds(const LoadSplit& split, std::string mine) {
  Result<std::vector<std::string>> all = split.gather(std::move(mine));
  if (!all.ok()) return all.status();
  std::vector<WorkerIds> ids(all->size());
  for (size_t w = 0; w < all->size(); ++w) {
    TESSERA_RETURN_IF_ERROR(DecodeIds((*all)[w], static_cast<int>(w), &ids[w]));
  }
  return ids;
}

// The smallest key `a` holds twice, as the error a whole-file read reports, or Ok.
Status FindDuplicate(const std::string& path, const ArrayBase& a, const IdMap& users,
                     const IdMap& items) {
  const int64_t n = a.size(), width = a.extent(1);
  std::vector<int64_t> linear(static_cast<size_t>(n));
  for (int64_t p = 0; p < n; ++p) linear[p] = a.key_component(p, 0) * width + a.key_component(p, 1);
  std::sort(linear.begin(), linear.end());
  const auto dup = std::adjacent_find(linear.begin(), linear.end());
  if (dup == linear.end()) return Status::Ok();
  return Status::InvalidArgument(fmt::format("{}: user {} rated item {} more than once", path,
                                             users.external(*dup / width),
                                             items.external(*dup % width)));
}

}  // namespace

template <typename T>
Result<TripleData<T>> LoadTriplesPartitioned(Context& ctx, const std::string& path,
                                             const TripleOptions& options, const LoadSplit& split,
                                             RatingShare share, ArrayOrigin origin) {
  const auto start = std::chrono::steady_clock::now();
  Result<std::vector<WorkerIds>> ids = GatherIds(split, EncodeIds(share));
  if (!ids.ok()) return ids.status();
  // Errors as a whole-file read reports them: the training file's first, then an empty file,
  // then the held-out file's.
  const WorkerIds* first = nullptr;
  uint64_t train_total = 0, test_total = 0;
  std::vector<uint64_t> train_offset, test_offset;
  for (const WorkerIds& w : *ids) {
    if (!w.error.ok() && (first == nullptr || (first->error_in_test && !w.error_in_test)))
      first = &w;
    train_offset.push_back(train_total);
    test_offset.push_back(test_total);
    train_total += w.train;
    test_total += w.test;
  }
  if (first != nullptr && !first->error_in_test) return first->error;
  if (train_total == 0) return Status::InvalidArgument(fmt::format("{}: no ratings", path));
  if (first != nullptr) return first->error;

  std::vector<int64_t> user_ids, item_ids;
  for (WorkerIds& w : *ids) {
    user_ids.insert(user_ids.end(), w.users.begin(), w.users.end());
    item_ids.insert(item_ids.end(), w.items.begin(), w.items.end());
    std::vector<int64_t>().swap(w.users);
    std::vector<int64_t>().swap(w.items);
  }
  TripleData<T> data;
  data.users = IdMap(std::move(user_ids));
  data.items = IdMap(std::move(item_ids));
  const std::array<int64_t, 2> shape{data.users.size(), data.items.size()};
  origin.member = "train";
  data.train = DistArray<T, 2>::WithOrigin(ctx, shape, /*sparse=*/true, origin);
  origin.member = "test";
  data.test = DistArray<T, 2>::WithOrigin(ctx, shape, /*sparse=*/true, origin);

  // Equal-count user ranges, one per worker (the layout a loop over users wants).
  auto& train = const_cast<ArrayBase&>(data.train.base());
  auto& test = const_cast<ArrayBase&>(data.test.base());
  std::vector<uint64_t> counts(static_cast<size_t>(2 * shape[0]), 0);
  for (const RatingRecord& r : share.train) ++counts[static_cast<size_t>(data.users.index(r.user))];
  for (const RatingRecord& r : share.test) {
    ++counts[static_cast<size_t>(shape[0] + data.users.index(r.user))];
  }
  const double parse_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Result<std::vector<uint64_t>> sum = SumCounts(split.gather, std::move(counts));
  if (!sum.ok()) return sum.status();
  const std::vector<uint64_t> train_counts(sum->begin(), sum->begin() + shape[0]);
  const std::vector<uint64_t> test_counts(sum->begin() + shape[0], sum->end());
  std::vector<uint64_t>().swap(*sum);
  const int W = split.num_workers;
  const RecordPlan train_plan = PlanFromCuts(0, shape[0], CutsFromCounts(train_counts, W), 1, W,
                                             static_cast<int64_t>(train_total));
  const RecordPlan test_plan = PlanFromCuts(0, shape[0], CutsFromCounts(test_counts, W), 1, W,
                                            static_cast<int64_t>(test_total));

  // Each record straight to its holder as an element, with its place in file order; the parsed
  // records go as soon as they are copied, so a worker never holds its share twice over.
  std::vector<std::vector<RecordBatch>> out(static_cast<size_t>(W), std::vector<RecordBatch>(2));
  auto ship = [&](std::vector<RatingRecord>& records, uint64_t offset, const RecordPlan& plan,
                  size_t a) {
    std::vector<size_t> sizes(static_cast<size_t>(W), 0);
    for (const RatingRecord& r : records) ++sizes[OwnerOf(plan, data.users.index(r.user))];
    for (size_t w = 0; w < sizes.size(); ++w) {
      out[w][a].keys.reserve(2 * sizes[w]);
      out[w][a].values.reserve(sizes[w] * sizeof(T));
      out[w][a].order.reserve(sizes[w]);
    }
    for (size_t i = 0; i < records.size(); ++i) {
      const int64_t u = data.users.index(records[i].user), it = data.items.index(records[i].item);
      RecordBatch& b = out[OwnerOf(plan, u)][a];
      b.keys.push_back(u);
      b.keys.push_back(it);
      const T v = static_cast<T>(records[i].value);
      const char* bytes = reinterpret_cast<const char*>(&v);
      b.values.insert(b.values.end(), bytes, bytes + sizeof(T));
      b.order.push_back({0, offset + i});
    }
    std::vector<RatingRecord>().swap(records);
  };
  const size_t rank = static_cast<size_t>(split.rank);
  ship(share.train, train_offset[rank], train_plan, 0);
  ship(share.test, test_offset[rank], test_plan, 1);
  TESSERA_RETURN_IF_ERROR(ExchangeRecords(split.exchange, split.rank, {&train, &test},
                                          {train_plan, test_plan}, std::move(out)));

  // Every key now lives on one worker: duplicates are found there, and the smallest is reported
  // (the ranges increase with rank), as a whole-file read does.
  RatingShare verdict;
  verdict.error = FindDuplicate(path, train, data.users, data.items);
  if (verdict.error.ok()) {
    verdict.error = FindDuplicate(options.test_path.empty() ? path : options.test_path, test,
                                  data.users, data.items);
    verdict.error_in_test = true;
  }
  Result<std::vector<WorkerIds>> verdicts = GatherIds(split, EncodeIds(verdict));
  if (!verdicts.ok()) return verdicts.status();
  const WorkerIds* dup = nullptr;
  for (const WorkerIds& w : *verdicts) {
    if (!w.error.ok() && (dup == nullptr || (dup->error_in_test && !w.error_in_test))) dup = &w;
  }
  if (dup != nullptr) return dup->error;
  // The exchange's buffers are freed by now; what glibc still keeps of them in its heap (see
  // distributed/malloc_policy.h) goes back, or it would count in every worker's peak.
  malloc_trim(0);
  ctx.logger().info(
      "loaded {}: {} of {} training and {} of {} held-out ratings held by this worker, users "
      "[{}, {}) (partitioned; parse {:.3f} s, exchange {:.3f} s)",
      path, train.size(), train_total, test.size(), test_total, train_plan.bounds[rank],
      train_plan.bounds[rank + 1], parse_seconds,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() -
          parse_seconds);
  return data;
}

template Result<TripleData<float>> LoadTriplesPartitioned<float>(Context&, const std::string&,
                                                                 const TripleOptions&,
                                                                 const LoadSplit&, RatingShare,
                                                                 ArrayOrigin);
template Result<TripleData<double>> LoadTriplesPartitioned<double>(Context&, const std::string&,
                                                                   const TripleOptions&,
                                                                   const LoadSplit&, RatingShare,
                                                                   ArrayOrigin);

}  // namespace tessera::internal
