// What lda's two samplers share (apps/lda/lda.cc runs the MH sampler, lda_gibbs.cc the exact
// one): the options, a random generator, the progress report and the topics' print-out.
#ifndef TESSERA_APPS_LDA_LDA_RUN_H_
#define TESSERA_APPS_LDA_LDA_RUN_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lda/lda_model.h"
#include "tessera/tessera.h"
#include "token_topics.h"

namespace lda {

struct LdaOptions {
  std::string docword_path;
  int topics = 100;    // K
  double alpha = 0.1;  // document-topic Dirichlet prior
  double beta = 0.01;  // topic-word Dirichlet prior
  int iterations = 50;
  // MH steps per token per iteration, each a sweep (word, document, word, ...); even.
  int mh_steps = 2;
  std::string sampler = "mh";  // mh | gibbs (the exact O(K) textbook sampler, as a reference)
  int64_t max_docs = 0;        // 0: all documents
  int staleness = 1;           // of the topic-totals table when distributed
  int data_parallel = -1;      // >= 0: run the sampling loop data-parallel with this staleness
  int eval_every = 1;          // log-likelihood every N iterations (0: never)
  uint64_t seed = 1;
  std::string metrics_path;
  std::string vocab_path;  // word of wordID n on line n; prints each topic's top words at the end
  int show_topics = 10;
  int top_words = 8;
  int threads = 1;     // executor threads per process (TESSERA_THREADS is the default)
  ModelOptions model;  // --save-model, --load-model --infer (lda_model.h)
};

// A small fast generator (xoshiro-style quality is not needed; splitmix64 is plenty for MH).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() { return tessera::internal::SplitMix64(state_); }
  // The value the (n + 1)-th Next() of Rng(seed) returns, without the draws before it.
  static uint64_t Nth(uint64_t seed, uint64_t n) { return tessera::internal::SplitMix64At(seed, n); }
  // Uniform in [0, n) from the high bits, and a float in [0, 1) from the low bits, of one draw.
  static uint32_t Below(uint64_t r, uint32_t n) {
    return static_cast<uint32_t>(((r >> 32) * static_cast<uint64_t>(n)) >> 32);
  }
  static float Unit(uint64_t r) { return static_cast<float>(r & 0xFFFFFF) * 0x1.0p-24f; }

 private:
  uint64_t state_;
};

double Seconds(std::chrono::steady_clock::duration d);

// lgamma(n + a) - lgamma(a) for n in [0, size), precomputed: the log-likelihood needs millions.
std::vector<double> LgammaTable(double a, int64_t size);

// tessera::AgreedExitStatus, as lda: 0 when `ok` holds on every worker, else the status to stop
// with (1 here, 76 on the workers that stop only because another failed).
int AgreedStatus(tessera::Context& ctx, bool ok);

// A token's element: its topic in the low 32 bits, its pending MH proposal in the high 32.
inline int64_t Pack(int32_t topic, int32_t proposal) { return PackTopic(topic, proposal); }
inline int32_t Topic(int64_t v) { return TopicOf(v); }

// Bytes of physical memory (0 when unknown).
double PhysicalMemoryBytes();

// One iteration's numbers, as the progress line and the metrics record show them.
struct IterationStats {
  int iter = 0;
  std::optional<double> ll_per_token;
  double tokens_per_s = 0, tokens_per_cpu_s = 0, acceptance = 0, iteration_s = 0, elapsed_s = 0;
  tessera::Traffic sent;  // what worker 0 sent during the iteration (distributed)
};

// Worker 0's progress line and metrics record of one iteration. 0, or the status every worker
// stops with (AgreedStatus) when some worker could not write its metrics.
int ReportIteration(tessera::Context& ctx, const LdaOptions& opt, bool report,
                     std::optional<tessera::MetricsLog>& metrics, const IterationStats& s);

// Calls f(word, topic, count) for every non-zero count of a word in a topic, words in increasing
// order.
using CountVisitor = std::function<void(const std::function<void(int64_t, int32_t, int32_t)>&)>;

// The largest topics first (`sizes`: tokens per topic), each with its most frequent words.
void PrintTopics(const LdaOptions& opt, const std::vector<std::string>& vocab,
                 const std::vector<int64_t>& sizes, const CountVisitor& for_each_count);

// --save-model: worker 0 (`report`) writes `model` and says where; 0, or the status every worker
// stops with (AgreedStatus) when it could not.
int SaveModelFromWorker0(tessera::Context& ctx, const LdaOptions& opt, bool report,
                          const TrainedModel& model);

// --sampler gibbs (lda_gibbs.cc). Returns the process's exit status.
int RunGibbs(tessera::Context& ctx, const LdaOptions& opt, bool report,
             std::optional<tessera::MetricsLog>& metrics, const std::vector<std::string>& vocab);

}  // namespace lda

#endif  // TESSERA_APPS_LDA_LDA_RUN_H_
