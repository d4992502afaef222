// The tokens of an LDA corpus in two orders, and a snapshot of their topics in both, for a sampler
// that sweeps document by document and then word by word (as WarpLDA does).
//
// Position p in document order is token j of document d at p = doc_begin(d) + j; the same token
// has position word_position(p) in word order, where word w's tokens are [word_begin(w),
// word_begin(w + 1)). A snapshot of every token's topic in both orders is taken between loops and
// read-only while a loop runs; a loop body derives the topic counts of one document or word from
// it (TopicCounts) instead of keeping count tables, so nothing is O(rows x K) per iteration.
#ifndef TESSERA_APPS_LDA_TOKEN_TOPICS_H_
#define TESSERA_APPS_LDA_TOKEN_TOPICS_H_

#include <algorithm>
#include <cstdint>
#include <vector>

namespace lda {

class TokenTopics {
 public:
  // doc_length[d] tokens per document, and every token's word in document order.
  TokenTopics(const std::vector<int64_t>& doc_length, const std::vector<int32_t>& words,
              int64_t vocab_size)
      : doc_start_(doc_length.size() + 1, 0), word_start_(vocab_size + 1, 0) {
    const int64_t n = static_cast<int64_t>(words.size());
    for (size_t d = 0; d < doc_length.size(); ++d)
      doc_start_[d + 1] = doc_start_[d] + doc_length[d];
    for (int32_t w : words) ++word_start_[w + 1];
    for (int64_t w = 0; w < vocab_size; ++w) word_start_[w + 1] += word_start_[w];
    to_word_.resize(n);
    from_word_.resize(n);
    std::vector<int64_t> next(word_start_.begin(), word_start_.end() - 1);
    for (int64_t p = 0; p < n; ++p) {
      to_word_[p] = next[words[p]]++;
      from_word_[to_word_[p]] = p;
    }
    doc_topics_.assign(n, 0);
    word_topics_.assign(n, 0);
  }

  int64_t tokens() const { return static_cast<int64_t>(to_word_.size()); }
  int64_t doc_begin(int64_t d) const { return doc_start_[d]; }
  int64_t doc_end(int64_t d) const { return doc_start_[d + 1]; }
  int64_t word_begin(int64_t w) const { return word_start_[w]; }
  int64_t word_end(int64_t w) const { return word_start_[w + 1]; }
  int64_t word_position(int64_t p) const { return to_word_[p]; }
  int64_t doc_position(int64_t q) const { return from_word_[q]; }

  // The snapshot: topic of the token at document-order position p / word-order position q.
  int32_t doc_topic(int64_t p) const { return doc_topics_[p]; }
  int32_t word_topic(int64_t q) const { return word_topics_[q]; }
  const int32_t* doc_topics() const { return doc_topics_.data(); }
  const int32_t* word_topics() const { return word_topics_.data(); }
  void set_doc_topic(int64_t p, int32_t z) { doc_topics_[p] = z; }
  void set_word_topic(int64_t q, int32_t z) { word_topics_[q] = z; }
  // Changes whenever the snapshot does (callers bump it after writing it).
  uint64_t generation() const { return generation_; }
  void bump_generation() { ++generation_; }

 private:
  std::vector<int64_t> doc_start_;
  std::vector<int64_t> word_start_;
  std::vector<int64_t> to_word_;    // document-order position -> word-order position
  std::vector<int64_t> from_word_;  // and back
  std::vector<int32_t> doc_topics_;
  std::vector<int32_t> word_topics_;
  uint64_t generation_ = 0;
};

// The topic counts of one document (or word) in a TokenTopics snapshot, count(k) in O(1), and a
// draw from count(k) + prior in O(1). Scratch that a sampling body keeps per thread: Load is O(1)
// when the row and snapshot did not change since the last Load, else O(tokens of the row); the
// counts are a pure function of the two, so whichever thread loads them computes the same.
class TopicCounts {
 public:
  enum class Side { kDoc, kWord };

  void Load(const TokenTopics& t, Side side, int64_t row, int topics) {
    if (row == row_ && side == side_ && t.generation() == generation_ && &t == source_) return;
    if (counts_.size() != static_cast<size_t>(topics)) {
      counts_.assign(static_cast<size_t>(topics), 0);
      nonzero_.clear();
    }
    for (int32_t k : nonzero_) counts_[k] = 0;
    nonzero_.clear();
    const int64_t begin = side == Side::kDoc ? t.doc_begin(row) : t.word_begin(row);
    const int64_t end = side == Side::kDoc ? t.doc_end(row) : t.word_end(row);
    row_topics_ = (side == Side::kDoc ? t.doc_topics() : t.word_topics()) + begin;
    row_size_ = end - begin;
    int32_t* counts = counts_.data();
    for (int64_t i = 0; i < row_size_; ++i) {
      const int32_t k = row_topics_[i];
      if (counts[k]++ == 0) nonzero_.push_back(k);
    }
    row_ = row;
    side_ = side;
    generation_ = t.generation();
    source_ = &t;
  }

  int32_t count(int32_t k) const { return counts_[k]; }
  // The topics with a non-zero count.
  const std::vector<int32_t>& nonzero() const { return nonzero_; }

  // A topic drawn from count(k) + prior over K topics, from 64 random bits: one uniform over
  // [0, N + K prior) picks a token of the row, or beyond N a topic uniformly.
  int32_t Draw(float prior, uint64_t bits) const {
    const int32_t k = static_cast<int32_t>(counts_.size());
    const double n = static_cast<double>(row_size_);
    const double x =
        static_cast<double>(bits >> 11) * 0x1.0p-53 * (n + k * static_cast<double>(prior));
    if (x < n) return row_topics_[static_cast<int64_t>(x)];
    return std::min(k - 1, static_cast<int32_t>((x - n) / prior));
  }

 private:
  int64_t row_ = -1;
  Side side_ = Side::kDoc;
  uint64_t generation_ = 0;
  const TokenTopics* source_ = nullptr;
  std::vector<int32_t> counts_;
  std::vector<int32_t> nonzero_;         // the topics with a non-zero count
  const int32_t* row_topics_ = nullptr;  // the row's tokens' topics, in the snapshot
  int64_t row_size_ = 0;
};

}  // namespace lda

#endif  // TESSERA_APPS_LDA_TOKEN_TOPICS_H_
