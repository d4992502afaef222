// lda --sampler gibbs: the exact O(K) sampler (see lda_run.h and lda.cc).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "lda/lda_model.h"
#include "lda/lda_run.h"
#include "lda/vocabulary.h"
#include "tessera/tessera.h"

namespace lda {

using tessera::DistArray;
using tessera::Key;
using tessera::RelaxedArray;

// --sampler gibbs: the exact O(K) sampler on count tables, a reference, over the tokens as
// load_docword makes them. Only loops touch the tokens and the tables, so a distributed job keeps
// the tokens and the document-topic counts partitioned by document and rotates the word-topic
// counts between the workers (tessc's 2D schedule); the log-likelihood, the topics printed and
// the saved model come from loops too.
int RunGibbs(tessera::Context& ctx, const LdaOptions& opt, bool report,
             std::optional<tessera::MetricsLog>& metrics, const std::vector<std::string>& vocab) {
  tessera::DocwordOptions read;
  read.max_docs = opt.max_docs;
  read.tokens = true;
  auto loaded = tessera::load_docword(ctx, opt.docword_path, read);
  if (!loaded.ok()) {
    fmt::print(stderr, "lda: {}\n", loaded.status().ToString());
    return 1;
  }
  // Element (doc, word, j) is token j of document doc; its value packs the topic (as for mh).
  DistArray<int64_t, 3>& tokens = loaded->tokens;
  const int64_t D = loaded->num_docs, V = loaded->vocab_size, num_tokens = loaded->num_tokens;
  const int64_t max_len = std::max<int64_t>(1, loaded->max_doc_length);
  const int K = opt.topics;
  {
    // The count tables, before they are allocated: a header's D of 2e9 ends with a message.
    const double need = static_cast<double>(D + V) * K * 4;
    const double have = PhysicalMemoryBytes();
    if (have > 0 && need > have) {
      fmt::print(stderr,
                 "lda: {}: sampling this corpus needs about {:.1f} GiB, more than this machine's "
                 "{:.1f} GiB: {} documents + {} words (D and W in the header) x {} topics\n",
                 opt.docword_path, need / (1 << 30), have / (1 << 30), D, V, K);
      return 1;
    }
  }
  if (report && !opt.vocab_path.empty() && static_cast<int64_t>(vocab.size()) < V) {
    fmt::print(stderr,
               "lda: --vocab '{}' has {} lines, but {} has W = {} words (wordID n is the "
               "word on line n)\n",
               opt.vocab_path, vocab.size(), opt.docword_path, V);
    return AgreedStatus(ctx, false);
  }
  if (int status = AgreedStatus(ctx, true); status != 0) return status;
  if (report) {
    fmt::print("lda: {} documents, {} words, {} tokens, K={}, alpha={}, beta={}{}\n", D, V,
               num_tokens, K, opt.alpha, opt.beta,
               opt.data_parallel >= 0
                   ? fmt::format(", data-parallel (staleness {})", opt.data_parallel)
                   : std::string());
  }
  auto totals = RelaxedArray<int64_t, 1>::dense(ctx, {K}, opt.staleness);
  auto doc_topic = DistArray<int32_t, 2>::dense(ctx, {D, K});
  auto word_topic = DistArray<int32_t, 2>::dense(ctx, {V, K});
  // Tokens per document and per word, small enough to be whole: where each document's token ids
  // start (the ids seed the generators, as the mh sampler's positions do) and the table sizes.
  auto doc_length = DistArray<int64_t, 1>::dense(ctx, {D});
  auto word_length = DistArray<int64_t, 1>::dense(ctx, {V});

  // Random initial topics, a function of the key so the result does not depend on visit order,
  // and the count tables of those topics.
  tessera::parallel_for(tokens, [&](const Key<3>& key, int64_t& v) {
    uint64_t h = opt.seed ^ (static_cast<uint64_t>(key[0]) << 40) ^
                 (static_cast<uint64_t>(key[1]) << 12) ^ static_cast<uint64_t>(key[2]);
    const int32_t z =
        static_cast<int32_t>(tessera::internal::SplitMix64(h) % static_cast<uint64_t>(K));
    v = Pack(z, z);
    totals.add(z, 1);
  });
  tessera::parallel_for(tokens, [&](const Key<3>& key, int64_t& v) {
    doc_topic(key[0], Topic(v)) += 1;
    word_topic(key[1], Topic(v)) += 1;
    doc_length(key[0]) += 1;
    word_length(key[1]) += 1;
  });
  // Serial state derived from the lengths that loop counted: made now, and made again once a
  // resumed run has restored the arrays, since its replay skipped the loop.
  // Loop bodies read it through const references.
  std::vector<int64_t> doc_begin_store;
  std::vector<double> lg_beta_store;
  const std::vector<int64_t>& doc_begin = doc_begin_store;
  const std::vector<double>& lg_beta = lg_beta_store;
  auto derive = [&] {
    doc_begin_store.assign(static_cast<size_t>(D) + 1, 0);
    for (int64_t d = 0; d < D; ++d) doc_begin_store[d + 1] = doc_begin_store[d] + doc_length(d);
    int64_t max_word = 1;
    for (int64_t w = 0; w < V; ++w) max_word = std::max(max_word, word_length(w));
    // lgamma(n + b) - lgamma(b), with the prior as the mh sampler's tables take it (in float).
    lg_beta_store = LgammaTable(static_cast<float>(opt.beta), max_word + 1);
  };
  derive();
  ctx.on_restore(derive);

  // Log-likelihood terms: lgamma(n + a) - lgamma(a) tables and the normalizers.
  // (The priors as the mh sampler's tables take them, in float: the same log-likelihood.)
  const auto lg_alpha = LgammaTable(static_cast<float>(opt.alpha), max_len + 1);
  const double lg_kalpha = std::lgamma(K * opt.alpha), vbeta_d = static_cast<double>(V) * opt.beta;
  const double ll_const = K * std::lgamma(vbeta_d);

  auto token_rng = [&opt](int iter, int64_t id) {
    return Rng(opt.seed ^ (static_cast<uint64_t>(iter) * 0xD1B54A32D192ED03ULL) ^
               (static_cast<uint64_t>(id) * 0x9E3779B97F4A7C15ULL));
  };
  const auto start = std::chrono::steady_clock::now();
  for (int iter = 1; iter <= opt.iterations; ++iter) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t cpu0 = std::clock();
    tessera::Accumulator<int64_t> accepted(ctx);
    auto gibbs = [&](const Key<3>& key, int64_t& v) {
      thread_local std::vector<double> cdf;  // scratch, one per executor thread
      cdf.resize(K);
      auto nd = doc_topic.row(key[0]);
      auto nw = word_topic.row(key[1]);
      Rng rng = token_rng(iter, doc_begin[key[0]] + key[2]);
      const int32_t s = Topic(v);
      nd[s] -= 1;
      nw[s] -= 1;
      totals.add(s, -1);
      double sum = 0;
      for (int k = 0; k < K; ++k) {
        sum +=
            (nd[k] + opt.alpha) * (nw[k] + opt.beta) / (static_cast<double>(totals(k)) + vbeta_d);
        cdf[k] = sum;
      }
      const double u = static_cast<double>(rng.Next() >> 11) * 0x1.0p-53 * sum;
      const int32_t t =
          static_cast<int32_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
      const int32_t chosen = std::min(t, K - 1);
      nd[chosen] += 1;
      nw[chosen] += 1;
      totals.add(chosen, 1);
      accepted += chosen != s;
      v = Pack(chosen, chosen);
    };
    if (opt.data_parallel >= 0) {
      tessera::parallel_for(tokens, gibbs, tessera::DataParallel{.staleness = opt.data_parallel});
    } else {
      tessera::parallel_for(tokens, gibbs);
    }
    IterationStats stats;
    stats.iter = iter;
    stats.iteration_s = Seconds(std::chrono::steady_clock::now() - t0);
    auto cpu_seconds =
        tessera::SumOverWorkers(ctx, static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC);
    if (!cpu_seconds.ok()) {
      fmt::print(stderr, "lda: {}\n", cpu_seconds.status().ToString());
      return 1;
    }
    stats.tokens_per_cpu_s = static_cast<double>(num_tokens) / *cpu_seconds;
    stats.tokens_per_s = static_cast<double>(num_tokens) / stats.iteration_s;
    if (opt.eval_every > 0 && (iter % opt.eval_every == 0 || iter == opt.iterations)) {
      // Collapsed log p(w, z) (as for mh) from the count tables, row by row in loops over the
      // documents and the words (the tables are read by the loop's key, so they stay split); the
      // topic totals' term once, by document 0.
      tessera::Accumulator<double> ll(ctx, ll_const);
      tessera::parallel_for(doc_length, [&](const Key<1>& key, int64_t& n) {
        double sum = lg_kalpha - std::lgamma(K * opt.alpha + static_cast<double>(n));
        for (int k = 0; k < K; ++k) sum += lg_alpha[doc_topic(key[0], k)];
        if (key[0] == 0) {
          for (int k = 0; k < K; ++k) sum -= std::lgamma(static_cast<double>(totals(k)) + vbeta_d);
        }
        ll += sum;
      });
      tessera::parallel_for(word_length, [&](const Key<1>& key, int64_t&) {
        double sum = 0;
        for (int k = 0; k < K; ++k) sum += lg_beta[word_topic(key[0], k)];
        ll += sum;
      });
      stats.ll_per_token = ll.value() / static_cast<double>(num_tokens);
    }
    stats.elapsed_s = Seconds(std::chrono::steady_clock::now() - start);
    stats.acceptance = static_cast<double>(accepted.value()) / static_cast<double>(num_tokens);
    if (int status = ReportIteration(ctx, opt, report, metrics, stats); status != 0) return status;
  }
  // Every worker runs the loops (collectives), though only worker 0 prints the topics.
  if (!opt.model.save_model.empty() || !opt.vocab_path.empty()) {
    // Copies of the count tables made by loops, whole on every worker (serial code reads them),
    // while the tables themselves stay split.
    auto word_topic_out = DistArray<int32_t, 2>::dense(ctx, {V, K});
    auto doc_topic_out =
        DistArray<int32_t, 2>::dense(ctx, {opt.model.save_model.empty() ? 1 : D, K});
    tessera::parallel_for(word_length, [&](const Key<1>& key, int64_t&) {
      for (int k = 0; k < K; ++k) word_topic_out(key[0], k) = word_topic(key[0], k);
    });
    if (!opt.model.save_model.empty()) {
      tessera::parallel_for(doc_length, [&](const Key<1>& key, int64_t&) {
        for (int k = 0; k < K; ++k) doc_topic_out(key[0], k) = doc_topic(key[0], k);
      });
      if (int status = SaveModelFromWorker0(
              ctx, opt, report,
              {K, opt.alpha, opt.beta, &word_topic_out, &doc_topic_out, &vocab});
          status != 0) {
        return status;
      }
    }
    if (report && !opt.vocab_path.empty()) {
      std::vector<int64_t> sizes(K);
      for (int k = 0; k < K; ++k) sizes[k] = totals(k);
      PrintTopics(opt, vocab, sizes, [&](const auto& f) {
        for (int64_t w = 0; w < V; ++w) {
          for (int k = 0; k < K; ++k) {
            if (const int32_t n = word_topic_out(w, k); n > 0) f(w, k, n);
          }
        }
      });
    }
  }
  return 0;
}

}  // namespace lda
