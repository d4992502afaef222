// lda: latent Dirichlet allocation by collapsed Gibbs sampling, written as a serial Tessera program.
//
// The iteration space holds one element per token, keyed (doc, word, occurrence), whose value is
// the token's topic z. Sampling a token reads and writes the doc-topic counts of key[0] (local to
// the worker owning the document) and the word-topic counts of key[1] (rotating between workers),
// so tessc can schedule the loop 2D; the topic totals are touched by every token and live in a
// RelaxedArray (additive updates, reads up to --staleness clocks stale when distributed).
//
// Sampler: Metropolis-Hastings with alternating doc and word proposals drawn from alias tables in
// O(1) (as in LightLDA), instead of the O(K) loop of the textbook sampler:
//   doc proposal   q_d(k) ~ n_dk + alpha                    (table of document d, built on entry)
//   word proposal  q_w(k) ~ (n_wk + beta) / (n_k + V beta)  (tables of every word, built once per
//                                                            iteration)
// Both proposals are fixed while they are used, so each MH step leaves the collapsed conditional
//   p(z = k | rest) ~ (n_dk + alpha)(n_wk + beta) / (n_k + V beta)
// invariant; the staleness of the tables only costs acceptance rate.
//
//   lda --docword docword.20news.txt --topics 100 --iterations 50 --metrics lda.jsonl
//   tessera run -w 2 -s 1 -- lda --docword docword.20news.txt --topics 100 --iterations 50
//
// Under `tessera run` every worker runs this program (SPMD) and computes the same numbers (the
// accumulators are summed across workers); only worker 0 prints progress, topics and --metrics.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <utility>
#include <optional>
#include <string>
#include <vector>

#include "lda/lda_model.h"
#include "tessera/common/logging.h"
#include "tessera/tessera.h"
#include "tessera/version.h"

namespace {

using tessera::DistArray;
using tessera::Key;
using tessera::RelaxedArray;

struct LdaOptions {
  std::string docword_path;
  int topics = 100;        // K
  double alpha = 0.1;      // document-topic Dirichlet prior
  double beta = 0.01;      // topic-word Dirichlet prior
  int iterations = 50;
  // MH steps per token, alternating doc and word proposals. 4 gives the best log-likelihood per
  // CPU-second on 20news (measured against 2 and 8 at K=100).
  int mh_steps = 4;
  std::string sampler = "mh";  // mh | gibbs (the exact O(K) textbook sampler, as a reference)
  int64_t max_docs = 0;    // 0: all documents
  int staleness = 1;       // of the topic-totals table when distributed
  int data_parallel = -1;  // >= 0: run the sampling loop data-parallel with this staleness
  int eval_every = 1;      // log-likelihood every N iterations (0: never)
  uint64_t seed = 1;
  std::string metrics_path;
  std::string vocab_path;  // word of wordID n on line n; prints each topic's top words at the end
  int show_topics = 10;
  int top_words = 8;
  int threads = 1;  // executor threads per process (TESSERA_THREADS is the default)
  lda::ModelOptions model;  // --save-model, --load-model --infer (lda_model.h)
};

// A small fast generator (xoshiro-style quality is not needed; splitmix64 is plenty for MH).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() { return tessera::internal::SplitMix64(state_); }
  // Uniform in [0, n) from the high bits, and a float in [0, 1) from the low bits, of one draw.
  static uint32_t Below(uint64_t r, uint32_t n) {
    return static_cast<uint32_t>(((r >> 32) * static_cast<uint64_t>(n)) >> 32);
  }
  static float Unit(uint64_t r) { return static_cast<float>(r & 0xFFFFFF) * 0x1.0p-24f; }

 private:
  uint64_t state_;
};

// Proposal tables for every row of a count array (documents or words), rebuilt from the counts
// at the start of each iteration and read-only during it -- so the sampling body has no state of
// its own and any executor may run it on any thread.
//
// Row r's proposal is q_r(k) ~ (n_rk + prior) * scale_k, split into a sparse part over the row's
// non-zero topics (weights n_rk * scale_k, sampled by a per-row alias table) and a dense part
// prior * scale_k shared by all rows (one alias table over K). Entries are packed so that a draw
// touches one or two cache lines.
class ProposalTables {
 public:
  // scale: per-topic factor (1 for documents, 1 / (n_k + V beta) for words).
  void Build(const DistArray<int32_t, 2>& counts, const std::vector<float>& scale, float prior) {
    const int64_t rows = counts.extent(0);
    const int K = static_cast<int>(counts.extent(1));
    prior_ = prior;
    scale_ = scale;
    std::vector<float> dense_w(K);
    dense_mass_ = 0;
    for (int k = 0; k < K; ++k) {
      dense_w[k] = prior * scale[k];
      dense_mass_ += dense_w[k];
    }
    dense_.resize(K);
    BuildRow(dense_w.data(), K, dense_mass_, dense_.data());
    for (int k = 0; k < K; ++k) dense_[k].topic = k;

    // A snapshot of the counts, so that q_r(k) for any k is one load instead of a search.
    k_ = K;
    stale_.assign(counts.data(), counts.data() + rows * K);
    rows_.assign(rows, Row{});
    entries_.clear();
    std::vector<float> w;
    for (int64_t r = 0; r < rows; ++r) {
      auto row = counts.row(r);
      Row& h = rows_[r];
      h.offset = static_cast<int64_t>(entries_.size());
      w.clear();
      for (int k = 0; k < K; ++k) {
        if (row[k] != 0) {
          entries_.push_back(Entry{k, row[k], 0.0f, 0});
          w.push_back(static_cast<float>(row[k]) * scale[k]);
          h.sparse_mass += w.back();
        }
      }
      h.size = static_cast<int32_t>(w.size());
      if (h.size > 0) BuildRow(w.data(), h.size, h.sparse_mass, &entries_[h.offset]);
    }
  }

  // A topic drawn from q_r, and its unnormalized weight q_r(topic).
  int32_t Sample(int64_t r, uint64_t bits1, uint64_t bits2, float* weight) const {
    const Row& h = rows_[r];
    if (Rng::Unit(bits1) * (h.sparse_mass + dense_mass_) < h.sparse_mass) {
      const Entry& e = Pick(&entries_[h.offset], h.size, bits2);
      *weight = (static_cast<float>(e.count) + prior_) * scale_[e.topic];
      return e.topic;
    }
    const int32_t k = Pick(dense_.data(), static_cast<int32_t>(dense_.size()), bits2).topic;
    *weight = Weight(r, k);
    return k;
  }
  // Unnormalized q_r(k), from the counts the tables were built from.
  float Weight(int64_t r, int32_t k) const {
    return (static_cast<float>(stale_[r * k_ + k]) + prior_) * scale_[k];
  }

 private:
  struct Entry {
    int32_t topic;
    int32_t count;  // n_rk when built
    float prob;     // alias method: keep this entry with probability prob ...
    int32_t alias;  // ... else take entry `alias` (a position within the row)
  };
  struct Row {
    int64_t offset = 0;
    int32_t size = 0;
    float sparse_mass = 0;
  };

  // Vose's alias method over w[0..n) into entries[0..n).
  void BuildRow(const float* w, int32_t n, float total, Entry* entries) {
    small_.clear();
    large_.clear();
    const float s = static_cast<float>(n) / total;
    for (int32_t i = 0; i < n; ++i) {
      entries[i].prob = w[i] * s;
      entries[i].alias = i;
      (entries[i].prob < 1.0f ? small_ : large_).push_back(i);
    }
    while (!small_.empty() && !large_.empty()) {
      const int32_t sm = small_.back(), lg = large_.back();
      small_.pop_back();
      entries[sm].alias = lg;
      entries[lg].prob -= 1.0f - entries[sm].prob;
      if (entries[lg].prob < 1.0f) {
        large_.pop_back();
        small_.push_back(lg);
      }
    }
    for (int32_t i : small_) entries[i].prob = 1.0f;  // rounding leftovers
    for (int32_t i : large_) entries[i].prob = 1.0f;
  }
  static const Entry& Pick(const Entry* entries, int32_t n, uint64_t bits) {
    const Entry& e = entries[Rng::Below(bits, static_cast<uint32_t>(n))];
    return Rng::Unit(bits) < e.prob ? e : entries[e.alias];
  }

  float prior_ = 0;
  int64_t k_ = 0;
  std::vector<int32_t> stale_;  // rows x K counts when built
  std::vector<float> scale_;
  std::vector<Row> rows_;
  std::vector<Entry> entries_;
  std::vector<Entry> dense_;
  float dense_mass_ = 0;
  std::vector<int32_t> small_, large_;
};

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// lgamma(n + a) - lgamma(a) for n in [0, size), precomputed: the log-likelihood needs millions.
std::vector<double> LgammaTable(double a, int64_t size) {
  std::vector<double> t(static_cast<size_t>(size));
  const double base = std::lgamma(a);
  for (int64_t n = 0; n < size; ++n) t[n] = std::lgamma(static_cast<double>(n) + a) - base;
  return t;
}

// Whether `ok` holds on every worker. A check that only worker 0 makes (its output files) must
// stop every worker, or the others would wait for it forever; serially it is `ok` itself.
bool AllWorkersOk(tessera::Context& ctx, bool ok) {
  auto failed = tessera::SumOverWorkers(ctx, ok ? 0.0 : 1.0);
  if (ok && failed.ok() && *failed > 0)
    fmt::print(stderr, "lda: another worker failed; stopping\n");
  return failed.ok() && *failed == 0;
}

// The vocabulary, one word per line (wordID n on line n).
tessera::Result<std::vector<std::string>> ReadVocabulary(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return tessera::Status::InvalidArgument(fmt::format("--vocab '{}' is a directory", path));
  }
  std::ifstream in(path);
  if (!in) {
    return tessera::Status::NotFound(
        fmt::format("cannot open the vocabulary --vocab '{}': {}", path, std::strerror(errno)));
  }
  std::vector<std::string> vocab;
  for (std::string w; std::getline(in, w);) vocab.push_back(w);
  return vocab;
}

// Bytes of physical memory (0 when unknown).
double PhysicalMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
}

// What the sampler will hold for this corpus, checked before anything that large is allocated:
// a header's D or a count of 2e9 must end with a message, not std::bad_alloc.
tessera::Status CheckCorpusFits(const tessera::Corpus& corpus, int K, const std::string& path) {
  // Per token: its key and topic in `tokens` (3 x 8 + 4 bytes, padded) and a log-gamma entry.
  // Per document and per word: K counts, and as much again in the proposal tables' snapshots.
  const double tokens = static_cast<double>(corpus.num_tokens);
  const double rows = static_cast<double>(corpus.num_docs) + static_cast<double>(corpus.vocab_size);
  const double need = tokens * 40 + rows * K * 4 * 2 + static_cast<double>(corpus.num_docs) * 8;
  const double have = PhysicalMemoryBytes();
  if (have > 0 && need > have) {
    int64_t max_count = 0;
    tessera::Key<2> where{{0, 0}};
    for (int64_t p = 0; p < corpus.counts.nnz(); ++p) {
      if (corpus.counts.value_at(p) > max_count) {
        max_count = corpus.counts.value_at(p);
        where = corpus.counts.key_at(p);
      }
    }
    return tessera::Status::InvalidArgument(fmt::format(
        "{}: sampling this corpus needs about {:.1f} GiB, more than this machine's {:.1f} GiB: "
        "{} tokens (the sum of the counts; the largest, {}, is docID {} wordID {}) and {} "
        "documents + {} words (D and W in the header) x {} topics",
        path, need / (1 << 30), have / (1 << 30), corpus.num_tokens, max_count, where[0] + 1,
        where[1] + 1, corpus.num_docs, corpus.vocab_size, K));
  }
  return tessera::Status::Ok();
}

int Run(tessera::Context& ctx, const LdaOptions& opt) {
  // Every worker computes the same numbers; worker 0 reports them (rank 0 when serial, too).
  const bool report = ctx.job().rank == 0;
  // The files worker 0 writes and reads at the end are checked before the corpus is even loaded.
  std::optional<tessera::MetricsLog> metrics;
  std::vector<std::string> vocab;
  bool ready = true;
  if (report && !opt.metrics_path.empty()) {
    auto log = tessera::MetricsLog::Open(opt.metrics_path);
    if (log.ok()) {
      metrics.emplace(std::move(log).value());
    } else {
      fmt::print(stderr, "lda: --metrics: {}\n", log.status().ToString());
      ready = false;
    }
  }
  if (report && !opt.vocab_path.empty()) {
    auto read_vocab = ReadVocabulary(opt.vocab_path);
    if (read_vocab.ok()) {
      vocab = std::move(read_vocab).value();
    } else {
      fmt::print(stderr, "lda: {}\n", read_vocab.status().ToString());
      ready = false;
    }
  }
  if (report) {
    if (tessera::Status s = lda::PrepareSave(opt.model); !s.ok()) {
      fmt::print(stderr, "lda: --save-model: {}\n", s.ToString());
      ready = false;
    }
  }
  if (!AllWorkersOk(ctx, ready)) return 1;

  tessera::DocwordOptions read;
  read.max_docs = opt.max_docs;
  auto loaded = tessera::load_docword(ctx, opt.docword_path, read);
  if (!loaded.ok()) {
    fmt::print(stderr, "lda: {}\n", loaded.status().ToString());
    return 1;
  }
  tessera::Corpus& corpus = *loaded;
  const int64_t D = corpus.num_docs, V = corpus.vocab_size;
  const int K = opt.topics;
  if (tessera::Status s = CheckCorpusFits(corpus, K, opt.docword_path); !s.ok()) {
    fmt::print(stderr, "lda: {}\n", s.ToString());
    return 1;
  }
  if (report && !opt.vocab_path.empty() && static_cast<int64_t>(vocab.size()) < V) {
    fmt::print(stderr,
               "lda: --vocab '{}' has {} lines, but {} has W = {} words (wordID n is the "
               "word on line n)\n",
               opt.vocab_path, vocab.size(), opt.docword_path, V);
    ready = false;
  }
  if (!AllWorkersOk(ctx, ready)) return 1;
  const float alpha = static_cast<float>(opt.alpha), beta = static_cast<float>(opt.beta);
  const float vbeta = static_cast<float>(V) * beta;

  // One element per token, keyed (doc, word, occurrence), in document order.
  corpus.counts.sort_keys();
  int64_t max_count = 1;
  for (int64_t p = 0; p < corpus.counts.nnz(); ++p) {
    max_count = std::max<int64_t>(max_count, corpus.counts.value_at(p));
  }
  auto tokens = DistArray<int32_t, 3>::sparse(ctx, {D, V, max_count});
  tokens.reserve(corpus.num_tokens);
  std::vector<int64_t> doc_length(D, 0);
  for (int64_t p = 0; p < corpus.counts.nnz(); ++p) {
    const Key<2>& dw = corpus.counts.key_at(p);
    const int32_t n = corpus.counts.value_at(p);
    for (int32_t o = 0; o < n; ++o) tokens.append_unchecked({{dw[0], dw[1], o}}, 0);
    doc_length[dw[0]] += n;
  }
  const bool distributed = ctx.mode() == tessera::ExecutionMode::kDistributed;
  const std::string workers =
      distributed ? fmt::format("  workers {}", ctx.job().num_workers) : std::string();
  if (report) {
    fmt::print("lda: {} documents, {} words, {} tokens, K={}, alpha={}, beta={}{}\n", D, V,
               tokens.nnz(), K, opt.alpha, opt.beta,
               opt.data_parallel >= 0 ? fmt::format(", data-parallel (staleness {})", opt.data_parallel)
                                      : std::string());
  }

  auto doc_topic = DistArray<int32_t, 2>::dense(ctx, {D, K});
  auto word_topic = DistArray<int32_t, 2>::dense(ctx, {V, K});
  auto totals = RelaxedArray<int64_t, 1>::dense(ctx, {K}, opt.staleness);

  // Random initial topics, a function of the key so the result does not depend on visit order.
  tessera::parallel_for(tokens, [&](const Key<3>& key, int32_t& z) {
    uint64_t h = opt.seed ^ (static_cast<uint64_t>(key[0]) << 40) ^ (static_cast<uint64_t>(key[1]) << 12) ^
                 static_cast<uint64_t>(key[2]);
    z = static_cast<int32_t>(tessera::internal::SplitMix64(h) % static_cast<uint64_t>(K));
    doc_topic(key[0], z) += 1;
    word_topic(key[1], z) += 1;
    totals.add(z, 1);
  });

  // Log-likelihood terms that do not change: document lengths and the normalizers.
  int64_t max_len = 1;
  for (int64_t n : doc_length) max_len = std::max(max_len, n);
  const auto lg_alpha = LgammaTable(alpha, max_len + 1);
  const auto lg_beta = LgammaTable(beta, tokens.nnz() + 1);
  double ll_const = 0;
  for (int64_t n : doc_length) {
    ll_const += std::lgamma(K * opt.alpha) - std::lgamma(K * opt.alpha + static_cast<double>(n));
  }
  ll_const += K * std::lgamma(V * opt.beta);

  // Every token draws from its own generator, seeded by (seed, iteration, key): the body then has
  // no shared mutable state besides the arrays, whatever executor runs it.
  auto token_rng = [&opt](int iter, const Key<3>& key) {
    return Rng(opt.seed ^ (static_cast<uint64_t>(iter) * 0xD1B54A32D192ED03ULL) ^
               (static_cast<uint64_t>(key[0]) * 0x9E3779B97F4A7C15ULL) ^
               (static_cast<uint64_t>(key[1]) * 0xC2B2AE3D27D4EB4FULL) ^
               (static_cast<uint64_t>(key[2]) * 0x165667B19E3779F9ULL));
  };
  ProposalTables doc_prop, word_prop;
  const std::vector<float> ones(K, 1.0f);
  std::vector<float> inv_total(K);
  const auto start = std::chrono::steady_clock::now();
  for (int iter = 1; iter <= opt.iterations; ++iter) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t cpu0 = std::clock();
    tessera::Accumulator<int64_t> accepted(ctx);
    if (opt.sampler == "gibbs") {
      // The textbook sampler: the exact conditional over all K topics. Slow; a reference.
      auto gibbs = [&](const Key<3>& key, int32_t& z) {
        thread_local std::vector<double> cdf;  // scratch, one per executor thread
        cdf.resize(K);
        auto nd = doc_topic.row(key[0]);
        auto nw = word_topic.row(key[1]);
        Rng rng = token_rng(iter, key);
        const int32_t s = z;
        nd[s] -= 1;
        nw[s] -= 1;
        totals.add(s, -1);
        double sum = 0;
        for (int k = 0; k < K; ++k) {
          sum += (nd[k] + opt.alpha) * (nw[k] + opt.beta) / (static_cast<double>(totals(k)) + V * opt.beta);
          cdf[k] = sum;
        }
        const double u = static_cast<double>(rng.Next() >> 11) * 0x1.0p-53 * sum;
        const int32_t t = static_cast<int32_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
        const int32_t chosen = std::min(t, K - 1);
        nd[chosen] += 1;
        nw[chosen] += 1;
        totals.add(chosen, 1);
        accepted += chosen != s;
        z = chosen;
      };
      if (opt.data_parallel >= 0) {
        tessera::parallel_for(tokens, gibbs, tessera::DataParallel{.staleness = opt.data_parallel});
      } else {
        tessera::parallel_for(tokens, gibbs);
      }
    } else {
      for (int k = 0; k < K; ++k) inv_total[k] = 1.0f / (static_cast<float>(totals(k)) + vbeta);
      doc_prop.Build(doc_topic, ones, alpha);        // q_d(k) ~ n_dk + alpha
      word_prop.Build(word_topic, inv_total, beta);  // q_w(k) ~ (n_wk + beta) / (n_k + V beta)
      // One body for both schedules: tessc's 2D schedule by default, or, with --data-parallel S,
      // the user's permission to run conflicting count updates (all additive) concurrently with
      // reads up to S clocks stale.
      auto mh = [&](const Key<3>& key, int32_t& z) {
        auto nd = doc_topic.row(key[0]);
        auto nw = word_topic.row(key[1]);
        Rng rng = token_rng(iter, key);
        int32_t s = z;
        nd[s] -= 1;
        nw[s] -= 1;
        totals.add(s, -1);
        int64_t moved = 0;
        for (int step = 0; step < opt.mh_steps; ++step) {
          const bool doc_step = (step % 2) == 0;
          const ProposalTables& q = doc_step ? doc_prop : word_prop;
          const int64_t row = doc_step ? key[0] : key[1];
          float q_t;
          const uint64_t r1 = rng.Next(), r2 = rng.Next();
          const int32_t t = q.Sample(row, r1, r2, &q_t);
          if (t == s) continue;
          const float p_t = (nd[t] + alpha) * (nw[t] + beta) / (static_cast<float>(totals(t)) + vbeta);
          const float p_s = (nd[s] + alpha) * (nw[s] + beta) / (static_cast<float>(totals(s)) + vbeta);
          const float q_s = q.Weight(row, s);
          // Accept t with probability min(1, p(t) q(s) / (p(s) q(t))).
          if (Rng::Unit(rng.Next()) * p_s * q_t < p_t * q_s) {
            s = t;
            ++moved;
          }
        }
        nd[s] += 1;
        nw[s] += 1;
        totals.add(s, 1);
        z = s;
        accepted += moved;
      };
      if (opt.data_parallel >= 0) {
        tessera::parallel_for(tokens, mh, tessera::DataParallel{.staleness = opt.data_parallel});
      } else {
        tessera::parallel_for(tokens, mh);
      }
    }
    const double sample_seconds = Seconds(std::chrono::steady_clock::now() - t0);
    // Process CPU time as well: on a shared machine wall time measures the neighbours too, and
    // per CPU-second is per executor thread when several run (and, distributed, counts every
    // worker's CPU).
    auto sample_cpu_seconds =
        tessera::SumOverWorkers(ctx, static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC);
    if (!sample_cpu_seconds.ok()) {
      fmt::print(stderr, "lda: {}\n", sample_cpu_seconds.status().ToString());
      return 1;
    }
    const double tokens_per_cpu_s = static_cast<double>(tokens.nnz()) / *sample_cpu_seconds;
    const double tokens_per_s = static_cast<double>(tokens.nnz()) / sample_seconds;

    double ll_per_token = NAN;
    if (opt.eval_every > 0 && (iter % opt.eval_every == 0 || iter == opt.iterations)) {
      // Collapsed log p(w, z) = sum_d [lg(K a) - lg(K a + N_d) + sum_k lg(n_dk + a) - lg(a)]
      //   + sum_k [lg(V b) - lg(n_k + V b) + sum_w lg(n_wk + b) - lg(b)].
      tessera::Accumulator<double> ll(ctx, ll_const);
      tessera::parallel_for(doc_topic, [&](const Key<2>&, int32_t& n) {
        if (n != 0) ll += lg_alpha[n];
      });
      tessera::parallel_for(word_topic, [&](const Key<2>&, int32_t& n) {
        if (n != 0) ll += lg_beta[n];
      });
      for (int k = 0; k < K; ++k) ll += -std::lgamma(static_cast<double>(totals(k)) + V * opt.beta);
      ll_per_token = ll.value() / static_cast<double>(tokens.nnz());
    }
    const double elapsed = Seconds(std::chrono::steady_clock::now() - start);
    const double acceptance =
        static_cast<double>(accepted.value()) /
        static_cast<double>(tokens.nnz() * (opt.sampler == "gibbs" ? 1 : opt.mh_steps));
    if (report) {
      fmt::print(
          "iter {:4d}  ll/token {:.5f}  tokens/s {:.3e} ({:.3e}/cpu-s)  moved {:.3f}  {:.2f}s{}\n",
          iter, ll_per_token, tokens_per_s, tokens_per_cpu_s, acceptance, elapsed, workers);
      std::fflush(stdout);  // progress shows as it happens, also through a pipe (tessera run)
    }
    bool written = true;
    if (metrics) {
      tessera::MetricsRecord record;
      record.set("app", "lda")
          .set("iteration", iter)
          .set("loglik_per_token", ll_per_token)
          .set("tokens_per_s", tokens_per_s)
          .set("moved_fraction", acceptance)
          .set("tokens_per_cpu_s", tokens_per_cpu_s)
          .set("iteration_s", sample_seconds)
          .set("elapsed_s", elapsed);
      if (distributed) record.set("workers", ctx.job().num_workers);
      if (opt.data_parallel >= 0) record.set("data_parallel_staleness", opt.data_parallel);
      tessera::Status s = metrics->Write(record);
      if (!s.ok()) {
        fmt::print(stderr, "lda: --metrics: {}\n", s.ToString());
        written = false;
      }
    }
    if (!AllWorkersOk(ctx, written)) return 1;
  }
  if (!opt.model.save_model.empty()) {
    // Copies made by loops, whole on every worker however the sampler keeps the counts.
    auto word_topic_out = DistArray<int32_t, 2>::dense(ctx, {V, K});
    auto doc_topic_out = DistArray<int32_t, 2>::dense(ctx, {D, K});
    tessera::parallel_for(word_topic_out, [&](const Key<2>& key, int32_t& out) {
      out = word_topic(key[0], key[1]);
    });
    tessera::parallel_for(doc_topic_out, [&](const Key<2>& key, int32_t& out) {
      out = doc_topic(key[0], key[1]);
    });
    tessera::Status saved;
    if (report) {
      saved = lda::SaveModel(opt.model.save_model,
                             {K, opt.alpha, opt.beta, &word_topic_out, &doc_topic_out, &vocab},
                             opt.model.model_top_words);
      if (saved.ok()) fmt::print("lda: model saved to {}\n", opt.model.save_model);
      if (!saved.ok()) fmt::print(stderr, "lda: --save-model: {}\n", saved.ToString());
    }
    if (!AllWorkersOk(ctx, saved.ok())) return 1;
  }
  if (report && !opt.vocab_path.empty()) {
    // The largest topics first, each with its most frequent words.
    std::vector<int> order(K);
    for (int k = 0; k < K; ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](int a, int b) { return totals(a) > totals(b); });
    for (int i = 0; i < std::min(opt.show_topics, K); ++i) {
      const int k = order[i];
      std::vector<std::pair<int32_t, int64_t>> words;
      for (int64_t w = 0; w < V; ++w) {
        if (word_topic(w, k) > 0) words.emplace_back(word_topic(w, k), w);
      }
      const size_t n = std::min<size_t>(opt.top_words, words.size());
      std::partial_sort(words.begin(), words.begin() + n, words.end(), std::greater<>());
      std::string line;
      for (size_t j = 0; j < n; ++j) line += (j ? " " : "") + vocab[words[j].second];
      fmt::print("topic {:4d} ({:6d} tokens): {}\n", k, totals(k), line);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Collapsed Gibbs LDA (alias/Metropolis-Hastings sampler) on Tessera DistArrays"};
  app.set_version_flag("--version", std::string("lda ") + tessera::kVersion);
  app.option_defaults()->always_capture_default();
  LdaOptions opt;
  // `tessera run --log-level L` passes L to every process as TESSERA_LOG_LEVEL.
  const char* env_level = std::getenv("TESSERA_LOG_LEVEL");
  std::string log_level = env_level != nullptr && *env_level != '\0' ? env_level : "info";
  app.add_option("--docword", opt.docword_path,
                 "UCI bag-of-words file (D, W, NNZ, then docID wordID count) (default: none; required unless "
                 "--load-model)");
  app.add_option("-K,--topics", opt.topics, "number of topics")
      ->capture_default_str()
      ->check(CLI::Range(2, 100000));
  app.add_option("--alpha", opt.alpha, "document-topic Dirichlet prior")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--beta", opt.beta, "topic-word Dirichlet prior")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--iterations", opt.iterations, "sampling passes over the corpus")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--mh-steps", opt.mh_steps, "MH steps per token (alternating doc/word proposals)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--sampler", opt.sampler,
                 "mh (alias + Metropolis-Hastings) or gibbs (exact, O(K))")
      ->capture_default_str()
      ->check(CLI::IsMember({"mh", "gibbs"}));
  app.add_option("--max-docs", opt.max_docs, "use only documents 1..N (0: all)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--staleness", opt.staleness,
                 "staleness of the topic-totals table when distributed")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option(
         "--data-parallel", opt.data_parallel,
         "run the sampling loop data-parallel (SSP, counts on the servers) with staleness S "
         "instead of the 2D schedule (default: off, the 2D schedule)")
      ->default_str("")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--threads", opt.threads,
                 "executor threads per process: above 1, loops run in parallel under tessc's "
                 "schedules (default: TESSERA_THREADS, else 1)")
      ->check(CLI::Range(1, tessera::internal::kMaxExecutorSlots - 1));
  app.add_option("--eval-every", opt.eval_every,
                 "log-likelihood every N iterations and at the last (0: never)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", opt.seed, "seed of the initial topic assignments and of the sampler")
      ->capture_default_str();
  app.add_option("--metrics", opt.metrics_path,
                 "write per-iteration metrics here (JSON lines) (default: none)");
  app.add_option("--vocab", opt.vocab_path,
                 "vocabulary file: print the top words of the largest topics (default: none)");
  app.add_option("--show-topics", opt.show_topics,
                 "with --vocab: how many of the largest topics to print")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--top-words", opt.top_words, "with --vocab: words printed per topic")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.add_option("--log-level", log_level,
                 "trace, debug, info, warn, error or off (default: "
                 "TESSERA_LOG_LEVEL, else info)");
  lda::AddModelOptions(app, &opt.model);
  CLI11_PARSE(app, argc, argv);
  opt.model.seed = opt.seed;
  if (const std::string bad = lda::CheckModelModes(opt.model, !opt.docword_path.empty());
      !bad.empty()) {
    fmt::print(stderr, "lda: {}\n", bad);
    return 2;
  }
  // Without --threads, TESSERA_THREADS; a malformed value is an error, before any work.
  if (app.count("--threads") == 0) {
    const tessera::Result<int> env_threads = tessera::ThreadsFromEnvironment();
    if (!env_threads.ok()) {
      fmt::print(stderr, "lda: {}\n", env_threads.status().message());
      return 2;
    }
    if (*env_threads > 0) opt.threads = *env_threads;
  }
  if (tessera::Status s = tessera::SetLogLevel(log_level); !s.ok()) {
    fmt::print(stderr, "lda: {}\n", s.ToString());
    return 2;
  }
  tessera::ContextOptions context_options;
  context_options.threads = opt.threads;
  tessera::Context ctx(argc, argv, std::move(context_options));
  return opt.model.load_model.empty() ? Run(ctx, opt) : lda::RunInference(ctx, opt.model);
}
