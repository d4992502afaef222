// A token's state as the MH sampler packs it, and the per-thread scratch of a sampler that sweeps
// the tokens row by row (word by word, then document by document, as WarpLDA does). A token's id
// is its position in document order (its document's first position plus its index j there).
#ifndef TESSERA_APPS_LDA_TOKEN_TOPICS_H_
#define TESSERA_APPS_LDA_TOKEN_TOPICS_H_

#include <algorithm>
#include <cstdint>
#include <vector>

namespace lda {

// A token's element: its topic in the low 32 bits, its pending MH proposal in the high 32.
inline int64_t PackTopic(int32_t topic, int32_t proposal) {
  return static_cast<int64_t>((static_cast<uint64_t>(static_cast<uint32_t>(proposal)) << 32) |
                              static_cast<uint32_t>(topic));
}
inline int32_t TopicOf(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }
inline int32_t ProposalOf(int64_t v) { return static_cast<int32_t>(static_cast<uint64_t>(v) >> 32); }

// One row (a document's or a word's tokens) as a sweep sees it, kept per executor thread: the
// tokens' ids, topics and pending proposals as the previous sweep left them, the row's topic
// counts over those topics (count(k) in O(1)), and, after the sweep has decided its moves, the new
// topics and every token's next element (its topic and next proposal, drawn in O(1)). A row is
// gathered once per sweep by whichever thread meets it first; everything here is a pure function
// of the row and the previous sweep's topics, so any thread computes the same.
class RowTopics {
 public:
  // Whether this holds `row` of sweep `sweep` (then the caller skips gathering it).
  bool Holds(int64_t row, int64_t sweep) const { return row == row_ && sweep == sweep_; }

  // Starts gathering `row` of `sweep`, of `n` tokens over `topics` topics: the caller sets every
  // token i < n (its id, increasing in i, and its (topic, proposal) packed as by PackTopic), then
  // calls Count.
  void Begin(int64_t row, int64_t sweep, int topics, int64_t n) {
    if (counts_.size() != static_cast<size_t>(topics)) {
      counts_.assign(static_cast<size_t>(topics), 0);
      delta_.assign(static_cast<size_t>(topics), 0);
    } else {
      // Only the previous row's topics have non-zero counts: n stores, not K.
      for (int32_t k : gathered_) counts_[k] = 0;
    }
    ids_.resize(static_cast<size_t>(n));
    states_.resize(static_cast<size_t>(n));
    gathered_.resize(static_cast<size_t>(n));
    topics_.resize(static_cast<size_t>(n));
    next_.resize(static_cast<size_t>(n));
    row_ = row;
    sweep_ = sweep;
    cursor_ = 0;
  }
  void set_id(int64_t i, int64_t id) { ids_[i] = id; }
  void set_state(int64_t i, int64_t state) { states_[i] = state; }
  // The counts of the gathered topics.
  void Count() {
    int32_t* counts = counts_.data();
    for (size_t i = 0; i < states_.size(); ++i) {
      const int32_t k = TopicOf(states_[i]);
      gathered_[i] = k;
      topics_[i] = k;
      ++counts[k];
    }
  }

  int64_t size() const { return static_cast<int64_t>(ids_.size()); }
  int64_t id(int64_t i) const { return ids_[i]; }
  // Token i's topic after the moves so far, and as gathered.
  int32_t topic(int64_t i) const { return topics_[i]; }
  int32_t gathered_topic(int64_t i) const { return gathered_[i]; }
  int32_t proposal(int64_t i) const { return ProposalOf(states_[i]); }
  // The gathered topics' counts (not changed by Move: WarpLDA's delayed counts).
  int32_t count(int32_t k) const { return counts_[k]; }
  // Calls f(k, count(k)) once for every topic with a non-zero count (in order of first appearance
  // in the row).
  template <typename F>
  void ForEachNonzero(F f) {
    for (int32_t k : gathered_) {
      if (counts_[k] > 0) {
        f(k, counts_[k]);
        counts_[k] = -counts_[k];  // seen; restored below
      }
    }
    for (int32_t k : gathered_) counts_[k] = counts_[k] < 0 ? -counts_[k] : counts_[k];
  }
  // The sum of table[c] over the row's gathered counts c, table[0] being 0 (e.g. table[c] =
  // lgamma(c + prior) - lgamma(prior), a row's term of the log-likelihood).
  double SumOverCounts(const std::vector<double>& table) {
    const int32_t* counts = counts_.data();
    if (SumOverAllTopics()) return SumOverTopics(table, [counts](int32_t k) { return counts[k]; });
    double sum = 0;
    ForEachNonzero([&](int32_t, int32_t count) { sum += table[count]; });
    return sum;
  }
  // The same over the counts after the moves so far (REQUIRES: EndMoves follows before anything
  // reads delta(k): the sum may mark the deltas it has seen, EndMoves clears them).
  double SumOverCountsAfterMoves(const std::vector<double>& table) {
    int32_t* delta = delta_.data();
    const int32_t* counts = counts_.data();
    if (SumOverAllTopics()) {
      return SumOverTopics(table, [counts, delta](int32_t k) { return counts[k] + delta[k]; });
    }
    // Every topic a count can have changed at is a token's gathered topic or where it moved;
    // each adds once (then table[0]), without a branch on whether it was seen.
    const double* t = table.data();
    double from = 0, to = 0;
    auto visit = [&](int32_t k) {
      const int32_t d = delta[k];
      delta[k] = kSeen;
      return t[d == kSeen ? 0 : counts[k] + d];
    };
    for (size_t i = 0; i < topics_.size(); ++i) {
      from += visit(gathered_[i]);
      to += visit(topics_[i]);
    }
    return from + to;
  }
  // Token i moves to topic `to`; `delta` tracks the row's changes to the topic totals so that
  // later tokens of the row see them (they are added to the totals token by token afterwards).
  // Each token moves at most once, from its gathered topic.
  void Move(int64_t i, int32_t to) {
    --delta_[topics_[i]];
    ++delta_[to];
    topics_[i] = to;
  }
  // Move(i, to) if `move`, without a branch (whether a token moves is a coin flip).
  void MoveIf(int64_t i, int32_t to, bool move) {
    const int32_t from = topics_[i];
    delta_[from] -= move;
    delta_[to] += move;
    topics_[i] = move ? to : from;
  }
  int32_t delta(int32_t k) const { return delta_[k]; }
  // After the row's moves: clears the deltas (the topics stay, for Propose). A delta can be
  // non-zero only at a token's gathered topic or the topic it moved to.
  void EndMoves() {
    int32_t* delta = delta_.data();
    for (size_t i = 0; i < topics_.size(); ++i) {
      delta[gathered_[i]] = 0;
      delta[topics_[i]] = 0;
    }
  }

  // After EndMoves: every token's next element, PackTopic(topic(i), a proposal drawn from (row
  // count after the moves)(k) + prior over the K topics), with bits(i) its 64 random bits: one
  // uniform over [0, N + K prior) picks a token of the row, or beyond N a topic uniformly.
  template <typename Bits>
  void Propose(float prior, Bits bits) {
    const int32_t k = static_cast<int32_t>(counts_.size());
    const double n = static_cast<double>(topics_.size());
    // (bits >> 11) * 2^-53 * (n + K prior), with the exact power-of-two scale folded in.
    const double scale = (n + k * static_cast<double>(prior)) * 0x1.0p-53;
    const int32_t* topics = topics_.data();
    for (size_t i = 0; i < topics_.size(); ++i) {
      const double x = static_cast<double>(bits(static_cast<int64_t>(i)) >> 11) * scale;
      int32_t proposal;
      if (x < n) {
        proposal = topics[static_cast<size_t>(x)];
      } else {
        proposal = std::min(k - 1, static_cast<int32_t>((x - n) / prior));
      }
      next_[i] = PackTopic(topics[i], proposal);
    }
  }
  // Token i's next element (REQUIRES: Propose has run for this row).
  int64_t next(int64_t i) const { return next_[i]; }

  // Index of the token with id `id` (REQUIRES: the row holds it). O(1) when tokens are asked
  // for in row order, as a sweep does; else a binary search.
  int64_t IndexOf(int64_t id) {
    if (cursor_ < size() && ids_[cursor_] == id) return cursor_++;
    cursor_ = std::lower_bound(ids_.begin(), ids_.end(), id) - ids_.begin();
    return cursor_++;
  }

 private:
  // Whether a sum over the counts visits all K topics rather than the row's tokens (twice each,
  // marking what it has seen).
  bool SumOverAllTopics() const { return 2 * ids_.size() >= counts_.size(); }
  // The sum of table[count(k)] over all K topics, in four independent chains of additions.
  template <typename Count>
  double SumOverTopics(const std::vector<double>& table, Count count) const {
    const double* t = table.data();
    const int32_t n = static_cast<int32_t>(counts_.size());
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int32_t k = 0;
    for (; k + 4 <= n; k += 4) {
      s0 += t[count(k)];
      s1 += t[count(k + 1)];
      s2 += t[count(k + 2)];
      s3 += t[count(k + 3)];
    }
    for (; k < n; ++k) s0 += t[count(k)];
    return (s0 + s1) + (s2 + s3);
  }

  int64_t row_ = -1;
  int64_t sweep_ = -1;
  int64_t cursor_ = 0;
  std::vector<int64_t> ids_;
  std::vector<int32_t> gathered_;
  std::vector<int32_t> topics_;
  std::vector<int64_t> states_;
  std::vector<int64_t> next_;
  std::vector<int32_t> counts_;
  std::vector<int32_t> delta_;  // the row's moves so far, per topic
  // A delta SumOverCountsAfterMoves has added (no row moves that many tokens out of a topic).
  static constexpr int32_t kSeen = INT32_MIN;
};

}  // namespace lda

#endif  // TESSERA_APPS_LDA_TOKEN_TOPICS_H_
