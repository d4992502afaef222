#include "permute/assign_permuted.h"

#include <capnp/message.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "exchange/capnp_util.h"
#include "tessera/common/check.h"
#include "tessera/proto/tessera.capnp.h"

namespace tessera::internal {

struct PermutedValuesPlan {
  int64_t a_id = -1, b_id = -1;
  uint64_t a_version = 0, b_version = 0;
  std::vector<int> perm;
  bool distributed = false;
  // Distributed: the rounds A's elements travel in (round r: A positions [r * round, (r + 1) *
  // round)).
  size_t round = 0;
  int rounds = 0;
  // to_b[s]: the positions in B (held here) of worker s's elements of A that belong here, in s's
  // storage order; local: to_b[0][i] for every position i of A.
  std::vector<std::vector<uint32_t>> to_b;
  // Distributed: how many of to_b[s] round r brings from another worker s (received[s][r]), and
  // how many of this worker's round r belong to worker o (sent[o][r], this worker's own too).
  std::vector<std::vector<uint32_t>> received, sent;
  // Distributed: A's positions as runs of one owner (A's order keeps a key's leading components
  // together, so its elements' owners come in long runs: a document's words, for LDA): run k ends
  // before position runs[k].end. The exchanges copy run by run, a remote run's values as one block,
  // without looking at A's keys.
  struct Run {
    uint32_t end;
    uint32_t owner;
  };
  std::vector<Run> runs;
};

void PermutedValuesPlanDeleter::operator()(PermutedValuesPlan* plan) const { delete plan; }

size_t PlanBytes(const PermutedValuesPlan& plan) {
  size_t bytes = sizeof(plan);
  for (const auto& v : plan.to_b) bytes += v.capacity() * sizeof(uint32_t);
  for (const auto& v : plan.received) bytes += v.capacity() * sizeof(uint32_t);
  for (const auto& v : plan.sent) bytes += v.capacity() * sizeof(uint32_t);
  return bytes + plan.runs.capacity() * sizeof(PermutedValuesPlan::Run);
}

namespace {

// A share is shipped in at least this many rounds (as the loaders and permuted do), so that
// small arrays take the same path as large ones.
constexpr size_t kMinRounds = 8;
// At most this many bytes of values per worker and round: below a worker's mmap threshold
// (distributed/malloc_policy.h), so that messages come from the heap, not from fresh mappings
// whose page faults cost more than fewer rounds save (tuned in bench/README.md, "The current -w 2
// picture").
constexpr size_t kRoundBytes = size_t{512} << 10;

std::string KeyText(const int64_t* key, int rank) {
  std::string s = "(";
  for (int d = 0; d < rank; ++d) s += (d > 0 ? ", " : "") + std::to_string(key[d]);
  return s + ")";
}

// The elements of a sparse array's storage found by key: positions in key order (none stored when
// the storage is in key order, as a loaded, permuted or key-sorted array is), where each key[0]
// row starts among them, and per row and sender where that sender's last lookup ended, so that
// keys each sender asks for in key order within each row (A's elements in A's order, for B = A's
// other order) are found in O(1), however the senders' keys interleave.
class KeyIndex {
 public:
  // Every element's key[0] is in [row_lo, row_hi) (checked: a share's range, or the whole
  // extent); keys of other rows are not found. Lookups come from `senders` senders (0 ..
  // senders - 1).
  KeyIndex(const ArrayBase& array, int64_t row_lo, int64_t row_hi, int senders)
      : keys_(array.size() > 0 ? array.key_data() : nullptr),
        rank_(array.rank()),
        row_lo_(row_lo),
        row_hi_(row_hi),
        senders_(static_cast<size_t>(senders)) {
    const int64_t n = array.size();
    bool sorted = true;
    for (int64_t p = 1; p < n && sorted; ++p) sorted = Less(p - 1, p);
    if (!sorted) {
      order_.resize(static_cast<size_t>(n));
      for (int64_t p = 0; p < n; ++p) order_[p] = p;
      std::sort(order_.begin(), order_.end(), [this](int64_t x, int64_t y) { return Less(x, y); });
    }
    row_start_.assign(static_cast<size_t>(row_hi_ - row_lo_) + 1, 0);
    for (int64_t p = 0; p < n; ++p) {
      const int64_t r = Key(p)[0];
      TESSERA_CHECK_MSG(r >= row_lo_ && r < row_hi_, "KeyIndex: an element outside its rows");
      ++row_start_[r - row_lo_ + 1];
    }
    for (size_t r = 1; r < row_start_.size(); ++r) row_start_[r] += row_start_[r - 1];
    hint_.resize((row_start_.size() - 1) * senders_);
    for (size_t row = 0; row + 1 < row_start_.size(); ++row) {
      for (size_t w = 0; w < senders_; ++w) hint_[row * senders_ + w] = row_start_[row];
    }
  }

  // The position of `key` asked for by `sender`, or -1 when the array holds no such element
  // (here).
  int64_t Find(const int64_t* key, size_t sender) {
    const int64_t r = key[0];
    if (r < row_lo_ || r >= row_hi_) return -1;
    const size_t row = static_cast<size_t>(r - row_lo_);
    const int64_t lo = row_start_[row], hi = row_start_[row + 1];
    int64_t& hint = hint_[row * senders_ + sender];
    if (hint < hi && Equal(Sorted(hint), key)) return Sorted(hint++);
    int64_t first = lo, count = hi - lo;  // lower_bound over the row
    while (count > 0) {
      const int64_t step = count / 2;
      if (std::lexicographical_compare(Key(Sorted(first + step)) + 1,
                                       Key(Sorted(first + step)) + rank_, key + 1, key + rank_)) {
        first += step + 1;
        count -= step + 1;
      } else {
        count = step;
      }
    }
    if (first == hi || !Equal(Sorted(first), key)) return -1;
    hint = first + 1;
    return Sorted(first);
  }

 private:
  const int64_t* Key(int64_t p) const { return keys_ + static_cast<size_t>(p) * rank_; }
  int64_t Sorted(int64_t i) const { return order_.empty() ? i : order_[static_cast<size_t>(i)]; }
  bool Less(int64_t x, int64_t y) const {
    return std::lexicographical_compare(Key(x), Key(x) + rank_, Key(y), Key(y) + rank_);
  }
  bool Equal(int64_t p, const int64_t* key) const {
    return std::equal(Key(p), Key(p) + rank_, key);
  }

  const int64_t* keys_;
  int rank_;
  int64_t row_lo_, row_hi_;
  size_t senders_;
  std::vector<int64_t> order_;
  std::vector<int64_t> row_start_;
  std::vector<int64_t> hint_;
};

// An element of B no element of A maps to (`hit` marks those that one does).
Status Uncovered(const ArrayBase& b, const std::vector<bool>& hit) {
  for (size_t p = 0; p < hit.size(); ++p) {
    if (!hit[p]) {
      return Status::InvalidArgument(fmt::format(
          "the arrays do not hold the same elements: array #{} holds {}, which no element of the "
          "other array permutes to",
          b.id(), KeyText(b.key_data() + p * static_cast<size_t>(b.rank()), b.rank())));
    }
  }
  return Status::Ok();
}

Status NotInB(const ArrayBase& a, const ArrayBase& b, const int64_t* a_key,
              const std::string& where) {
  return Status::InvalidArgument(fmt::format(
      "the arrays do not hold the same elements: array #{}'s element {} has no counterpart in "
      "array #{}{}",
      a.id(), KeyText(a_key, a.rank()), b.id(), where));
}

uint32_t Position32(int64_t p) {
  TESSERA_CHECK_MSG(p >= 0 && p <= std::numeric_limits<uint32_t>::max(),
                    "assign_permuted: a share of more than 2^32 elements on one worker");
  return static_cast<uint32_t>(p);
}

// How many elements ahead the copies below prefetch their random accesses: the hardware cannot
// guess them, and the out-of-order core alone keeps too few misses in flight (tuned in
// bench/README.md, "`assign_permuted`'s copies, prefetched").
constexpr size_t kPrefetchAhead = 256;

// out[j] = values[index[j]] (gather) or values[index[j]] = in[j] (scatter), for E-byte elements.
template <size_t E>
void GatherT(const char* values, const uint32_t* index, size_t n, char* out) {
  size_t j = 0;
  for (; j + kPrefetchAhead < n; ++j) {
    __builtin_prefetch(values + static_cast<size_t>(index[j + kPrefetchAhead]) * E, 0);
    std::memcpy(out + j * E, values + static_cast<size_t>(index[j]) * E, E);
  }
  for (; j < n; ++j) std::memcpy(out + j * E, values + static_cast<size_t>(index[j]) * E, E);
}
template <size_t E>
void ScatterT(char* values, const uint32_t* index, size_t n, const char* in) {
  size_t j = 0;
  for (; j + kPrefetchAhead < n; ++j) {
    __builtin_prefetch(values + static_cast<size_t>(index[j + kPrefetchAhead]) * E, 1);
    std::memcpy(values + static_cast<size_t>(index[j]) * E, in + j * E, E);
  }
  for (; j < n; ++j) std::memcpy(values + static_cast<size_t>(index[j]) * E, in + j * E, E);
}
void Gather(const char* values, size_t e, const uint32_t* index, size_t n, char* out) {
  switch (e) {
    case 4:
      return GatherT<4>(values, index, n, out);
    case 8:
      return GatherT<8>(values, index, n, out);
    default:
      for (size_t j = 0; j < n; ++j)
        std::memcpy(out + j * e, values + static_cast<size_t>(index[j]) * e, e);
  }
}
void Scatter(char* values, size_t e, const uint32_t* index, size_t n, const char* in) {
  switch (e) {
    case 4:
      return ScatterT<4>(values, index, n, in);
    case 8:
      return ScatterT<8>(values, index, n, in);
    default:
      for (size_t j = 0; j < n; ++j)
        std::memcpy(values + static_cast<size_t>(index[j]) * e, in + j * e, e);
  }
}

std::string EncodeKeys(const std::vector<int64_t>& keys) {
  capnp::MallocMessageBuilder message(
      static_cast<unsigned>(std::min<size_t>(16 + keys.size(), 1u << 28)));
  auto list =
      message.initRoot<proto::PermutedValues>().initKeys(static_cast<unsigned>(keys.size()));
  for (size_t i = 0; i < keys.size(); ++i) list.set(static_cast<unsigned>(i), keys[i]);
  return FlattenMessage(message);
}

// Worker `from`'s PermutedValues of keys (rank components each): use(keys).
template <typename Use>
Status ReadKeys(const std::string& bytes, int from, size_t rank, Use use) {
  return WithPeerMessage<proto::PermutedValues>(
      bytes, fmt::format("permuted keys from worker {}", from),
      [&](proto::PermutedValues::Reader m) -> Status {
        const auto list = m.getKeys();
        if (list.size() % rank != 0) {
          return Status::DataLoss(
              fmt::format("worker {} sent {} key components where keys of rank {} belong", from,
                          list.size(), rank));
        }
        return use(list);
      });
}

// Whether `plan` was made for these arrays as they are now, in this mode.
bool Current(const PermutedValuesPlan* plan, const ArrayBase& a, const ArrayBase& b,
             const std::vector<int>& perm, bool distributed) {
  return plan != nullptr && plan->a_id == a.id() && plan->b_id == b.id() &&
         plan->a_version == a.layout_version() && plan->b_version == b.layout_version() &&
         plan->perm == perm && plan->distributed == distributed;
}

PermutedValuesPlanPtr NewPlan(const ArrayBase& a, const ArrayBase& b, const std::vector<int>& perm,
                              bool distributed) {
  PermutedValuesPlanPtr plan(new PermutedValuesPlan);
  plan->a_id = a.id();
  plan->b_id = b.id();
  plan->a_version = a.layout_version();
  plan->b_version = b.layout_version();
  plan->perm = perm;
  plan->distributed = distributed;
  return plan;
}

// Both whole (or a process alone): every element of A finds its counterpart in B.
Result<PermutedValuesPlanPtr> MakeLocalPlan(const ArrayBase& a, const ArrayBase& b,
                                            const std::vector<int>& perm) {
  PermutedValuesPlanPtr plan = NewPlan(a, b, perm, false);
  const int64_t n = a.size();
  const size_t rank = static_cast<size_t>(a.rank());
  KeyIndex index(b, 0, b.extent(0), 1);
  std::vector<bool> hit(static_cast<size_t>(b.size()));
  std::vector<uint32_t>& to_b = plan->to_b.emplace_back();
  to_b.reserve(static_cast<size_t>(n));
  std::vector<int64_t> key(rank);
  const int64_t* keys = n > 0 ? a.key_data() : nullptr;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t* k = keys + static_cast<size_t>(i) * rank;
    for (size_t d = 0; d < rank; ++d) key[d] = k[perm[d]];
    const int64_t p = index.Find(key.data(), 0);
    if (p < 0) return NotInB(a, b, k, "");
    hit[static_cast<size_t>(p)] = true;
    to_b.push_back(Position32(p));
  }
  if (a.size() != b.size()) TESSERA_RETURN_IF_ERROR(Uncovered(b, hit));
  return plan;
}

void CopyLocal(const PermutedValuesPlan& plan, ArrayBase& a, ArrayBase& b, bool a_to_b) {
  const size_t e = a.element_bytes();
  const std::vector<uint32_t>& to_b = plan.to_b[0];
  char* av = static_cast<char*>(a.value_data());
  char* bv = static_cast<char*>(b.value_data());
  if (a_to_b) {
    Scatter(bv, e, to_b.data(), to_b.size(), av);
  } else {
    Gather(bv, e, to_b.data(), to_b.size(), av);
  }
}

// Both partitioned: the keys travel once, round by round, and every receiver notes where each
// sender's elements go in its share of B.
Result<PermutedValuesPlanPtr> MakeDistributedPlan(const AssignPermutedOptions& options,
                                                  const ArrayBase& a, const ArrayBase& b,
                                                  const std::vector<int>& perm,
                                                  const std::vector<std::vector<uint64_t>>& all,
                                                  AssignPermutedReport* report) {
  const int W = options.num_workers;
  const size_t me = static_cast<size_t>(options.rank), rank = static_cast<size_t>(a.rank());
  PermutedValuesPlanPtr plan = NewPlan(a, b, perm, true);
  // all[w] = {valid, dim, lo, hi, A's size}: B's shares must be ranges of one dim in rank order
  // (the owner of A's element i is OwnerOf(owners, its B key[owners.dim])).
  RecordPlan owners;
  owners.dim = static_cast<int>(all[0][1]);
  owners.bounds.push_back(0);
  uint64_t most = 0;
  for (int w = 0; w < W; ++w) {
    const auto& s = all[static_cast<size_t>(w)];
    if (static_cast<int>(s[1]) != owners.dim ||
        static_cast<int64_t>(s[2]) != owners.bounds.back()) {
      return Status::Internal(fmt::format(
          "assign_permuted: array #{}'s shares are not consecutive ranges of one dimension in "
          "rank order (worker {}: dim {}, [{}, {}))",
          b.id(), w, s[1], s[2], s[3]));
    }
    owners.bounds.push_back(static_cast<int64_t>(s[3]));
    most = std::max(most, s[4]);
  }
  if (owners.bounds.back() != b.extent(owners.dim)) {
    return Status::Internal(fmt::format("assign_permuted: array #{}'s shares end at {}, not at {}",
                                        b.id(), owners.bounds.back(), b.extent(owners.dim)));
  }
  const size_t most_per_round =
      std::min(options.round_elements, std::max<size_t>(1, kRoundBytes / a.element_bytes()));
  plan->round = std::clamp<size_t>((most + kMinRounds - 1) / kMinRounds, 1, most_per_round);
  plan->rounds = static_cast<int>((most + plan->round - 1) / plan->round);
  plan->to_b.resize(static_cast<size_t>(W));
  plan->received.assign(static_cast<size_t>(W), std::vector<uint32_t>(plan->rounds, 0));
  plan->sent.assign(static_cast<size_t>(W), std::vector<uint32_t>(plan->rounds, 0));

  const RecordPartition* share = b.record_partition();
  KeyIndex index(b, owners.dim == 0 ? share->lo : 0, owners.dim == 0 ? share->hi : b.extent(0), W);
  std::vector<bool> hit(static_cast<size_t>(b.size()));
  const int64_t n = a.size();
  const int64_t* keys = n > 0 ? a.key_data() : nullptr;
  std::vector<int64_t> key(rank);
  int64_t found = 0;
  auto place = [&](size_t from, const int64_t* k) -> Status {
    const int64_t p = index.Find(k, from);
    if (p < 0 || hit[static_cast<size_t>(p)]) {
      // Name the element as A holds it: the inverse permutation of the key B would hold.
      std::vector<int64_t> a_key(rank);
      for (size_t d = 0; d < rank; ++d) a_key[perm[d]] = k[d];
      return NotInB(a, b, a_key.data(),
                    fmt::format(" (worker {}'s share, sent to worker {})", from, me));
    }
    hit[static_cast<size_t>(p)] = true;
    plan->to_b[from].push_back(Position32(p));
    ++found;
    return Status::Ok();
  };
  for (int r = 0; r < plan->rounds; ++r) {
    const int64_t first = std::min<int64_t>(static_cast<int64_t>(r * plan->round), n);
    const int64_t last = std::min<int64_t>(static_cast<int64_t>((r + 1) * plan->round), n);
    std::vector<std::vector<int64_t>> out(static_cast<size_t>(W));
    for (int64_t i = first; i < last; ++i) {
      const int64_t* k = keys + static_cast<size_t>(i) * rank;
      for (size_t d = 0; d < rank; ++d) key[d] = k[perm[d]];
      const size_t o = OwnerOf(owners, key[owners.dim]);
      ++plan->sent[o][r];
      if (plan->runs.empty() || plan->runs.back().owner != o) {
        plan->runs.push_back({0, static_cast<uint32_t>(o)});
      }
      plan->runs.back().end = Position32(i + 1);
      if (o == me) {
        TESSERA_RETURN_IF_ERROR(place(me, key.data()));
      } else {
        out[o].insert(out[o].end(), key.begin(), key.end());
      }
    }
    std::vector<std::string> messages(static_cast<size_t>(W));
    for (size_t w = 0; w < out.size(); ++w) {
      if (w == me) continue;
      messages[w] = EncodeKeys(out[w]);
      report->bytes_sent += messages[w].size();
      std::vector<int64_t>().swap(out[w]);
    }
    Result<std::vector<std::string>> got = options.all_to_all(std::move(messages));
    if (!got.ok()) return got.status();
    for (size_t w = 0; w < got->size(); ++w) {
      if (w == me) continue;
      TESSERA_RETURN_IF_ERROR(ReadKeys(
          (*got)[w], static_cast<int>(w), rank, [&](capnp::List<int64_t>::Reader list) -> Status {
            plan->received[w][r] = static_cast<uint32_t>(list.size() / rank);
            for (unsigned i = 0; i < list.size(); i += static_cast<unsigned>(rank)) {
              for (size_t d = 0; d < rank; ++d) key[d] = list[i + static_cast<unsigned>(d)];
              TESSERA_RETURN_IF_ERROR(place(w, key.data()));
            }
            return Status::Ok();
          }));
      std::string().swap((*got)[w]);
    }
    ++report->rounds;
  }
  if (found != b.size()) TESSERA_RETURN_IF_ERROR(Uncovered(b, hit));
  for (auto& v : plan->to_b) v.shrink_to_fit();
  plan->runs.shrink_to_fit();
  return plan;
}

// Calls f(i, count, owner) for the pieces of A's runs that round r covers (A positions [i, i +
// count)), in A's order; `run` is where the previous round's pieces ended (rounds come in order).
template <typename F>
Status ForEachPiece(const PermutedValuesPlan& plan, int64_t n, int r, size_t& run, F f) {
  const int64_t first = std::min<int64_t>(static_cast<int64_t>(r * plan.round), n);
  const int64_t last = std::min<int64_t>(static_cast<int64_t>((r + 1) * plan.round), n);
  for (int64_t i = first; i < last;) {
    if (run >= plan.runs.size()) {
      return Status::Internal("assign_permuted: the plan's runs end before its rounds");
    }
    const auto& piece = plan.runs[run];
    const int64_t end = std::min<int64_t>(piece.end, last);
    TESSERA_RETURN_IF_ERROR(f(i, static_cast<size_t>(end - i), static_cast<size_t>(piece.owner)));
    i = end;
    if (end == piece.end) ++run;
  }
  return Status::Ok();
}

// One exchange of values under a distributed plan, A -> B or B -> A. Values travel raw (the plan
// says how many and in which order), each round written straight into its message and read where
// it arrived; a remote run of A is one block of its message.
Status CopyDistributed(const AssignPermutedOptions& options, const PermutedValuesPlan& plan,
                       ArrayBase& a, ArrayBase& b, bool a_to_b, AssignPermutedReport* report) {
  const int W = options.num_workers;
  const size_t me = static_cast<size_t>(options.rank);
  const size_t e = a.element_bytes();
  char* av = static_cast<char*>(a.value_data());
  char* bv = static_cast<char*>(b.value_data());
  const int64_t n = a.size();
  // Where the next values of to_b[s] are, and the run each phase is in, apart for writing and
  // reading: rounds are written ahead of being read.
  std::vector<size_t> write_cursor(static_cast<size_t>(W), 0),
      read_cursor(static_cast<size_t>(W), 0);
  size_t write_run = 0, read_run = 0;
  std::vector<size_t> fill(static_cast<size_t>(W));
  RoundsSpec spec;
  spec.rounds = plan.rounds;
  // A -> B: A's holder sends its elements' values (sent); B's holder takes them (received).
  // B -> A: the other way round.
  const auto& out_counts = a_to_b ? plan.sent : plan.received;
  const auto& in_counts = a_to_b ? plan.received : plan.sent;
  spec.bytes_to = [&](int r, int w) { return out_counts[static_cast<size_t>(w)][r] * e; };
  spec.bytes_from = [&](int r, int w) { return in_counts[static_cast<size_t>(w)][r] * e; };
  const std::vector<uint32_t>& own = plan.to_b[me];
  if (a_to_b) {
    // A's values in A's order, to the holder of each one's B element; this worker's own go
    // straight into place.
    spec.write = [&](int r, const std::vector<char*>& to) -> Status {
      std::fill(fill.begin(), fill.end(), 0);
      return ForEachPiece(plan, n, r, write_run, [&](int64_t i, size_t count, size_t o) {
        const char* v = av + static_cast<size_t>(i) * e;
        if (o == me) {
          if (write_cursor[me] + count > own.size()) {
            return Status::Internal("assign_permuted: more elements stay here than the plan holds");
          }
          Scatter(bv, e, own.data() + write_cursor[me], count, v);
          write_cursor[me] += count;
        } else {
          if (fill[o] + count > plan.sent[o][r]) {
            return Status::Internal("assign_permuted: a round holds more elements than its plan");
          }
          std::memcpy(to[o] + fill[o] * e, v, count * e);
          fill[o] += count;
        }
        return Status::Ok();
      });
    };
    spec.read = [&](int r, const std::vector<std::span<const char>>& from) {
      for (size_t w = 0; w < from.size(); ++w) {
        if (w == me) continue;
        const size_t count = plan.received[w][r];
        Scatter(bv, e, plan.to_b[w].data() + read_cursor[w], count, from[w].data());
        read_cursor[w] += count;
      }
      return Status::Ok();
    };
  } else {
    // Each A holder's values, gathered from this worker's share of B in that worker's order.
    spec.write = [&](int r, const std::vector<char*>& to) {
      for (size_t w = 0; w < to.size(); ++w) {
        if (w == me) continue;
        const size_t count = plan.received[w][r];
        Gather(bv, e, plan.to_b[w].data() + write_cursor[w], count, to[w]);
        write_cursor[w] += count;
      }
      return Status::Ok();
    };
    // The values for this round's elements of A, from each holder in A's order.
    spec.read = [&](int r, const std::vector<std::span<const char>>& from) {
      std::fill(fill.begin(), fill.end(), 0);
      return ForEachPiece(plan, n, r, read_run, [&](int64_t i, size_t count, size_t o) {
        char* v = av + static_cast<size_t>(i) * e;
        if (o == me) {
          if (read_cursor[me] + count > own.size()) {
            return Status::Internal("assign_permuted: more elements stay here than the plan holds");
          }
          Gather(bv, e, own.data() + read_cursor[me], count, v);
          read_cursor[me] += count;
        } else {
          if ((fill[o] + count) * e > from[o].size()) {
            return Status::Internal("assign_permuted: a round holds more elements than its plan");
          }
          std::memcpy(v, from[o].data() + fill[o] * e, count * e);
          fill[o] += count;
        }
        return Status::Ok();
      });
    };
  }
  for (size_t w = 0; w < static_cast<size_t>(W); ++w) {
    if (w == me) continue;
    for (int r = 0; r < plan.rounds; ++r) report->bytes_sent += out_counts[w][r] * e;
  }
  TESSERA_RETURN_IF_ERROR(options.exchange_rounds ? options.exchange_rounds(spec)
                                                  : ExchangeRoundsByAllToAll(
                                                        options.all_to_all, options.rank, W, spec));
  report->rounds += plan.rounds;
  return Status::Ok();
}

}  // namespace

Result<AssignPermutedReport> AssignPermuted(const AssignPermutedOptions& options, ArrayBase& a,
                                            ArrayBase& b, const std::vector<int>& perm, bool a_to_b,
                                            PermutedValuesPlanPtr* plan) {
  TESSERA_CHECK_MSG(a.is_sparse() && b.is_sparse() && a.rank() == b.rank() &&
                        static_cast<int>(perm.size()) == a.rank() &&
                        a.element_bytes() == b.element_bytes(),
                    "AssignPermuted: arrays of different kinds");
  const bool partitioned = a.record_partition() != nullptr;
  TESSERA_CHECK_MSG(partitioned == (b.record_partition() != nullptr),
                    "AssignPermuted: one array partitioned, the other whole");
  const bool job = options.num_workers > 1 && options.all_gather && options.all_to_all;
  TESSERA_CHECK_MSG(!partitioned || job, "AssignPermuted: a partitioned array outside a job");
  AssignPermutedReport report;
  report.distributed = partitioned;
  report.held = a_to_b ? b.size() : a.size();
  if (!partitioned) {
    if (!Current(plan->get(), a, b, perm, false)) {
      Result<PermutedValuesPlanPtr> made = MakeLocalPlan(a, b, perm);
      if (!made.ok()) return made.status();
      *plan = std::move(*made);
      report.planned = true;
    }
    CopyLocal(**plan, a, b, a_to_b);
    return report;
  }
  // Every worker must agree that its plan is current, and learns B's shares and A's sizes.
  const RecordPartition* share = b.record_partition();
  Result<std::vector<std::vector<uint64_t>>> all = AllGatherCounts(
      options.all_gather, {Current(plan->get(), a, b, perm, true) ? 1u : 0u,
                           static_cast<uint64_t>(share->dim), static_cast<uint64_t>(share->lo),
                           static_cast<uint64_t>(share->hi), static_cast<uint64_t>(a.size())});
  if (!all.ok()) return all.status();
  bool current = true;
  for (const auto& w : *all) current = current && w[0] == 1;
  if (!current) {
    plan->reset();  // its memory goes before the new one is made
    Result<PermutedValuesPlanPtr> made = MakeDistributedPlan(options, a, b, perm, *all, &report);
    if (!made.ok()) return made.status();
    *plan = std::move(*made);
    report.planned = true;
  }
  TESSERA_RETURN_IF_ERROR(CopyDistributed(options, **plan, a, b, a_to_b, &report));
  return report;
}

}  // namespace tessera::internal
