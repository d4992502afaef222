#include "lda/lda_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <numeric>
#include <utility>

#include "common/app_io.h"
#include "lda/lda_run.h"
#include "tessera/array_io.h"
#include "tessera/version.h"

namespace lda {
namespace {

namespace fs = std::filesystem;
using tessera::DistArray;
using tessera::Result;
using tessera::Status;

constexpr int kModelVersion = 1;

std::string In(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / name).string();
}

// Writes `path` through a temporary file renamed into place.
Status WriteText(const std::string& path, const std::function<void(std::FILE*)>& fill) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return Status::InvalidArgument(fmt::format("cannot write '{}'", path));
  fill(f);
  const bool ok = std::ferror(f) == 0;
  if (std::fclose(f) != 0 || !ok) {
    std::remove(tmp.c_str());
    return Status::DataLoss(fmt::format("writing '{}' failed", path));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::InvalidArgument(fmt::format("cannot rename '{}' to '{}'", tmp, path));
  }
  return Status::Ok();
}

// K proportions on one line.
void PrintProportions(std::FILE* f, const std::vector<double>& theta) {
  for (size_t k = 0; k < theta.size(); ++k) {
    if (k > 0) std::fputc(' ', f);
    fmt::print(f, "{:.6g}", theta[k]);
  }
  std::fputc('\n', f);
}

struct LoadedModel {
  int topics = 0;
  int64_t vocab_size = 0;
  double alpha = 0, beta = 0;
  DistArray<int32_t, 2> word_topic;
};

Result<LoadedModel> LoadModel(tessera::Context& ctx, const std::string& dir) {
  const std::string json_path = In(dir, "model.json");
  std::ifstream in(json_path);
  if (!in) return Status::NotFound(fmt::format("cannot open '{}'", json_path));
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.value("model", "") != "tessera-lda") {
    return Status::InvalidArgument(fmt::format("'{}' is not an lda model description", json_path));
  }
  if (j.value("model_version", 0) != kModelVersion) {
    return Status::InvalidArgument(fmt::format("'{}': model version {}, this lda reads {}",
                                               json_path, j.value("model_version", 0),
                                               kModelVersion));
  }
  if (!j.contains("topics") || !j["topics"].is_number_integer() || !j.contains("vocab_size") ||
      !j["vocab_size"].is_number_integer() || !j.contains("alpha") || !j["alpha"].is_number() ||
      !j.contains("beta") || !j["beta"].is_number()) {
    return Status::InvalidArgument(
        fmt::format("'{}' lacks topics, vocab_size, alpha or beta", json_path));
  }
  LoadedModel m;
  m.topics = j["topics"].get<int>();
  m.vocab_size = j["vocab_size"].get<int64_t>();
  m.alpha = j["alpha"].get<double>();
  m.beta = j["beta"].get<double>();
  auto wt = tessera::load_array<int32_t, 2>(ctx, In(dir, "word_topic.tarr"));
  if (!wt.ok()) return wt.status();
  m.word_topic = std::move(wt).value();
  if (m.word_topic.is_sparse() || m.word_topic.extent(0) != m.vocab_size ||
      m.word_topic.extent(1) != m.topics || m.topics < 1 || !(m.alpha > 0) || !(m.beta > 0)) {
    return Status::DataLoss(
        fmt::format("model '{}': word_topic.tarr disagrees with model.json (V = {}, K = {})", dir,
                    m.vocab_size, m.topics));
  }
  return m;
}

// Topic proportions of every document of `docs` under the model's word-topic counts, by
// collapsed Gibbs sampling of the documents' tokens with those counts fixed (fold-in). The
// estimate averages the proportions over the second half of the sweeps.
std::vector<std::vector<double>> FoldIn(const LoadedModel& m, tessera::Corpus& docs, int sweeps,
                                        uint64_t seed) {
  const int K = m.topics;
  const int64_t V = m.vocab_size;
  std::vector<double> totals(static_cast<size_t>(K), 0);
  const int32_t* n_wk = m.word_topic.data();
  for (int64_t w = 0; w < V; ++w) {
    for (int k = 0; k < K; ++k) totals[static_cast<size_t>(k)] += n_wk[w * K + k];
  }
  // phi[w][k] = (n_wk + beta) / (n_k + V beta): the model's topic-word distributions.
  std::vector<float> phi(static_cast<size_t>(V * K));
  for (int64_t w = 0; w < V; ++w) {
    for (int k = 0; k < K; ++k) {
      phi[static_cast<size_t>(w * K + k)] =
          static_cast<float>((n_wk[w * K + k] + m.beta) /
                             (totals[static_cast<size_t>(k)] + static_cast<double>(V) * m.beta));
    }
  }
  std::vector<std::vector<double>> theta(static_cast<size_t>(docs.num_docs),
                                         std::vector<double>(static_cast<size_t>(K), 1.0 / K));
  std::vector<int64_t> words;
  std::vector<int32_t> z;
  std::vector<int32_t> n_dk(static_cast<size_t>(K));
  std::vector<double> p(static_cast<size_t>(K));
  const int keep_from = sweeps / 2;
  for (int64_t d = 0; d < docs.num_docs; ++d) {
    words.clear();
    for (auto [w, count] : docs.counts.sparse_row(d)) {
      for (int32_t c = 0; c < count; ++c) words.push_back(w);
    }
    if (words.empty()) continue;  // no evidence: the uniform proportions stay
    uint64_t state = seed ^ (static_cast<uint64_t>(d) * 0x9E3779B97F4A7C15ULL);
    z.resize(words.size());
    std::fill(n_dk.begin(), n_dk.end(), 0);
    for (size_t t = 0; t < words.size(); ++t) {
      z[t] = static_cast<int32_t>(tessera::internal::SplitMix64(state) % static_cast<uint64_t>(K));
      ++n_dk[static_cast<size_t>(z[t])];
    }
    std::vector<double>& out = theta[static_cast<size_t>(d)];
    std::fill(out.begin(), out.end(), 0.0);
    const double norm = static_cast<double>(words.size()) + K * m.alpha;
    for (int sweep = 0; sweep < sweeps; ++sweep) {
      for (size_t t = 0; t < words.size(); ++t) {
        --n_dk[static_cast<size_t>(z[t])];
        const float* phi_w = &phi[static_cast<size_t>(words[t] * K)];
        double sum = 0;
        for (int k = 0; k < K; ++k) {
          sum += (n_dk[static_cast<size_t>(k)] + m.alpha) * phi_w[k];
          p[static_cast<size_t>(k)] = sum;
        }
        const double u =
            static_cast<double>(tessera::internal::SplitMix64(state) >> 11) * 0x1.0p-53 * sum;
        const int k = static_cast<int>(std::upper_bound(p.begin(), p.end(), u) - p.begin());
        z[t] = std::min(k, K - 1);
        ++n_dk[static_cast<size_t>(z[t])];
      }
      if (sweep >= keep_from) {
        for (int k = 0; k < K; ++k)
          out[static_cast<size_t>(k)] += (n_dk[static_cast<size_t>(k)] + m.alpha) / norm;
      }
    }
    const double kept = static_cast<double>(std::max(sweeps - keep_from, 1));
    for (double& x : out) x /= kept;
    if (sweeps == 0) {
      for (int k = 0; k < K; ++k)
        out[static_cast<size_t>(k)] = (n_dk[static_cast<size_t>(k)] + m.alpha) / norm;
    }
  }
  return theta;
}

}  // namespace

void AddModelOptions(CLI::App& app, ModelOptions* o) {
  app.add_option("--save-model", o->save_model,
                 "after training, write the model (word-topic and doc-topic counts, top words, "
                 "document topic proportions) into this directory, created if missing "
                 "(default: none)");
  app.add_option("--model-top-words", o->model_top_words,
                 "with --save-model: words per topic in topics.txt")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--load-model", o->load_model,
                 "use the model saved in this directory instead of training (with --infer) "
                 "(default: none)");
  app.add_option("--infer", o->infer_path,
                 "with --load-model: UCI docword file of new documents whose topic proportions "
                 "go to --out (its wordIDs must be the model's) (default: none)");
  app.add_option("--out", o->out_path,
                 "with --infer: one line of K topic proportions per document (default: none)");
  app.add_option("--infer-iterations", o->infer_iterations,
                 "with --infer: Gibbs sweeps over each new document")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
}

std::string CheckModelModes(const ModelOptions& o, bool have_docword) {
  if (o.load_model.empty()) {
    if (!have_docword) return "give --docword FILE (or --load-model DIR --infer FILE)";
    if (!o.infer_path.empty() || !o.out_path.empty())
      return "--infer and --out need --load-model DIR";
    return "";
  }
  if (have_docword || !o.save_model.empty()) {
    return "--load-model infers with a trained model: drop --docword and --save-model";
  }
  if (o.infer_path.empty() || o.out_path.empty())
    return "--load-model needs --infer FILE and --out FILE";
  return "";
}

Status PrepareSave(const ModelOptions& o) {
  if (o.save_model.empty()) return Status::Ok();
  return tessera::apps::PrepareOutputDir(o.save_model);
}

Status SaveModel(const std::string& dir, const TrainedModel& m, int top_words) {
  const DistArray<int32_t, 2>& wt = *m.word_topic;
  const DistArray<int32_t, 2>& dt = *m.doc_topic;
  const int K = m.topics;
  const int64_t V = wt.extent(0), D = dt.extent(0);
  TESSERA_RETURN_IF_ERROR(tessera::save_array(wt, In(dir, "word_topic.tarr")));
  TESSERA_RETURN_IF_ERROR(tessera::save_array(dt, In(dir, "doc_topic.tarr")));
  std::vector<int64_t> totals(static_cast<size_t>(K), 0);
  for (int64_t w = 0; w < V; ++w) {
    for (int k = 0; k < K; ++k) totals[static_cast<size_t>(k)] += wt(w, k);
  }
  const bool have_vocab = m.vocab != nullptr && static_cast<int64_t>(m.vocab->size()) >= V;
  TESSERA_RETURN_IF_ERROR(WriteText(In(dir, "topics.txt"), [&](std::FILE* f) {
    std::vector<int> order(static_cast<size_t>(K));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return totals[static_cast<size_t>(a)] > totals[static_cast<size_t>(b)];
    });
    std::vector<std::pair<int32_t, int64_t>> words;
    for (int k : order) {
      words.clear();
      for (int64_t w = 0; w < V; ++w) {
        if (wt(w, k) > 0) words.emplace_back(wt(w, k), -w);  // ties: the smaller wordID first
      }
      const size_t n = std::min<size_t>(static_cast<size_t>(top_words), words.size());
      std::partial_sort(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(n), words.end(),
                        std::greater<>());
      fmt::print(f, "topic {} ({} tokens):", k, totals[static_cast<size_t>(k)]);
      for (size_t j = 0; j < n; ++j) {
        const int64_t w = -words[j].second;
        if (have_vocab) {
          fmt::print(f, " {}", (*m.vocab)[static_cast<size_t>(w)]);
        } else {
          fmt::print(f, " #{}", w + 1);  // 1-based wordID, as in the docword file
        }
      }
      std::fputc('\n', f);
    }
  }));
  TESSERA_RETURN_IF_ERROR(WriteText(In(dir, "doc_topics.txt"), [&](std::FILE* f) {
    std::vector<double> theta(static_cast<size_t>(K));
    for (int64_t d = 0; d < D; ++d) {
      int64_t length = 0;
      for (int k = 0; k < K; ++k) length += dt(d, k);
      const double norm = static_cast<double>(length) + K * m.alpha;
      for (int k = 0; k < K; ++k) theta[static_cast<size_t>(k)] = (dt(d, k) + m.alpha) / norm;
      PrintProportions(f, theta);
    }
  }));
  if (have_vocab) {
    TESSERA_RETURN_IF_ERROR(WriteText(In(dir, "vocab.txt"), [&](std::FILE* f) {
      for (int64_t w = 0; w < V; ++w) fmt::print(f, "{}\n", (*m.vocab)[static_cast<size_t>(w)]);
    }));
  }
  int64_t tokens = 0;
  for (int64_t t : totals) tokens += t;
  // model.json last: a directory with it is complete.
  const nlohmann::json j = {{"model", "tessera-lda"},
                            {"model_version", kModelVersion},
                            {"topics", K},
                            {"vocab_size", V},
                            {"documents", D},
                            {"tokens", tokens},
                            {"alpha", m.alpha},
                            {"beta", m.beta},
                            {"written_by", std::string("lda ") + tessera::kVersion}};
  return WriteText(In(dir, "model.json"), [&](std::FILE* f) { fmt::print(f, "{}\n", j.dump(2)); });
}

int RunInference(tessera::Context& ctx, const ModelOptions& o) {
  const bool report = ctx.job().rank == 0;
  Status ready = tessera::apps::CheckModelDir(o.load_model, {"model.json", "word_topic.tarr"});
  if (ready.ok()) ready = tessera::apps::CheckInputFile(o.infer_path);
  if (ready.ok() && report) ready = tessera::apps::CheckOutputFile(o.out_path);
  if (!ready.ok()) fmt::print(stderr, "lda: {}\n", ready.ToString());
  if (int status = AgreedStatus(ctx, ready.ok()); status != 0) return status;
  auto model = LoadModel(ctx, o.load_model);
  if (!model.ok()) {
    fmt::print(stderr, "lda: --load-model: {}\n", model.status().ToString());
    return 1;
  }
  auto docs = tessera::load_docword(ctx, o.infer_path);
  if (!docs.ok()) {
    fmt::print(stderr, "lda: --infer: {}\n", docs.status().ToString());
    return 1;
  }
  if (docs->vocab_size > model->vocab_size) {
    fmt::print(stderr,
               "lda: --infer: '{}' has W = {} words but the model knows {}: documents must use "
               "the model's wordIDs (corpus --vocab-in makes such files)\n",
               o.infer_path, docs->vocab_size, model->vocab_size);
    return 1;
  }
  Status written;
  if (report) {
    fmt::print("lda: model {}: K={}, V={}; inferring {} documents ({} tokens), {} sweeps\n",
               o.load_model, model->topics, model->vocab_size, docs->num_docs, docs->num_tokens,
               o.infer_iterations);
    const auto theta = FoldIn(*model, *docs, o.infer_iterations, o.seed);
    written = WriteText(o.out_path, [&](std::FILE* f) {
      for (const auto& t : theta) PrintProportions(f, t);
    });
    if (written.ok()) {
      fmt::print("lda: topic proportions of {} documents written to {}\n", theta.size(),
                 o.out_path);
    } else {
      fmt::print(stderr, "lda: --out: {}\n", written.ToString());
    }
  }
  return AgreedStatus(ctx, written.ok());
}

}  // namespace lda
