// What lda's samplers share (see lda_run.h).
#include "lda/lda_run.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <utility>

namespace lda {

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::vector<double> LgammaTable(double a, int64_t size) {
  std::vector<double> t(static_cast<size_t>(size));
  const double base = std::lgamma(a);
  for (int64_t n = 0; n < size; ++n) t[n] = std::lgamma(static_cast<double>(n) + a) - base;
  return t;
}

int AgreedStatus(tessera::Context& ctx, bool ok) {
  return tessera::AgreedExitStatus(ctx, ok, "lda");
}

double PhysicalMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
}

int ReportIteration(tessera::Context& ctx, const LdaOptions& opt, bool report,
                     std::optional<tessera::MetricsLog>& metrics, const IterationStats& s) {
  const bool distributed = ctx.mode() == tessera::ExecutionMode::kDistributed;
  if (report) {
    const std::string ll_text = s.ll_per_token ? fmt::format("ll/token {:.5f}", *s.ll_per_token)
                                               : std::string("ll/token -");
    const std::string eta = tessera::FormatEta(s.elapsed_s, s.iter, opt.iterations);
    const std::string workers =
        distributed ? fmt::format("  workers {}", ctx.job().num_workers) : std::string();
    fmt::print("iter {:4d}  {}  tokens/s {:.3e} ({:.3e}/cpu-s)  moved {:.3f}  {:.2f}s{}{}\n",
               s.iter, ll_text, s.tokens_per_s, s.tokens_per_cpu_s, s.acceptance, s.elapsed_s,
               workers, eta.empty() ? eta : "  " + eta);
    std::fflush(stdout);  // progress shows as it happens, also through a pipe (tessera run)
  }
  bool written = true;
  if (metrics) {
    tessera::MetricsRecord record;
    record.set("app", "lda").set("iteration", s.iter);
    if (s.ll_per_token) record.set("loglik_per_token", *s.ll_per_token);
    record.set("tokens_per_s", s.tokens_per_s)
        .set("moved_fraction", s.acceptance)
        .set("tokens_per_cpu_s", s.tokens_per_cpu_s)
        .set("iteration_s", s.iteration_s)
        .set("elapsed_s", s.elapsed_s);
    if (distributed) {
      // Worker 0's bytes by kind, as mf's metrics give them.
      record.set("workers", ctx.job().num_workers)
          .set("bytes_rotation", static_cast<int64_t>(s.sent.rotation))
          .set("bytes_repartition", static_cast<int64_t>(s.sent.repartition))
          .set("bytes_patches", static_cast<int64_t>(s.sent.patches))
          .set("bytes_server_updates", static_cast<int64_t>(s.sent.server_updates))
          .set("bytes_permuted", static_cast<int64_t>(s.sent.permuted));
    }
    if (opt.data_parallel >= 0) record.set("data_parallel_staleness", opt.data_parallel);
    tessera::Status st = metrics->Write(record);
    if (!st.ok()) {
      fmt::print(stderr, "lda: --metrics: {}\n", st.ToString());
      written = false;
    }
  }
  return AgreedStatus(ctx, written);
}

void PrintTopics(const LdaOptions& opt, const std::vector<std::string>& vocab,
                 const std::vector<int64_t>& sizes, const CountVisitor& for_each_count) {
  const int K = static_cast<int>(sizes.size());
  std::vector<int> order(K);
  for (int k = 0; k < K; ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return sizes[a] > sizes[b]; });
  const int shown = std::min(opt.show_topics, K);
  std::vector<int> rank(K, -1);
  for (int i = 0; i < shown; ++i) rank[order[i]] = i;
  std::vector<std::vector<std::pair<int32_t, int64_t>>> top(shown);  // (count, word) per topic
  for_each_count([&](int64_t w, int32_t k, int32_t count) {
    if (rank[k] >= 0) top[rank[k]].emplace_back(count, w);
  });
  for (int i = 0; i < shown; ++i) {
    const int k = order[i];
    std::vector<std::pair<int32_t, int64_t>>& words = top[i];
    const size_t n = std::min<size_t>(opt.top_words, words.size());
    std::partial_sort(words.begin(), words.begin() + n, words.end(), std::greater<>());
    std::string line;
    for (size_t j = 0; j < n; ++j) line += (j ? " " : "") + vocab[words[j].second];
    fmt::print("topic {:4d} ({:6d} tokens): {}\n", k, sizes[k], line);
  }
}

int SaveModelFromWorker0(tessera::Context& ctx, const LdaOptions& opt, bool report,
                          const TrainedModel& model) {
  tessera::Status saved;
  if (report) {
    saved = SaveModel(opt.model.save_model, model, opt.model.model_top_words);
    if (saved.ok()) fmt::print("lda: model saved to {}\n", opt.model.save_model);
    if (!saved.ok()) fmt::print(stderr, "lda: --save-model: {}\n", saved.ToString());
  }
  return AgreedStatus(ctx, saved.ok());
}

}  // namespace lda
