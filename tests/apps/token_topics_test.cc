// lda's per-row scratch (apps/lda/token_topics.h): the row's log-likelihood terms over its counts
// as gathered and after its moves, against counts made the obvious way.
#include "apps/lda/token_topics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

namespace lda {
namespace {

constexpr int kTopics = 7;

// table[c] = lgamma(c + 0.5) - lgamma(0.5), as lda's log-likelihood uses it.
std::vector<double> Table(int size) {
  std::vector<double> t(size);
  for (int c = 0; c < size; ++c) t[c] = std::lgamma(c + 0.5) - std::lgamma(0.5);
  return t;
}

double Expected(const std::vector<int32_t>& topics, const std::vector<double>& table) {
  std::map<int32_t, int> counts;
  for (int32_t k : topics) ++counts[k];
  double sum = 0;
  for (const auto& [k, c] : counts) sum += table[c];
  return sum;
}

// A row of `n` tokens with topics and proposals from `state` (a small LCG), gathered into `row`;
// returns the topics.
std::vector<int32_t> Gather(RowTopics& row, int64_t id, int n, uint64_t& state) {
  auto next = [&state] {
    return static_cast<int32_t>((state = state * 6364136223846793005ULL + 1) >> 59);
  };
  std::vector<int32_t> topics(n);
  row.Begin(id, 1, kTopics, n);
  for (int i = 0; i < n; ++i) {
    topics[i] = next() % kTopics;
    row.set_id(i, i);
    row.set_state(i, PackTopic(topics[i], next() % kTopics));
  }
  row.Count();
  return topics;
}

TEST(RowTopicsTest, SumsOverTheGatheredCountsAndTheCountsAfterTheMoves) {
  const std::vector<double> table = Table(64);
  RowTopics row;
  uint64_t state = 42;
  // Rows one after another in one scratch, as a sweep uses it: what one row leaves must not leak
  // into the next.
  for (int r = 0; r < 50; ++r) {
    SCOPED_TRACE(r);
    const int n = 1 + r % 13;
    std::vector<int32_t> topics = Gather(row, r, n, state);
    EXPECT_NEAR(row.SumOverCounts(table), Expected(topics, table), 1e-9);
    // Some tokens move to their proposals (a topic the row may not have had, or emptying one).
    for (int i = 0; i < n; ++i) {
      const bool move = (i + r) % 3 != 0;
      row.MoveIf(i, row.proposal(i), move);
      if (move) topics[i] = row.proposal(i);
    }
    EXPECT_NEAR(row.SumOverCountsAfterMoves(table), Expected(topics, table), 1e-9);
    row.EndMoves();
    for (int k = 0; k < kTopics; ++k) EXPECT_EQ(row.delta(k), 0) << "topic " << k;
    // The gathered counts are unchanged (the sampler's delayed counts).
    std::vector<int32_t> gathered(n);
    for (int i = 0; i < n; ++i) gathered[i] = row.gathered_topic(i);
    EXPECT_NEAR(row.SumOverCounts(table), Expected(gathered, table), 1e-9);
  }
}

TEST(RowTopicsTest, ARowWithoutMovesSumsTheSameBothWays) {
  const std::vector<double> table = Table(64);
  RowTopics row;
  uint64_t state = 7;
  Gather(row, 0, 40, state);
  EXPECT_NEAR(row.SumOverCountsAfterMoves(table), row.SumOverCounts(table), 1e-9);
  row.EndMoves();
  for (int k = 0; k < kTopics; ++k) EXPECT_EQ(row.delta(k), 0);
}

}  // namespace
}  // namespace lda
