// load_triples and load_docword for arrays a distributed job keeps partitioned
// (input/load_share.h).
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fmt/format.h>
#include <kj/io.h>
#include <spdlog/spdlog.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "exchange/capnp_util.h"
#include "exchange/record_exchange.h"
#include "input/load_share.h"
#include "schedule/loop_blocks.h"
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

// A LoadedIds message: an error (or none), two lists and two counts.
std::string EncodeIds(const Status& error, bool error_in_test, const std::vector<int64_t>& users,
                      const std::vector<int64_t>& items, uint64_t train, uint64_t test) {
  capnp::MallocMessageBuilder message(
      static_cast<unsigned>(std::min<size_t>(16 + users.size() + items.size(), 1u << 28)));
  auto m = message.initRoot<proto::LoadedIds>();
  if (!error.ok()) {
    m.setError(error.message().empty() ? std::string(StatusCodeName(error.code()))
                                       : error.message());
    m.setErrorCode(ErrorCodeToProto(error.code()));
    m.setErrorInTest(error_in_test);
  }
  auto u = m.initUsers(static_cast<unsigned>(users.size()));
  for (size_t i = 0; i < users.size(); ++i) u.set(static_cast<unsigned>(i), users[i]);
  auto it = m.initItems(static_cast<unsigned>(items.size()));
  for (size_t i = 0; i < items.size(); ++i) it.set(static_cast<unsigned>(i), items[i]);
  m.setTrainCount(train);
  m.setTestCount(test);
  return FlattenMessage(message);
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
  return EncodeIds(share.error, share.error_in_test, Distinct(std::move(users)),
                   Distinct(std::move(items)), share.train.size(), share.test.size());
}

Status DecodeIds(const std::string& bytes, int from, WorkerIds* out) {
  return WithPeerMessage<proto::LoadedIds>(
      bytes, fmt::format("ids from worker {}", from), [out](proto::LoadedIds::Reader m) {
        if (m.getError().size() > 0) {
          out->error = StatusFromProto(m.getErrorCode(), m.getError());
          out->error_in_test = m.getErrorInTest();
        }
        for (int64_t id : m.getUsers()) out->users.push_back(id);
        for (int64_t id : m.getItems()) out->items.push_back(id);
        out->train = m.getTrainCount();
        out->test = m.getTestCount();
        return Status::Ok();
      });
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

// Equal-count cuts as CutsFromCounts gives them, from a histogram of the keys present only
// (increasing keys, their counts): a header's D bounds nothing that a dense histogram may take.
std::vector<int64_t> CutsFromSparseCounts(const std::vector<std::pair<int64_t, uint64_t>>& counts,
                                          int parts) {
  uint64_t n = 0;
  for (const auto& kc : counts) n += kc.second;
  std::vector<int64_t> cuts;
  if (n == 0) return cuts;
  uint64_t below = 0;
  int k = 1;
  for (const auto& [v, c] : counts) {
    if (k >= parts) break;
    below += c;
    while (k < parts && n * static_cast<uint64_t>(k) / static_cast<uint64_t>(parts) < below) {
      cuts.push_back(v);
      ++k;
    }
  }
  return cuts;
}

// The smallest key of a rank-2 `a` held twice, as (key[0], key[1]).
std::optional<std::pair<int64_t, int64_t>> SmallestDuplicate(const ArrayBase& a) {
  const int64_t n = a.size(), width = a.extent(1);
  std::vector<int64_t> linear(static_cast<size_t>(n));
  for (int64_t p = 0; p < n; ++p) linear[p] = a.key_component(p, 0) * width + a.key_component(p, 1);
  std::sort(linear.begin(), linear.end());
  const auto dup = std::adjacent_find(linear.begin(), linear.end());
  if (dup == linear.end()) return std::nullopt;
  return std::make_pair(*dup / width, *dup % width);
}

// A docword entry as the tokens are made from it (0-based ids): 16 bytes.
struct TokenEntry {
  int64_t doc;
  int32_t word;
  int32_t count;
};

bool KeyLess(const TokenEntry& a, const TokenEntry& b) {
  return a.doc < b.doc || (a.doc == b.doc && a.word < b.word);
}

// Parsed entries a worker ships at a time to the tokens path's holders: the batches and messages
// of a round (about 20 bytes per entry each) stay small beside the share and what it receives.
// A share is shipped in at least kMinRounds rounds, so that small files take the same path.
constexpr size_t kRoundEntries = size_t{1} << 19;
constexpr size_t kMinRounds = 8;

// A RecordShipment of one SparseRecords holding `entries` as keys (doc, word) and 4-byte counts,
// without places: the tokens path orders what it receives by key itself.
std::string EncodeEntries(const std::vector<TokenEntry>& entries) {
  capnp::MallocMessageBuilder message(
      static_cast<unsigned>(std::min<size_t>(32 + 3 * entries.size(), 1u << 28)));
  auto records = message.initRoot<proto::RecordShipment>().initArrays(1)[0];
  auto keys = records.initKeys(static_cast<unsigned>(2 * entries.size()));
  std::vector<int32_t> counts(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    keys.set(static_cast<unsigned>(2 * i), entries[i].doc);
    keys.set(static_cast<unsigned>(2 * i + 1), entries[i].word);
    counts[i] = entries[i].count;
  }
  records.setValues(kj::arrayPtr(reinterpret_cast<const kj::byte*>(counts.data()),
                                 counts.size() * sizeof(int32_t)));
  return FlattenMessage(message);
}

// Appends the entries of an EncodeEntries message from worker `from` to `into`, checking that
// each is one this worker holds: docs in [lo, hi), words below `vocab`.
Status DecodeEntries(const std::string& bytes, int from, int64_t lo, int64_t hi, int64_t vocab,
                     std::vector<TokenEntry>* into) {
  return WithPeerMessage<proto::RecordShipment>(
      bytes, fmt::format("entries from worker {}", from),
      [&](proto::RecordShipment::Reader shipment) -> Status {
        const auto arrays = shipment.getArrays();
        if (arrays.size() != 1) {
          return Status::DataLoss(
              fmt::format("worker {} sent entries of {} arrays", from, arrays.size()));
        }
        const auto keys = arrays[0].getKeys();
        const auto values = arrays[0].getValues();
        const size_t n = values.size() / sizeof(int32_t);
        if (values.size() % sizeof(int32_t) != 0 || keys.size() != 2 * n ||
            arrays[0].getOrderHigh().size() != 0 || arrays[0].getOrderLow().size() != 0) {
          return Status::DataLoss(fmt::format("worker {} sent {} keys and {} count bytes", from,
                                              keys.size(), values.size()));
        }
        into->reserve(into->size() + n);
        for (size_t i = 0; i < n; ++i) {
          const int64_t doc = keys[static_cast<unsigned>(2 * i)];
          const int64_t word = keys[static_cast<unsigned>(2 * i + 1)];
          if (doc < lo || doc >= hi || word < 0 || word >= vocab) {
            return Status::DataLoss(fmt::format(
                "worker {} sent entry (doc {}, word {}) outside docs [{}, {}) x words [0, {})", from,
                doc, word, lo, hi, vocab));
          }
          int32_t count;
          std::memcpy(&count, values.begin() + i * sizeof(int32_t), sizeof(int32_t));
          into->push_back({doc, static_cast<int32_t>(word), count});
        }
        return Status::Ok();
      });
}

// The tokens path's exchange: each parsed entry to the holder of its document, without its
// place, in rounds of at most kRoundEntries parsed entries per worker (`most` parsed entries on
// the busiest worker fixes the rounds, alike on every worker). Returns what this worker
// holds, as one run per round and sender (each in its sender's file order); the parsed share
// goes when the last round is sent.
Result<std::vector<std::vector<TokenEntry>>> ShipEntries(const LoadSplit& split,
                                                         const RecordPlan& plan, int64_t vocab,
                                                         std::vector<DocwordEntry> entries,
                                                         uint64_t most) {
  const size_t W = static_cast<size_t>(split.num_workers), rank = static_cast<size_t>(split.rank);
  const int64_t lo = plan.bounds[rank], hi = plan.bounds[rank + 1];
  const size_t round = std::clamp<size_t>((most + kMinRounds - 1) / kMinRounds, 1, kRoundEntries);
  std::vector<std::vector<TokenEntry>> held;
  for (size_t begin = 0; begin < most; begin += round) {
    const size_t first = std::min(begin, entries.size());
    const size_t last = std::min(begin + round, entries.size());
    std::vector<std::vector<TokenEntry>> out(W);
    for (size_t i = first; i < last; ++i) {
      const DocwordEntry& e = entries[i];
      out[OwnerOf(plan, e.doc - 1)].push_back(
          {e.doc - 1, static_cast<int32_t>(e.word - 1), e.count});
    }
    std::vector<std::string> messages(W);
    for (size_t w = 0; w < W; ++w) {
      if (w == rank) continue;
      messages[w] = EncodeEntries(out[w]);
      std::vector<TokenEntry>().swap(out[w]);
    }
    if (!out[rank].empty()) held.push_back(std::move(out[rank]));
    Result<std::vector<std::string>> got = split.exchange(std::move(messages));
    if (!got.ok()) return got.status();
    for (size_t w = 0; w < W; ++w) {
      if (w == rank) continue;
      std::vector<TokenEntry> from;
      TESSERA_RETURN_IF_ERROR(DecodeEntries((*got)[w], static_cast<int>(w), lo, hi, vocab, &from));
      std::string().swap((*got)[w]);
      if (!from.empty()) held.push_back(std::move(from));
    }
  }
  return held;
}

// Calls emit(e) for every entry of `runs` (each sorted by key) in key order, freeing each run
// once used up; the smallest key met twice goes to *dup.
template <typename Emit>
void MergeSortedRuns(std::vector<std::vector<TokenEntry>>* runs, Emit&& emit,
                     std::optional<std::pair<int64_t, int64_t>>* dup) {
  std::vector<std::vector<TokenEntry>>& r = *runs;
  std::vector<size_t> at(r.size(), 0), heap;
  // A min-heap of runs by their next entry.
  auto later = [&](size_t a, size_t b) { return KeyLess(r[b][at[b]], r[a][at[a]]); };
  for (size_t i = 0; i < r.size(); ++i) {
    if (!r[i].empty()) heap.push_back(i);
  }
  std::make_heap(heap.begin(), heap.end(), later);
  bool any = false;
  TokenEntry last{};
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const size_t c = heap.back();
    // The run's entries go while they stay below every other run's next one.
    do {
      const TokenEntry& e = r[c][at[c]];
      if (any && !dup->has_value() && e.doc == last.doc && e.word == last.word) {
        *dup = std::make_pair(e.doc, static_cast<int64_t>(e.word));
      }
      last = e;
      any = true;
      emit(e);
      ++at[c];
    } while (at[c] < r[c].size() && (heap.size() == 1 || !later(c, heap.front())));
    if (at[c] < r[c].size()) {
      std::push_heap(heap.begin(), heap.end(), later);
    } else {
      std::vector<TokenEntry>().swap(r[c]);
      heap.pop_back();
    }
  }
}

// Replaces corpus->counts by an empty array and makes corpus->tokens from the entries that
// for_each_entry(emit) passes to emit in key order: `held_tokens` tokens, the last key dim as
// long as the job's longest document (`longest`). With `partition` the tokens are this worker's
// share, in serial order (their keys'), without stored places.
template <typename ForEachEntry>
void MakeTokens(Context& ctx, Corpus* corpus, const ArrayOrigin& origin,
                const RecordPartition* partition, int64_t held_tokens, int64_t longest,
                ForEachEntry&& for_each_entry) {
  ArrayOrigin counts_origin = origin;
  counts_origin.member = "counts";
  corpus->counts = DistArray<int32_t, 2>::WithOrigin(ctx, {corpus->num_docs, corpus->vocab_size},
                                                     /*sparse=*/true, counts_origin);
  corpus->max_doc_length = longest;
  ArrayOrigin tokens_origin = origin;
  tokens_origin.member = "tokens";
  corpus->tokens = DistArray<int64_t, 3>::WithOrigin(
      ctx, {corpus->num_docs, corpus->vocab_size, std::max<int64_t>(1, longest)},
      /*sparse=*/true, tokens_origin);
  corpus->tokens.reserve(held_tokens);
  int64_t j = 0, doc = -1;
  for_each_entry([&](const TokenEntry& e) {
    if (e.doc != doc) j = 0;
    doc = e.doc;
    for (int32_t c = 0; c < e.count; ++c, ++j) {
      corpus->tokens.append_unchecked({{e.doc, e.word, j}}, 0);
    }
  });
  if (partition != nullptr) {
    // The share is in serial order, its keys' order, already: it becomes this worker's
    // partition as it stands, without a copy through a record batch (ImportRecords would hold
    // both) and without stored places (they are the keys').
    auto& storage =
        static_cast<ArrayStorage<int64_t, 3>&>(const_cast<ArrayBase&>(corpus->tokens.base()));
    storage.AdoptPartitionInKeyOrder(*partition);
  }
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
  constexpr size_t kRelease = size_t{1} << 18;  // records per ReleasePages: 6 MiB
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
      if ((i + 1) % kRelease == 0) {
        ReleasePages(records.data() + (i + 1 - kRelease), kRelease * sizeof(RatingRecord));
      }
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


Result<Corpus> LoadDocwordPartitioned(
    Context& ctx, const std::string& path, const DocwordShape& shape, const LoadSplit& split,
    DocwordShare share, ArrayOrigin origin, bool tokens_wanted,
    const std::function<std::string(int64_t doc, int64_t word)>& second_occurrence) {
  const auto start = std::chrono::steady_clock::now();
  // The docs this worker parsed with their entry counts, and its tokens. The message is a
  // LoadedIds: `users` the docs present (0-based), `items` their entry counts, `trainCount` the
  // entries and `testCount` the tokens.
  std::vector<int64_t> docs, doc_entries;
  uint64_t tokens = 0;
  if (share.error.ok()) {
    std::vector<std::pair<int64_t, uint64_t>> runs;  // entries are mostly grouped by doc
    for (const DocwordEntry& e : share.entries) {
      if (runs.empty() || runs.back().first != e.doc - 1) runs.emplace_back(e.doc - 1, 0);
      // Tokens are cut into equal-token ranges, the ranges a loop over them cuts: no token
      // moves at the first loop.
      runs.back().second += tokens_wanted ? static_cast<uint64_t>(e.count) : 1;
      tokens += static_cast<uint64_t>(e.count);
    }
    std::sort(runs.begin(), runs.end());
    for (const auto& [d, c] : runs) {
      if (!docs.empty() && docs.back() == d) {
        doc_entries.back() += static_cast<int64_t>(c);
      } else {
        docs.push_back(d);
        doc_entries.push_back(static_cast<int64_t>(c));
      }
    }
  }
  Result<std::vector<WorkerIds>> ids = GatherIds(
      split, EncodeIds(share.error, false, docs, doc_entries, share.entries.size(), tokens));
  if (!ids.ok()) return ids.status();
  uint64_t entries_total = 0, tokens_total = 0, most_entries = 0;
  std::vector<uint64_t> entry_offset;
  std::vector<std::pair<int64_t, uint64_t>> histogram;
  for (WorkerIds& w : *ids) {
    if (!w.error.ok()) return w.error;  // the first in rank order: a whole-file read's first
    if (w.users.size() != w.items.size()) {
      return Status::DataLoss(fmt::format("a worker sent {} docs with {} entry counts",
                                          w.users.size(), w.items.size()));
    }
    entry_offset.push_back(entries_total);
    entries_total += w.train;
    most_entries = std::max(most_entries, w.train);
    tokens_total += w.test;
    for (size_t i = 0; i < w.users.size(); ++i) {
      if (w.users[i] < 0 || w.users[i] >= shape.docs || w.items[i] < 0) {
        return Status::DataLoss(fmt::format("a worker sent doc {} outside [0, {})", w.users[i],
                                            shape.docs));
      }
      histogram.emplace_back(w.users[i], static_cast<uint64_t>(w.items[i]));
    }
    std::vector<int64_t>().swap(w.users);
    std::vector<int64_t>().swap(w.items);
  }
  std::sort(histogram.begin(), histogram.end());
  size_t kept = 0;  // equal docs (a document split between two workers' ranges) summed
  for (size_t i = 0; i < histogram.size(); ++i) {
    if (kept > 0 && histogram[kept - 1].first == histogram[i].first) {
      histogram[kept - 1].second += histogram[i].second;
    } else {
      histogram[kept++] = histogram[i];
    }
  }
  histogram.resize(kept);
  uint64_t longest = 0;  // with tokens: the job's longest document
  for (const auto& [doc, count] : histogram) longest = std::max(longest, count);
  const int W = split.num_workers;
  // Equal-count document ranges, one per worker: the layout of a loop over documents.
  const RecordPlan plan = PlanFromCuts(0, shape.docs, CutsFromSparseCounts(histogram, W), 1, W,
                                       static_cast<int64_t>(entries_total));
  std::vector<std::pair<int64_t, uint64_t>>().swap(histogram);
  const double parse_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  Corpus corpus;
  corpus.num_docs = shape.docs;
  corpus.vocab_size = shape.vocab;
  corpus.num_tokens = static_cast<int64_t>(tokens_total);
  corpus.counts =
      DistArray<int32_t, 2>::WithOrigin(ctx, {shape.docs, shape.vocab}, /*sparse=*/true, origin);
  auto& counts = const_cast<ArrayBase&>(corpus.counts.base());
  const size_t rank = static_cast<size_t>(split.rank);
  std::optional<std::pair<int64_t, int64_t>> dup;  // the smallest (doc, word) held twice
  size_t held_entries = 0;
  if (tokens_wanted) {
    // Every worker decides alike, from the totals every worker has.
    TESSERA_RETURN_IF_ERROR(CheckTokensFit(path, tokens_total, W, ""));
    // Entries go to their holders without places, a round at a time, and become tokens as they
    // are merged in key order: the counts array never holds them.
    Result<std::vector<std::vector<TokenEntry>>> runs =
        ShipEntries(split, plan, shape.vocab, std::move(share.entries), most_entries);
    if (!runs.ok()) return runs.status();
    int64_t held_tokens = 0;
    for (std::vector<TokenEntry>& run : *runs) {
      std::sort(run.begin(), run.end(), KeyLess);
      held_entries += run.size();
      for (const TokenEntry& e : run) held_tokens += e.count;
    }
    RecordPartition mine_part;
    mine_part.dim = 0;
    mine_part.lo = plan.bounds[rank];
    mine_part.hi = plan.bounds[rank + 1];
    mine_part.global_size = static_cast<int64_t>(tokens_total);
    MakeTokens(ctx, &corpus, origin, &mine_part, held_tokens, static_cast<int64_t>(longest),
               [&](auto&& emit) { MergeSortedRuns(&*runs, emit, &dup); });
  } else {
    // Each entry straight to the holder of its document, with its place in file order.
    std::vector<std::vector<RecordBatch>> out(static_cast<size_t>(W), std::vector<RecordBatch>(1));
    std::vector<size_t> sizes(static_cast<size_t>(W), 0);
    for (const DocwordEntry& e : share.entries) ++sizes[OwnerOf(plan, e.doc - 1)];
    for (size_t w = 0; w < sizes.size(); ++w) {
      out[w][0].keys.reserve(2 * sizes[w]);
      out[w][0].values.reserve(sizes[w] * sizeof(int32_t));
      out[w][0].order.reserve(sizes[w]);
    }
    for (size_t i = 0; i < share.entries.size(); ++i) {
      const DocwordEntry& e = share.entries[i];
      RecordBatch& b = out[OwnerOf(plan, e.doc - 1)][0];
      b.keys.push_back(e.doc - 1);
      b.keys.push_back(e.word - 1);
      const char* bytes = reinterpret_cast<const char*>(&e.count);
      b.values.insert(b.values.end(), bytes, bytes + sizeof(int32_t));
      b.order.push_back({0, entry_offset[rank] + i});
    }
    std::vector<DocwordEntry>().swap(share.entries);
    TESSERA_RETURN_IF_ERROR(
        ExchangeRecords(split.exchange, split.rank, {&counts}, {plan}, std::move(out)));
    dup = SmallestDuplicate(counts);
    held_entries = counts.size();
  }

  // Every (doc, word) now lives on one worker: the smallest held twice is found there (the
  // ranges increase with rank) and named at its second occurrence, as a whole-file read does.
  std::vector<int64_t> mine;
  if (dup) mine = {dup->first, dup->second};
  Result<std::vector<WorkerIds>> verdicts =
      GatherIds(split, EncodeIds(Status::Ok(), false, mine, {}, 0, 0));
  if (!verdicts.ok()) return verdicts.status();
  for (const WorkerIds& w : *verdicts) {
    if (w.users.size() != 2) continue;
    const int64_t doc = w.users[0] + 1, word = w.users[1] + 1;
    return Status::InvalidArgument(fmt::format("{}: (docID {}, wordID {}) appears twice",
                                               second_occurrence(doc, word), doc, word));
  }
  if (static_cast<int64_t>(entries_total) != shape.nnz) {
    return Status::DataLoss(fmt::format("{}: the header promises NNZ = {} entries, the file has {}",
                                        path, shape.nnz, entries_total));
  }
  malloc_trim(0);  // as after load_triples' exchange
  ctx.logger().info(
      "loaded {}: {} of {} entries held by this worker{}, docs [{}, {}) (partitioned; parse "
      "{:.3f} s, exchange {:.3f} s)",
      path, held_entries, entries_total,
      tokens_wanted ? fmt::format(" as {} of {} tokens", corpus.tokens.base().size(), tokens_total)
                    : std::string(),
      plan.bounds[rank], plan.bounds[rank + 1], parse_seconds,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() -
          parse_seconds);
  return corpus;
}

Status CheckTokensFit(const std::string& path, uint64_t tokens, int workers,
                      const std::string& what) {
  const double need = static_cast<double>(tokens) * 32 / std::max(workers, 1);
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const double have = pages > 0 && page > 0 ? static_cast<double>(pages) * page : 0;
  if (have <= 0 || need <= have) return Status::Ok();
  return Status::InvalidArgument(fmt::format(
      "{}: its tokens need about {:.1f} GiB{}, more than this machine's {:.1f} GiB: {} tokens (the "
      "sum of the counts{})",
      path, need / (1 << 30), workers > 1 ? fmt::format(" per worker of {}", workers) : "",
      have / (1 << 30), tokens, what.empty() ? "" : "; " + what));
}

void ExpandTokens(Context& ctx, Corpus* corpus, const ArrayOrigin& origin) {
  // This worker's entries in key order (its share's order is then the serial one), copied out
  // compactly so that the entries' memory goes before the tokens are built, in chunks that are
  // freed (and, being large, unmapped) as soon as their tokens are made: the entries and the
  // tokens are never both whole. The storage is read directly: element access would gather a
  // partitioned array whole.
  corpus->counts.sort_keys();
  constexpr size_t kChunk = size_t{1} << 17;  // 2 MiB of entries
  std::vector<std::vector<TokenEntry>> entries;
  int64_t held_tokens = 0, longest = 0;
  {
    const auto& held =
        static_cast<const ArrayStorage<int32_t, 2>&>(corpus->counts.base());
    int64_t length = 0;
    for (size_t p = 0; p < held.keys_.size(); ++p) {
      const Key<2>& k = held.keys_[p];
      if (p > 0 && held.keys_[p - 1].idx[0] != k.idx[0]) length = 0;
      if (p % kChunk == 0) {
        entries.emplace_back();
        entries.back().reserve(std::min(kChunk, held.keys_.size() - p));
      }
      entries.back().push_back({k.idx[0], static_cast<int32_t>(k.idx[1]), held.values_[p]});
      length += held.values_[p];
      held_tokens += held.values_[p];
      longest = std::max(longest, length);
    }
  }
  MakeTokens(ctx, corpus, origin, /*partition=*/nullptr, held_tokens, longest,
             [&entries](auto&& emit) {
               for (std::vector<TokenEntry>& chunk : entries) {
                 for (const TokenEntry& e : chunk) emit(e);
                 std::vector<TokenEntry>().swap(chunk);
               }
             });
}

}  // namespace tessera::internal
