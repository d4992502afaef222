// lda: latent Dirichlet allocation by collapsed Gibbs sampling, written as a serial Tessera
// program.
//
// The topic totals n_k are touched by every token and live in a RelaxedArray (additive updates,
// reads up to --staleness clocks stale when distributed); everything else a sweep reads is its own
// row's counts, derived from the topics the previous sweep left.
//
// Sampler (after WarpLDA): Metropolis-Hastings with O(1) proposals and delayed counts, in sweeps
// that visit the tokens word by word, then document by document. Each token is an element of two
// iteration spaces, `tokens` keyed (doc, word, j) as load_docword makes them and `tokens_w` keyed
// (word, doc, j), made by `permuted`; its value packs the topic and a pending proposal. Before
// each sweep its order takes the values the other sweep left (`assign_permuted`), so a sweep
// reads and writes only its own rows, and tessc partitions it on them. A row (a word's or a
// document's tokens, consecutive in the sweep's order) is gathered once, at its first token:
// every token of it first accepts or rejects its pending proposal against the row's counts as
// gathered (WarpLDA's delayed counts), then draws its next proposal from the row's topics after
// those moves. The word sweep accepts the document proposal against the word factor of p(z = k |
// rest) ~ (n_dk + alpha)(n_wk + beta) / (n_k + V beta) and draws a word proposal q_w(k) ~ n_wk +
// beta (a random token of the word, or a uniform topic); the document sweep accepts it against
// the document factor and draws q_d(k) ~ n_dk + alpha. Each proposal's own factor cancels in its
// acceptance ratio. Only loops, `permuted` and `assign_permuted` touch the tokens, so a
// distributed job keeps both orders partitioned (each worker holds its documents' and its words'
// tokens) and a sweep's values travel once, to the holder of the other order. `--sampler gibbs`
// is the exact O(K) sampler on count tables, a reference.
//
//   lda --docword docword.20news.txt --topics 100 --iterations 50 --metrics lda.jsonl
//   tessera run -w 2 -s 1 -- lda --docword docword.20news.txt --topics 100 --iterations 50
//
// Under `tessera run` every worker runs this program (SPMD) and computes the same numbers (the
// accumulators are summed across workers); only worker 0 prints progress, topics and --metrics.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lda/lda_model.h"
#include "lda/lda_run.h"
#include "lda/vocabulary.h"
#include "tessera/common/logging.h"
#include "tessera/tessera.h"
#include "tessera/version.h"
#include "token_topics.h"

namespace {

using lda::AgreedStatus;
using lda::IterationStats;
using lda::LdaOptions;
using lda::LgammaTable;
using lda::Pack;
using lda::PhysicalMemoryBytes;
using lda::PrintTopics;
using lda::ReportIteration;
using lda::Rng;
using lda::RunGibbs;
using lda::SaveModelFromWorker0;
using lda::Seconds;
using lda::Topic;
using tessera::DistArray;
using tessera::Key;
using tessera::RelaxedArray;

// What the sampler will hold for this corpus beyond the tokens load_docword made, checked before
// it is allocated: a header's D or W of 2e9 must end with a message, not std::bad_alloc.
tessera::Status CheckCorpusFits(int64_t num_tokens, int64_t D, int64_t V, int K,
                                const std::string& path) {
  // Per token: its key and value in `tokens` and `tokens_w` (2 x (3 x 8 + 8) bytes) and its
  // place in the other order (4); per document and word its length and where its ids start.
  const double need = static_cast<double>(num_tokens) * 68 + static_cast<double>(D + V) * 16;
  const double have = PhysicalMemoryBytes();
  if (have > 0 && need > have) {
    return tessera::Status::InvalidArgument(fmt::format(
        "{}: sampling this corpus needs about {:.1f} GiB, more than this machine's {:.1f} GiB: "
        "{} tokens (the sum of the counts), {} documents and {} words (D and W in the header; "
        "{} topics)",
        path, need / (1 << 30), have / (1 << 30), num_tokens, D, V, K));
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
    auto read_vocab = lda::ReadVocabulary(opt.vocab_path);
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
  if (int status = AgreedStatus(ctx, ready); status != 0) return status;
  if (opt.sampler == "gibbs") return RunGibbs(ctx, opt, report, metrics, vocab);

  tessera::DocwordOptions read;
  read.max_docs = opt.max_docs;
  read.tokens = true;
  auto loaded = tessera::load_docword(ctx, opt.docword_path, read);
  if (!loaded.ok()) {
    fmt::print(stderr, "lda: {}\n", loaded.status().ToString());
    return 1;
  }
  // Every token twice, as elements of two iteration spaces with the same value (its topic in the
  // low 32 bits, a pending proposal in the high 32): `tokens` keyed (doc, word, j) as the loader
  // made them (j: the token's index in its document) and `tokens_w` keyed (word, doc, j), their
  // other order. Only loops, `permuted` and `assign_permuted` touch them, so a distributed job
  // keeps both partitioned: each worker holds its documents' tokens and its words' tokens.
  DistArray<int64_t, 3>& tokens = loaded->tokens;
  const int64_t D = loaded->num_docs, V = loaded->vocab_size, num_tokens = loaded->num_tokens;
  const int64_t max_len = std::max<int64_t>(1, loaded->max_doc_length);
  const int K = opt.topics;
  if (tessera::Status s = CheckCorpusFits(num_tokens, D, V, K, opt.docword_path); !s.ok()) {
    fmt::print(stderr, "lda: {}\n", s.ToString());
    return AgreedStatus(ctx, false);
  }
  if (report && !opt.vocab_path.empty() && static_cast<int64_t>(vocab.size()) < V) {
    fmt::print(stderr,
               "lda: --vocab '{}' has {} lines, but {} has W = {} words (wordID n is the "
               "word on line n)\n",
               opt.vocab_path, vocab.size(), opt.docword_path, V);
    ready = false;
  }
  if (int status = AgreedStatus(ctx, ready); status != 0) return status;
  const float alpha = static_cast<float>(opt.alpha), beta = static_cast<float>(opt.beta);
  const float vbeta = static_cast<float>(V) * beta;
  auto tokens_w = tokens.permuted({1, 0, 2});
  if (report) {
    fmt::print("lda: {} documents, {} words, {} tokens, K={}, alpha={}, beta={}{}\n", D, V,
               num_tokens, K, opt.alpha, opt.beta,
               opt.data_parallel >= 0
                   ? fmt::format(", data-parallel (staleness {})", opt.data_parallel)
                   : std::string());
  }

  auto totals = RelaxedArray<int64_t, 1>::dense(ctx, {K}, opt.staleness);
  // Tokens per document and per word, small enough to be whole: where each document's token ids
  // start (a token's id, doc_begin[doc] + j, seeds its generators) and the log-likelihood's
  // constants.
  auto doc_length = DistArray<int64_t, 1>::dense(ctx, {D});
  auto word_length = DistArray<int64_t, 1>::dense(ctx, {V});
  tessera::parallel_for(tokens, [&](const Key<3>& key, int64_t&) { doc_length(key[0]) += 1; });
  tessera::parallel_for(tokens_w, [&](const Key<3>& key, int64_t&) { word_length(key[0]) += 1; });
  // Serial state derived from those lengths (below): made now, and made again once a resumed run
  // has restored the arrays, since its replay skipped the loops that counted them. Loop bodies
  // read it through a const reference.
  struct Derived {
    std::vector<int64_t> doc_begin;  // doc_begin[d]: the id of document d's first token
    std::vector<double> lg_beta;     // lgamma(n + beta) - lgamma(beta) for a word's counts n
    double ll_const = 0;             // the log-likelihood's terms that do not change
  };
  Derived derived;
  const Derived& lengths = derived;

  // Random initial topics, a function of the key so the result does not depend on visit order.
  // The pending proposal is the topic itself (nothing to accept in the first sweep).
  tessera::parallel_for(tokens, [&](const Key<3>& key, int64_t& v) {
    uint64_t h = opt.seed ^ (static_cast<uint64_t>(key[0]) << 40) ^ (static_cast<uint64_t>(key[1]) << 12) ^
                 static_cast<uint64_t>(key[2]);
    const int32_t z =
        static_cast<int32_t>(tessera::internal::SplitMix64(h) % static_cast<uint64_t>(K));
    v = Pack(z, z);
    totals.add(z, 1);
  });

  // Log-likelihood terms that do not change: document lengths and the normalizers.
  const auto lg_alpha = LgammaTable(alpha, max_len + 1);
  auto derive = [&] {
    std::vector<int64_t>& doc_begin = derived.doc_begin;
    doc_begin.assign(static_cast<size_t>(D) + 1, 0);
    for (int64_t d = 0; d < D; ++d) doc_begin[d + 1] = doc_begin[d] + doc_length(d);
    int64_t max_word = 1;
    for (int64_t w = 0; w < V; ++w) max_word = std::max(max_word, word_length(w));
    derived.lg_beta = LgammaTable(beta, max_word + 1);
    derived.ll_const = 0;
    for (int64_t d = 0; d < D; ++d) {
      const int64_t n = doc_begin[d + 1] - doc_begin[d];
      derived.ll_const +=
          std::lgamma(K * opt.alpha) - std::lgamma(K * opt.alpha + static_cast<double>(n));
    }
    derived.ll_const += K * std::lgamma(V * opt.beta);
  };
  derive();
  ctx.on_restore(derive);
  const double vbeta_d = static_cast<double>(V) * opt.beta;

  // Every token draws from its own generator, seeded by (seed, sweep, token id): the body then
  // has no shared mutable state besides the arrays, whatever executor runs it. Its first draw
  // decides the acceptance, its second the proposal.
  auto sweep_seed = [&opt](int sweep) {
    return opt.seed ^ (static_cast<uint64_t>(sweep) * 0xD1B54A32D192ED03ULL);
  };
  auto token_seed = [](uint64_t base, int64_t id) {
    return base ^ (static_cast<uint64_t>(id) * 0x9E3779B97F4A7C15ULL);
  };
  // Whether tokens_w holds the values tokens holds (each sweep hands its order's values to the
  // other before the other's sweep).
  bool word_order_current = false;
  const auto start = std::chrono::steady_clock::now();
  // The log-likelihood of the topics an evaluated iteration i leaves, collapsed log p(w, z) =
  //   sum_d [lg(K a) - lg(K a + N_d) + sum_k lg(n_dk + a) - lg(a)]
  //   + sum_k [lg(V b) - lg(n_k + V b) + sum_w lg(n_wk + b) - lg(b)],
  // is summed where the sweeps gather the rows anyway: each document's terms from its topics
  // after iteration i's last document sweep, the topic totals' term in a small loop right after
  // that sweep, and each word's terms at its gather in iteration i+1's first word sweep (which
  // reads the topics iteration i left). Iteration i is reported then, half an iteration late; the
  // last iteration's word terms take a loop of their own. Every term is added inside a loop: a
  // resumed run takes them from the checkpoint's log (serial state derived from the arrays, like
  // lengths.ll_const, is that of the arrays before the restore while it replays).
  tessera::Accumulator<double> ll(ctx);
  std::optional<IterationStats> unreported;  // an evaluated iteration awaiting its word terms
  auto once = DistArray<int64_t, 1>::dense(ctx, {1});  // the topic totals' term's space
  bool word_ll = false, doc_ll = false;                // whether the sweep adds its rows' terms
  auto report_unreported = [&] {
    unreported->ll_per_token = ll.value() / static_cast<double>(num_tokens);
    unreported->elapsed_s = Seconds(std::chrono::steady_clock::now() - start);
    const int status = ReportIteration(ctx, opt, report, metrics, *unreported);
    unreported.reset();
    return status;
  };
  for (int iter = 1; iter <= opt.iterations; ++iter) {
    const bool evaluate =
        opt.eval_every > 0 && (iter % opt.eval_every == 0 || iter == opt.iterations);
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t cpu0 = std::clock();
    const tessera::Traffic traffic0 = ctx.traffic();
    tessera::Accumulator<int64_t> accepted(ctx);
    // WarpLDA's sweeps with delayed counts: every token is visited once per sweep. Before a
    // sweep, its order takes the values the other order's sweep left (assign_permuted), so the
    // sweep reads and writes only its own rows: at a row's first token the body gathers the row
    // and decides every token's move -- the word sweep accepts the pending document proposal
    // against the word factor (n_wk + beta) / (n_k + V beta) of the conditional, the document
    // sweep the pending word proposal against (n_dk + alpha) / (n_k + V beta), both with the
    // row's counts as gathered and the totals as this row's earlier moves left them -- and draws
    // every token's next proposal from the row after the moves: q_w(k) ~ n_wk + beta, q_d(k) ~
    // n_dk + alpha; each token then takes its move and adds it to the totals. Each proposal's own
    // factor cancels in its acceptance ratio, so every step is O(1). A row is read before any of
    // its tokens is written, so tessc partitions the sweep on rows (1D on key[0]).
    const float vbeta_1 = vbeta - 1.0f;  // n_k + V beta without the token itself
    int sweep = 0;                       // seeds the tokens' generators; names the rows' sweep
    // A gathered row's moves and next proposals; `prior` is the row's own smoothing (beta for a
    // word, alpha for a document). With `ll_table`, returns the sum of ll_table[c] over the row's
    // counts c after the moves (else 0).
    auto move_and_propose = [&](lda::RowTopics& row, float prior,
                                const std::vector<double>* ll_table) __attribute__((noinline)) {
      const uint64_t seed = sweep_seed(sweep);
      // Locals: the moves' stores cannot touch them, so they stay in registers.
      const float n_tail = vbeta, n_tail_1 = vbeta_1;
      for (int64_t i = 0; i < row.size(); ++i) {
        const int32_t s = row.topic(i), t = row.proposal(i);
        if (t == s) continue;
        const float a = static_cast<float>(row.count(t)) + prior;
        const float b = static_cast<float>(row.count(s)) - 1.0f + prior;
        const float nt = static_cast<float>(totals(t) + row.delta(t)) + n_tail;
        const float ns = static_cast<float>(totals(s) + row.delta(s)) + n_tail_1;
        row.MoveIf(i, t, Rng::Unit(Rng::Nth(token_seed(seed, row.id(i)), 0)) * b * nt < a * ns);
      }
      const double ll_sum = ll_table != nullptr ? row.SumOverCountsAfterMoves(*ll_table) : 0.0;
      row.EndMoves();
      row.Propose(prior, [&](int64_t i) { return Rng::Nth(token_seed(seed, row.id(i)), 1); });
      return ll_sum;
    };
    // The rows' work happens at their first token (the moves and proposals out of line, in
    // move_and_propose); the gathers stay in the bodies, where tessc sees them as the loop's own.
    auto word_sweep = [&](const Key<3>& key, int64_t& v) {
      thread_local lda::RowTopics row;  // word key[0] as the document sweep left it
      thread_local double row_ll = 0;   // its log-likelihood terms, when word_ll
      if (!row.Holds(key[0], sweep)) [[unlikely]] {
        const auto tokens_of = tokens_w.sparse_row(key[0]);  // (w, doc, j) by (doc, j)
        const int64_t n = tokens_of.size();
        row.Begin(key[0], sweep, K, n);
        for (int64_t i = 0; i < n; ++i) {
          const Key<3>& k = tokens_of.key(i);
          row.set_id(i, lengths.doc_begin[k[1]] + k[2]);
          row.set_state(i, tokens_of.value(i));
        }
        row.Count();
        if (word_ll) row_ll = row.SumOverCounts(lengths.lg_beta);
        move_and_propose(row, beta, nullptr);
      }
      const int64_t i = row.IndexOf(lengths.doc_begin[key[1]] + key[2]);
      // Once per word, at its first token, whichever thread or worker gathered the row and in
      // whatever order its tokens come (not at the gather, which a split row has more than one of).
      if (word_ll && i == 0) ll += row_ll;
      const int32_t before = row.gathered_topic(i), s = row.topic(i);
      // Without a branch (a coin flip): a token that stays adds nothing.
      const int64_t moved = s != before;
      totals.add(before, -moved);
      totals.add(s, moved);
      accepted += moved;
      // As a change of the token's value (the same as `v = row.next(i)`): the row read at its
      // first token conflicts with the row's later writes, which --data-parallel permits only
      // for additive ones.
      v += row.next(i) - v;
    };
    auto doc_sweep = [&](const Key<3>& key, int64_t& v) {
      thread_local lda::RowTopics row;  // document key[0] as the word sweep left it
      thread_local double row_ll = 0;   // its log-likelihood terms after its moves, when doc_ll
      if (!row.Holds(key[0], sweep)) [[unlikely]] {
        const auto tokens_of = tokens.sparse_row(key[0]);  // (d, word, j): j is the row's j-th
        const int64_t n = tokens_of.size();
        row.Begin(key[0], sweep, K, n);
        for (int64_t i = 0; i < n; ++i) {
          row.set_id(i, lengths.doc_begin[key[0]] + i);
          row.set_state(i, tokens_of.value(i));
        }
        row.Count();
        row_ll = move_and_propose(row, alpha, doc_ll ? &lg_alpha : nullptr);
      }
      if (doc_ll && key[2] == 0) ll += row_ll;  // once per document
      const int32_t before = row.gathered_topic(key[2]), s = row.topic(key[2]);
      // Without a branch (a coin flip): a token that stays adds nothing.
      const int64_t moved = s != before;
      totals.add(before, -moved);
      totals.add(s, moved);
      accepted += moved;
      v += row.next(key[2]) - v;  // as in the word sweep
    };
    // One body for both schedules: tessc's by default, or, with --data-parallel S, the user's
    // permission to run the loops data-parallel with reads up to S clocks stale.
    for (int pair = 0; pair < opt.mh_steps / 2; ++pair) {
      sweep = iter * opt.mh_steps + 2 * pair;
      if (!word_order_current) tokens_w.assign_permuted(tokens, {1, 0, 2});
      word_ll = pair == 0 && unreported.has_value();
      if (opt.data_parallel >= 0) {
        tessera::parallel_for(tokens_w, word_sweep,
                              tessera::DataParallel{.staleness = opt.data_parallel});
      } else {
        tessera::parallel_for(tokens_w, word_sweep);
      }
      if (word_ll) {
        if (int status = report_unreported(); status != 0) return status;
      }
      ++sweep;
      tokens.assign_permuted(tokens_w, {1, 0, 2});
      doc_ll = evaluate && pair == opt.mh_steps / 2 - 1;
      if (doc_ll) ll.reset();
      if (opt.data_parallel >= 0) {
        tessera::parallel_for(tokens, doc_sweep,
                              tessera::DataParallel{.staleness = opt.data_parallel});
      } else {
        tessera::parallel_for(tokens, doc_sweep);
      }
      word_order_current = false;
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
    const double tokens_per_cpu_s = static_cast<double>(num_tokens) / *sample_cpu_seconds;
    const double tokens_per_s = static_cast<double>(num_tokens) / sample_seconds;

    if (evaluate) {
      // The topic totals' term and the terms that do not change, once, from the totals after the
      // sweeps.
      tessera::parallel_for(once, [&](const Key<1>&, int64_t&) {
        double sum = lengths.ll_const;
        for (int k = 0; k < K; ++k) sum -= std::lgamma(static_cast<double>(totals(k)) + vbeta_d);
        ll += sum;
      });
    }
    IterationStats stats;
    stats.iter = iter;
    stats.tokens_per_s = tokens_per_s;
    stats.tokens_per_cpu_s = tokens_per_cpu_s;
    stats.iteration_s = sample_seconds;
    stats.elapsed_s = Seconds(std::chrono::steady_clock::now() - start);
    stats.acceptance = static_cast<double>(accepted.value()) /
                       static_cast<double>(num_tokens * opt.mh_steps);
    stats.sent = ctx.traffic() - traffic0;
    if (!evaluate) {
      if (int status = ReportIteration(ctx, opt, report, metrics, stats); status != 0) return status;
      continue;
    }
    unreported = stats;
    if (iter < opt.iterations) continue;  // the next word sweep adds the word terms
    // The last iteration's word terms, from the topics the last document sweep left (handed to
    // tokens_w): each word's at its first token.
    tokens_w.assign_permuted(tokens, {1, 0, 2});
    word_order_current = true;
    tessera::parallel_for(tokens_w, [&](const Key<3>& key, int64_t&) {
      const auto tokens_of = tokens_w.sparse_row(key[0]);
      if (tokens_of.key(0).idx != key.idx) return;  // not the word's first token
      thread_local lda::RowTopics nw;
      const int64_t n = tokens_of.size();
      nw.Begin(key[0], -iter, K, n);
      for (int64_t i = 0; i < n; ++i) nw.set_state(i, tokens_of.value(i));
      nw.Count();
      ll += nw.SumOverCounts(lengths.lg_beta);
    });
    if (int status = report_unreported(); status != 0) return status;
  }
  if (!opt.model.save_model.empty() || !opt.vocab_path.empty()) {
    // The counts of the tokens' current topics, made by loops over each order (the MH sampler
    // keeps no count tables), whole on every worker (serial code reads them). Every worker runs
    // the loops (collectives), though only worker 0 prints the topics.
    if (!word_order_current) tokens_w.assign_permuted(tokens, {1, 0, 2});
    auto word_topic_out = DistArray<int32_t, 2>::dense(ctx, {V, K});
    auto doc_topic_out =
        DistArray<int32_t, 2>::dense(ctx, {opt.model.save_model.empty() ? 1 : D, K});
    tessera::parallel_for(tokens_w, [&](const Key<3>& key, int64_t& v) {
      word_topic_out(key[0], Topic(v)) += 1;
    });
    if (!opt.model.save_model.empty()) {
      tessera::parallel_for(tokens, [&](const Key<3>& key, int64_t& v) {
        doc_topic_out(key[0], Topic(v)) += 1;
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Collapsed Gibbs LDA (Metropolis-Hastings sampler) on Tessera DistArrays"};
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
  app.add_option("--mh-steps", opt.mh_steps,
                 "MH steps per token per iteration, one per sweep (word, document, ...); even")
      ->capture_default_str()
      ->check(CLI::Range(2, 64) & CLI::Validator(
                                      [](const std::string& v) {
                                        return std::stoi(v) % 2 == 0 ? std::string()
                                                                     : std::string("must be even");
                                      },
                                      "EVEN"));
  app.add_option("--sampler", opt.sampler,
                 "mh (WarpLDA-style Metropolis-Hastings, O(1) per token) or gibbs (exact, O(K))")
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
