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
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/common/logging.h"
#include "tessera/tessera.h"

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
  int mh_steps = 2;        // MH steps per token, alternating doc and word proposals
  std::string sampler = "mh";  // mh | gibbs (the exact O(K) textbook sampler, as a reference)
  int64_t max_docs = 0;    // 0: all documents
  int staleness = 1;       // of the topic-totals table when distributed
  int eval_every = 1;      // log-likelihood every N iterations (0: never)
  uint64_t seed = 1;
  std::string metrics_path;
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

// Vose's alias method over weights[0..n): fills prob/alias (positions in [0, n)).
void BuildAlias(const float* weights, int n, float total, float* prob, int32_t* alias,
                std::vector<int32_t>& small, std::vector<int32_t>& large) {
  small.clear();
  large.clear();
  const float scale = static_cast<float>(n) / total;
  for (int i = 0; i < n; ++i) {
    prob[i] = weights[i] * scale;
    alias[i] = i;
    (prob[i] < 1.0f ? small : large).push_back(i);
  }
  while (!small.empty() && !large.empty()) {
    const int32_t s = small.back(), l = large.back();
    small.pop_back();
    alias[s] = l;
    prob[l] -= 1.0f - prob[s];
    if (prob[l] < 1.0f) {
      large.pop_back();
      small.push_back(l);
    }
  }
  for (int32_t i : small) prob[i] = 1.0f;  // rounding leftovers
  for (int32_t i : large) prob[i] = 1.0f;
}

inline int32_t SampleAlias(const float* prob, const int32_t* alias, int n, uint64_t r) {
  const uint32_t i = Rng::Below(r, static_cast<uint32_t>(n));
  return Rng::Unit(r) < prob[i] ? static_cast<int32_t>(i) : alias[i];
}

// Word proposals, rebuilt from the counts at the start of each iteration. The mass of word w is
// split into a sparse part over its non-zero topics, n_wk / (n_k + V beta), and a dense part
// shared by all words, beta / (n_k + V beta).
struct WordProposals {
  std::vector<int64_t> offset;  // word w's entries are [offset[w], offset[w + 1])
  std::vector<int32_t> topic;   // ascending within a word
  std::vector<int32_t> count;   // n_wk when built
  std::vector<float> prob;
  std::vector<int32_t> alias;   // positions within the word's entries
  std::vector<float> sparse_mass;
  std::vector<float> inv_total;  // 1 / (n_k + V beta) when built
  std::vector<float> dense_prob;
  std::vector<int32_t> dense_alias;
  float dense_mass = 0;

  void Build(const DistArray<int32_t, 2>& word_topic, const RelaxedArray<int64_t, 1>& totals,
             double beta) {
    const int64_t V = word_topic.extent(0);
    const int K = static_cast<int>(word_topic.extent(1));
    const double vbeta = static_cast<double>(V) * beta;
    inv_total.resize(K);
    std::vector<float> dense_w(K);
    dense_mass = 0;
    for (int k = 0; k < K; ++k) {
      inv_total[k] = static_cast<float>(1.0 / (static_cast<double>(totals(k)) + vbeta));
      dense_w[k] = static_cast<float>(beta) * inv_total[k];
      dense_mass += dense_w[k];
    }
    std::vector<int32_t> small, large;
    dense_prob.resize(K);
    dense_alias.resize(K);
    BuildAlias(dense_w.data(), K, dense_mass, dense_prob.data(), dense_alias.data(), small, large);

    offset.assign(V + 1, 0);
    topic.clear();
    count.clear();
    for (int64_t w = 0; w < V; ++w) {
      auto row = word_topic.row(w);
      for (int k = 0; k < K; ++k) {
        if (row[k] != 0) {
          topic.push_back(k);
          count.push_back(row[k]);
        }
      }
      offset[w + 1] = static_cast<int64_t>(topic.size());
    }
    prob.resize(topic.size());
    alias.resize(topic.size());
    sparse_mass.assign(V, 0.0f);
    std::vector<float> weights;
    for (int64_t w = 0; w < V; ++w) {
      const int64_t b = offset[w], n = offset[w + 1] - b;
      if (n == 0) continue;
      weights.resize(n);
      float mass = 0;
      for (int64_t i = 0; i < n; ++i) {
        weights[i] = static_cast<float>(count[b + i]) * inv_total[topic[b + i]];
        mass += weights[i];
      }
      sparse_mass[w] = mass;
      BuildAlias(weights.data(), static_cast<int>(n), mass, &prob[b], &alias[b], small, large);
    }
  }

  int32_t Sample(int64_t w, Rng& rng) const {
    const uint64_t r = rng.Next();
    const float u = Rng::Unit(r) * (sparse_mass[w] + dense_mass);
    const uint64_t r2 = rng.Next();
    if (u < sparse_mass[w]) {
      const int64_t b = offset[w];
      return topic[b + SampleAlias(&prob[b], &alias[b], static_cast<int>(offset[w + 1] - b), r2)];
    }
    return SampleAlias(dense_prob.data(), dense_alias.data(), static_cast<int>(dense_prob.size()), r2);
  }
  // Unnormalized q_w(k): (n_wk + beta) / (n_k + V beta) with the counts it was built from.
  float Weight(int64_t w, int32_t k, float beta) const {
    const auto first = topic.begin() + offset[w], last = topic.begin() + offset[w + 1];
    const auto it = std::lower_bound(first, last, k);
    const float n = (it != last && *it == k) ? static_cast<float>(count[it - topic.begin()]) : 0.0f;
    return (n + beta) * inv_total[k];
  }
};

// The doc proposal of the document being sampled, rebuilt when the loop enters a new document.
struct DocProposal {
  int64_t doc = -1;
  std::vector<int32_t> stale;  // n_dk when built, dense over K
  std::vector<int32_t> topic;  // non-zero topics
  std::vector<float> weight, prob;
  std::vector<int32_t> alias, small, large;
  float sparse_mass = 0;  // sum_k n_dk (the document's length)
  float dense_mass = 0;   // K alpha

  void Build(int64_t d, tessera::RowView<int32_t> row, float alpha) {
    const int K = static_cast<int>(row.size());
    doc = d;
    stale.assign(row.begin(), row.end());
    topic.clear();
    weight.clear();
    sparse_mass = 0;
    for (int k = 0; k < K; ++k) {
      if (stale[k] != 0) {
        topic.push_back(k);
        weight.push_back(static_cast<float>(stale[k]));
        sparse_mass += static_cast<float>(stale[k]);
      }
    }
    dense_mass = alpha * static_cast<float>(K);
    prob.resize(topic.size());
    alias.resize(topic.size());
    if (!topic.empty()) {
      BuildAlias(weight.data(), static_cast<int>(topic.size()), sparse_mass, prob.data(), alias.data(),
                 small, large);
    }
  }
  int32_t Sample(Rng& rng) const {
    const uint64_t r = rng.Next();
    const float u = Rng::Unit(r) * (sparse_mass + dense_mass);
    const uint64_t r2 = rng.Next();
    if (u < sparse_mass) {
      return topic[SampleAlias(prob.data(), alias.data(), static_cast<int>(topic.size()), r2)];
    }
    return static_cast<int32_t>(Rng::Below(r2, static_cast<uint32_t>(stale.size())));
  }
  float Weight(int32_t k, float alpha) const { return static_cast<float>(stale[k]) + alpha; }
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

int Run(tessera::Context& ctx, const LdaOptions& opt) {
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
  fmt::print("lda: {} documents, {} words, {} tokens, K={}, alpha={}, beta={}\n", D, V,
             tokens.nnz(), K, opt.alpha, opt.beta);

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

  std::optional<tessera::MetricsLog> metrics;
  if (!opt.metrics_path.empty()) {
    auto log = tessera::MetricsLog::Open(opt.metrics_path);
    if (!log.ok()) {
      fmt::print(stderr, "lda: {}\n", log.status().ToString());
      return 1;
    }
    metrics.emplace(std::move(log).value());
  }

  Rng rng(opt.seed * 0x9E3779B97F4A7C15ULL + 7);
  WordProposals word_prop;
  DocProposal doc_prop;
  const auto start = std::chrono::steady_clock::now();
  for (int iter = 1; iter <= opt.iterations; ++iter) {
    const auto t0 = std::chrono::steady_clock::now();
    word_prop.Build(word_topic, totals, beta);
    doc_prop.doc = -1;
    tessera::Accumulator<int64_t> accepted;
    if (opt.sampler == "gibbs") {
      // The textbook sampler: the exact conditional over all K topics. Slow; a reference.
      std::vector<double> cdf(K);
      tessera::parallel_for(tokens, [&](const Key<3>& key, int32_t& z) {
        auto nd = doc_topic.row(key[0]);
        auto nw = word_topic.row(key[1]);
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
      });
    } else {
    tessera::parallel_for(tokens, [&](const Key<3>& key, int32_t& z) {
      auto nd = doc_topic.row(key[0]);
      auto nw = word_topic.row(key[1]);
      if (doc_prop.doc != key[0]) doc_prop.Build(key[0], nd, alpha);
      int32_t s = z;
      nd[s] -= 1;
      nw[s] -= 1;
      totals.add(s, -1);
      int64_t moved = 0;
      for (int step = 0; step < opt.mh_steps; ++step) {
        const bool doc_step = (step % 2) == 0;
        const int32_t t = doc_step ? doc_prop.Sample(rng) : word_prop.Sample(key[1], rng);
        if (t == s) continue;
        const float p_t = (nd[t] + alpha) * (nw[t] + beta) / (static_cast<float>(totals(t)) + vbeta);
        const float p_s = (nd[s] + alpha) * (nw[s] + beta) / (static_cast<float>(totals(s)) + vbeta);
        const float q_t = doc_step ? doc_prop.Weight(t, alpha) : word_prop.Weight(key[1], t, beta);
        const float q_s = doc_step ? doc_prop.Weight(s, alpha) : word_prop.Weight(key[1], s, beta);
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
    });
    }
    const double sample_seconds = Seconds(std::chrono::steady_clock::now() - t0);
    const double tokens_per_s = static_cast<double>(tokens.nnz()) / sample_seconds;

    double ll_per_token = NAN;
    if (opt.eval_every > 0 && (iter % opt.eval_every == 0 || iter == opt.iterations)) {
      // Collapsed log p(w, z) = sum_d [lg(K a) - lg(K a + N_d) + sum_k lg(n_dk + a) - lg(a)]
      //   + sum_k [lg(V b) - lg(n_k + V b) + sum_w lg(n_wk + b) - lg(b)].
      tessera::Accumulator<double> ll(ll_const);
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
    fmt::print("iter {:4d}  ll/token {:.5f}  tokens/s {:.3e}  moved {:.3f}  {:.2f}s\n", iter,
               ll_per_token, tokens_per_s, acceptance, elapsed);
    if (metrics) {
      tessera::Status s = metrics->Write(tessera::MetricsRecord()
                                             .set("app", "lda")
                                             .set("iteration", iter)
                                             .set("loglik_per_token", ll_per_token)
                                             .set("tokens_per_s", tokens_per_s)
                                             .set("moved_fraction", acceptance)
                                             .set("iteration_s", sample_seconds)
                                             .set("elapsed_s", elapsed));
      if (!s.ok()) {
        fmt::print(stderr, "lda: {}\n", s.ToString());
        return 1;
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Collapsed Gibbs LDA (alias/Metropolis-Hastings sampler) on Tessera DistArrays"};
  LdaOptions opt;
  std::string log_level = "info";
  app.add_option("--docword", opt.docword_path, "UCI bag-of-words file (D, W, NNZ, then docID wordID count)")
      ->required();
  app.add_option("-K,--topics", opt.topics)->capture_default_str()->check(CLI::Range(2, 100000));
  app.add_option("--alpha", opt.alpha)->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--beta", opt.beta)->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--iterations", opt.iterations)->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--mh-steps", opt.mh_steps, "MH steps per token (alternating doc/word proposals)")
      ->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--sampler", opt.sampler, "mh (alias + Metropolis-Hastings) or gibbs (exact, O(K))")
      ->capture_default_str()->check(CLI::IsMember({"mh", "gibbs"}));
  app.add_option("--max-docs", opt.max_docs, "use only documents 1..N (0: all)")->capture_default_str();
  app.add_option("--staleness", opt.staleness, "staleness of the topic-totals table when distributed")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--eval-every", opt.eval_every, "log-likelihood every N iterations (0: only never)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--seed", opt.seed)->capture_default_str();
  app.add_option("--metrics", opt.metrics_path, "write per-iteration metrics here (JSON lines)");
  app.add_option("--log-level", log_level)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (tessera::Status s = tessera::SetLogLevel(log_level); !s.ok()) {
    fmt::print(stderr, "lda: {}\n", s.ToString());
    return 2;
  }
  tessera::Context ctx(argc, argv);
  return Run(ctx, opt);
}
