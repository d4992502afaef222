// lda: latent Dirichlet allocation by collapsed Gibbs sampling, written as a serial Tessera
// program.
//
// The topic totals n_k are touched by every token and live in a RelaxedArray (additive updates,
// reads up to --staleness clocks stale when distributed); everything else a sweep reads is its own
// row's counts, derived from the topics the previous sweep left.
//
// Sampler (after WarpLDA): Metropolis-Hastings with O(1) proposals and delayed counts, in sweeps
// that visit the tokens word by word, then document by document. Each token is an element of two
// iteration spaces, `tokens` keyed (doc, word, j) and `tokens_w` keyed (word, doc, j); its value
// packs the topic and a pending proposal. Each sweep writes its own order and reads the other,
// which the previous sweep wrote: the word sweep reads `tokens`, the document sweep `tokens_w`
// (TokenOrders, apps/lda/token_topics.h, maps positions between them). Its body writes only its
// own element and the relaxed totals, so tessc schedules it `independent`, and no serial code
// copies topics between the orders. A row (a word's or a document's tokens, consecutive in the
// sweep's order) is gathered once, at its first token: every token of it first accepts or rejects
// its pending proposal against the row's counts as gathered (WarpLDA's delayed counts), then draws
// its next proposal from the row's topics after those moves. The word sweep accepts the document
// proposal against the word factor of p(z = k | rest) ~ (n_dk + alpha)(n_wk + beta) / (n_k + V
// beta) and draws a word proposal q_w(k) ~ n_wk + beta (a random token of the word, or a uniform
// topic); the document sweep accepts it against the document factor and draws q_d(k) ~ n_dk +
// alpha. Each proposal's own factor cancels in its acceptance ratio. `--sampler gibbs` is the
// exact O(K) sampler on count tables, a reference.
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

// What the sampler will hold for this corpus, checked before anything that large is allocated:
// a header's D or a count of 2e9 must end with a message, not std::bad_alloc.
tessera::Status CheckCorpusFits(const tessera::Corpus& corpus, int K, const std::string& path) {
  // Per token: its key and value in `tokens` and `tokens_w` (2 x (3 x 8 + 8) bytes), its positions
  // and word (TokenOrders).
  const double tokens = static_cast<double>(corpus.num_tokens);
  const double need = tokens * 88 + static_cast<double>(corpus.num_docs) * 16;
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
        "documents ({} topics)",
        path, need / (1 << 30), have / (1 << 30), corpus.num_tokens, max_count, where[0] + 1,
        where[1] + 1, corpus.num_docs, K));
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
  auto loaded = tessera::load_docword(ctx, opt.docword_path, read);
  if (!loaded.ok()) {
    fmt::print(stderr, "lda: {}\n", loaded.status().ToString());
    return 1;
  }
  tessera::Corpus& corpus = *loaded;
  const int64_t D = corpus.num_docs, V = corpus.vocab_size;
  const int K = opt.topics;
  if (tessera::Status s = CheckCorpusFits(corpus, K, opt.docword_path);
      !s.ok()) {
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
  if (int status = AgreedStatus(ctx, ready); status != 0) return status;
  const float alpha = static_cast<float>(opt.alpha), beta = static_cast<float>(opt.beta);
  const float vbeta = static_cast<float>(V) * beta;

  // Every token twice, as elements of two iteration spaces with the same value (its topic in the
  // low 32 bits, a pending proposal in the high 32): `tokens` keyed (doc, word, j) in document
  // order and `tokens_w` keyed (word, doc, j) in word order, j = the token's index in its document.
  corpus.counts.sort_keys();
  std::vector<int64_t> doc_length(D, 0);
  std::vector<int32_t> token_words;
  token_words.reserve(corpus.num_tokens);
  for (int64_t p = 0; p < corpus.counts.nnz(); ++p) {
    const Key<2>& dw = corpus.counts.key_at(p);
    for (int32_t o = 0; o < corpus.counts.value_at(p); ++o)
      token_words.push_back(static_cast<int32_t>(dw[1]));
    doc_length[dw[0]] += corpus.counts.value_at(p);
  }
  // The entries are not read again: their memory goes before the token arrays are built.
  corpus.counts = DistArray<int32_t, 2>();
  const int64_t max_len =
      std::max<int64_t>(1, *std::max_element(doc_length.begin(), doc_length.end()));
  const lda::TokenOrders orders(doc_length, token_words, V);
  const int64_t num_tokens = orders.tokens();
  auto tokens = DistArray<int64_t, 3>::sparse(ctx, {D, V, max_len});
  auto tokens_w = DistArray<int64_t, 3>::sparse(ctx, {V, D, max_len});
  tokens.reserve(num_tokens);
  tokens_w.reserve(num_tokens);
  for (int64_t d = 0; d < D; ++d) {
    for (int64_t p = orders.doc_begin(d); p < orders.doc_end(d); ++p) {
      tokens.append_unchecked({{d, token_words[p], p - orders.doc_begin(d)}}, 0);
    }
  }
  for (int64_t q = 0; q < num_tokens; ++q) {
    const Key<3>& k = tokens.key_at(orders.doc_position(q));
    tokens_w.append_unchecked({{k[1], k[0], k[2]}}, 0);
  }
  std::vector<int32_t>().swap(token_words);
  if (report) {
    fmt::print("lda: {} documents, {} words, {} tokens, K={}, alpha={}, beta={}{}\n", D, V,
               num_tokens, K, opt.alpha, opt.beta,
               opt.data_parallel >= 0
                   ? fmt::format(", data-parallel (staleness {})", opt.data_parallel)
                   : std::string());
  }

  auto totals = RelaxedArray<int64_t, 1>::dense(ctx, {K}, opt.staleness);

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
  int64_t max_word = 1;
  for (int64_t w = 0; w < V; ++w)
    max_word = std::max(max_word, orders.word_end(w) - orders.word_begin(w));
  const auto lg_alpha = LgammaTable(alpha, max_len + 1);
  const auto lg_beta = LgammaTable(beta, max_word + 1);
  double ll_const = 0;
  for (int64_t n : doc_length) {
    ll_const += std::lgamma(K * opt.alpha) - std::lgamma(K * opt.alpha + static_cast<double>(n));
  }
  ll_const += K * std::lgamma(V * opt.beta);
  const double vbeta_d = static_cast<double>(V) * opt.beta;
  const int64_t first_doc = static_cast<int64_t>(
      std::find_if(doc_length.begin(), doc_length.end(), [](int64_t n) { return n > 0; }) -
      doc_length.begin());

  // Every token draws from its own generator, seeded by (seed, sweep, token id = its
  // document-order position): the body then has no shared mutable state besides the arrays,
  // whatever executor runs it. Its first draw decides the acceptance, its second the proposal.
  auto sweep_seed = [&opt](int sweep) {
    return opt.seed ^ (static_cast<uint64_t>(sweep) * 0xD1B54A32D192ED03ULL);
  };
  auto token_seed = [](uint64_t base, int64_t id) {
    return base ^ (static_cast<uint64_t>(id) * 0x9E3779B97F4A7C15ULL);
  };
  const auto start = std::chrono::steady_clock::now();
  for (int iter = 1; iter <= opt.iterations; ++iter) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t cpu0 = std::clock();
    tessera::Accumulator<int64_t> accepted(ctx);
    // WarpLDA's sweeps with delayed counts: every token is visited once per sweep. A sweep
    // writes its own order and reads the other one, which nothing writes while it runs, so its
    // loop writes nothing but each token's own element and the relaxed totals, and tessc can
    // partition it freely. At a row's first token the body gathers the row from the other order
    // and decides every token's move: the word sweep accepts the pending document proposal
    // against the word factor (n_wk + beta) / (n_k + V beta) of the conditional, the document
    // sweep the pending word proposal against (n_dk + alpha) / (n_k + V beta), both with the
    // row's counts as gathered and the totals as this row's earlier moves left them, and draws
    // every token's next proposal from the row after the moves: q_w(k) ~ n_wk + beta, q_d(k) ~
    // n_dk + alpha; each token then takes its move and adds it to the totals. Each proposal's own
    // factor cancels in its acceptance ratio, so every step is O(1).
    const float vbeta_1 = vbeta - 1.0f;  // n_k + V beta without the token itself
    int sweep = 0;                       // seeds the tokens' generators; names the rows' sweep
    // A gathered row's moves and next proposals; `prior` is the row's own smoothing (beta for a
    // word, alpha for a document).
    auto move_and_propose = [&](lda::RowTopics& row, float prior) {
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
      row.EndMoves();
      row.Propose(prior, [&](int64_t i) { return Rng::Nth(token_seed(seed, row.id(i)), 1); });
    };
    // The rows' work happens at their first token, out of line: what every token does is small
    // enough to inline into the runtime's loop.
    auto gather_word = [&](lda::RowTopics& row, int64_t w) __attribute__((noinline)) {
      const int64_t begin = orders.word_begin(w), n = orders.word_end(w) - begin;
      row.Begin(w, sweep, K, n);
      for (int64_t i = 0; i < n; ++i) row.set_id(i, orders.doc_position(begin + i));
      for (int64_t i = 0; i < n; ++i) row.set_state(i, tokens.value_at(row.id(i)));
      row.Count();
      move_and_propose(row, beta);
    };
    auto gather_doc = [&](lda::RowTopics& row, int64_t d) __attribute__((noinline)) {
      const int64_t begin = orders.doc_begin(d), n = orders.doc_end(d) - begin;
      row.Begin(d, sweep, K, n);
      for (int64_t i = 0; i < n; ++i) {
        row.set_id(i, begin + i);
        row.set_state(i, tokens_w.value_at(orders.word_position(begin + i)));
      }
      row.Count();
      move_and_propose(row, alpha);
    };
    auto word_sweep = [&](const Key<3>& key, int64_t& v) {
      thread_local lda::RowTopics row;  // word key[0] as the document sweep left it
      if (!row.Holds(key[0], sweep)) [[unlikely]]
        gather_word(row, key[0]);
      const int64_t i = row.IndexOf(orders.doc_begin(key[1]) + key[2]);
      const int32_t before = row.gathered_topic(i), s = row.topic(i);
      // Without a branch (a coin flip): a token that stays adds nothing.
      const int64_t moved = s != before;
      totals.add(before, -moved);
      totals.add(s, moved);
      accepted += moved;
      v = row.next(i);
    };
    auto doc_sweep = [&](const Key<3>& key, int64_t& v) {
      thread_local lda::RowTopics row;  // document key[0] as the word sweep left it
      if (!row.Holds(key[0], sweep)) [[unlikely]]
        gather_doc(row, key[0]);
      const int32_t before = row.gathered_topic(key[2]), s = row.topic(key[2]);
      // Without a branch (a coin flip): a token that stays adds nothing.
      const int64_t moved = s != before;
      totals.add(before, -moved);
      totals.add(s, moved);
      accepted += moved;
      v = row.next(key[2]);
    };
    // One body for both schedules: tessc's by default, or, with --data-parallel S, the user's
    // permission to run the loops data-parallel with reads up to S clocks stale.
    for (int pair = 0; pair < opt.mh_steps / 2; ++pair) {
      sweep = iter * opt.mh_steps + 2 * pair;
      if (opt.data_parallel >= 0) {
        tessera::parallel_for(tokens_w, word_sweep,
                              tessera::DataParallel{.staleness = opt.data_parallel});
        ++sweep;
        tessera::parallel_for(tokens, doc_sweep,
                              tessera::DataParallel{.staleness = opt.data_parallel});
      } else {
        tessera::parallel_for(tokens_w, word_sweep);
        ++sweep;
        tessera::parallel_for(tokens, doc_sweep);
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
    const double tokens_per_cpu_s = static_cast<double>(num_tokens) / *sample_cpu_seconds;
    const double tokens_per_s = static_cast<double>(num_tokens) / sample_seconds;

    std::optional<double> ll_per_token;
    if (opt.eval_every > 0 && (iter % opt.eval_every == 0 || iter == opt.iterations)) {
      // Collapsed log p(w, z) = sum_d [lg(K a) - lg(K a + N_d) + sum_k lg(n_dk + a) - lg(a)]
      //   + sum_k [lg(V b) - lg(n_k + V b) + sum_w lg(n_wk + b) - lg(b)], from the topics the
      // last document sweep left in `tokens`: each document's and word's terms are added at its
      // first token.
      tessera::Accumulator<double> ll(ctx, ll_const);
      tessera::parallel_for(tokens, [&](const Key<3>& key, int64_t&) {
        if (key[2] != 0) return;
        thread_local lda::RowTopics nd;
        const int64_t begin = orders.doc_begin(key[0]), n = orders.doc_end(key[0]) - begin;
        nd.Begin(key[0], -iter, K, n);
        for (int64_t i = 0; i < n; ++i) {
          nd.set_id(i, begin + i);
          nd.set_state(i, tokens.value_at(begin + i));
        }
        nd.Count();
        double sum = 0;
        nd.ForEachNonzero([&](int32_t, int32_t count) { sum += lg_alpha[count]; });
        // The topic totals' term, once (by the first document), inside the loop: a resumed run
        // that replays this iteration takes the whole sum from the checkpoint's log.
        if (key[0] == first_doc) {
          for (int k = 0; k < K; ++k) sum -= std::lgamma(static_cast<double>(totals(k)) + vbeta_d);
        }
        ll += sum;
      });
      tessera::parallel_for(tokens_w, [&](const Key<3>& key, int64_t&) {
        const int64_t w = key[0];
        if (orders.word_position(orders.doc_begin(key[1]) + key[2]) != orders.word_begin(w)) return;
        thread_local lda::RowTopics nw;
        const int64_t begin = orders.word_begin(w), n = orders.word_end(w) - begin;
        nw.Begin(w, -iter, K, n);
        for (int64_t i = 0; i < n; ++i) {
          nw.set_id(i, orders.doc_position(begin + i));
          nw.set_state(i, tokens.value_at(nw.id(i)));
        }
        nw.Count();
        double sum = 0;
        nw.ForEachNonzero([&](int32_t, int32_t count) { sum += lg_beta[count]; });
        ll += sum;
      });
      ll_per_token = ll.value() / static_cast<double>(num_tokens);
    }
    IterationStats stats;
    stats.iter = iter;
    stats.ll_per_token = ll_per_token;
    stats.tokens_per_s = tokens_per_s;
    stats.tokens_per_cpu_s = tokens_per_cpu_s;
    stats.iteration_s = sample_seconds;
    stats.elapsed_s = Seconds(std::chrono::steady_clock::now() - start);
    stats.acceptance = static_cast<double>(accepted.value()) /
                       static_cast<double>(num_tokens * opt.mh_steps);
    if (int status = ReportIteration(ctx, opt, report, metrics, stats); status != 0) return status;
  }
  if (!opt.model.save_model.empty()) {
    // The counts of the tokens' current topics, made by a loop (the MH sampler keeps no count
    // tables), whole on every worker.
    auto word_topic_out = DistArray<int32_t, 2>::dense(ctx, {V, K});
    auto doc_topic_out = DistArray<int32_t, 2>::dense(ctx, {D, K});
    tessera::parallel_for(tokens, [&](const Key<3>& key, int64_t& v) {
      doc_topic_out(key[0], Topic(v)) += 1;
      word_topic_out(key[1], Topic(v)) += 1;
    });
    if (int status = SaveModelFromWorker0(
            ctx, opt, report, {K, opt.alpha, opt.beta, &word_topic_out, &doc_topic_out, &vocab});
        status != 0) {
      return status;
    }
  }
  if (report && !opt.vocab_path.empty()) {
    std::vector<int64_t> sizes(K);
    for (int k = 0; k < K; ++k) sizes[k] = totals(k);
    PrintTopics(opt, vocab, sizes, [&](const auto& f) {
      lda::RowTopics nw;
      for (int64_t w = 0; w < V; ++w) {
        const int64_t begin = orders.word_begin(w), n = orders.word_end(w) - begin;
        nw.Begin(w, 0, K, n);
        for (int64_t i = 0; i < n; ++i) {
          nw.set_id(i, orders.doc_position(begin + i));
          nw.set_state(i, tokens.value_at(nw.id(i)));
        }
        nw.Count();
        nw.ForEachNonzero([&](int32_t k, int32_t count) { f(w, k, count); });
      }
    });
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
