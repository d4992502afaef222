// lda's trained models: saving one (--save-model DIR) and folding new documents into a saved one
// (--load-model DIR --infer DOCWORD --out FILE). Kept apart from the sampler in lda.cc, which
// calls these at a few points.
//
// A model directory (docs/apps.md, "lda model directory"):
//   model.json        K, V, D, alpha, beta, tokens, the program version
//   word_topic.tarr   topic counts per word, int32, V x K (tessera::save_array)
//   doc_topic.tarr    topic counts per training document, int32, D x K
//   topics.txt        every topic's most frequent words, largest topic first
//   doc_topics.txt    line d: the topic proportions of training document d (1-based docID d)
//   vocab.txt         the vocabulary, when --vocab was given (wordID n on line n)
//
// Thread safety: none needed; called from serial code.
#ifndef TESSERA_APPS_LDA_LDA_MODEL_H_
#define TESSERA_APPS_LDA_LDA_MODEL_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/tessera.h"

namespace lda {

struct ModelOptions {
  std::string save_model;     // Default: none
  int model_top_words = 20;   // words per topic in topics.txt
  std::string load_model;     // Default: none (train)
  std::string infer_path;     // docword of new documents, with --load-model
  std::string out_path;       // their topic proportions
  int infer_iterations = 30;  // Gibbs sweeps over the new documents
  uint64_t seed = 1;
};

// Adds --save-model, --model-top-words, --load-model, --infer, --out, --infer-iterations.
void AddModelOptions(CLI::App& app, ModelOptions* options);

// Flag combinations that cannot work, as a message (empty when fine).
std::string CheckModelModes(const ModelOptions& options, bool have_docword);

// Before training, on the worker that saves: creates the model directory and checks it is
// writable.
tessera::Status PrepareSave(const ModelOptions& options);

// What SaveModel writes (owned by the caller).
struct TrainedModel {
  int topics = 0;
  double alpha = 0, beta = 0;
  const tessera::DistArray<int32_t, 2>* word_topic = nullptr;  // V x K
  const tessera::DistArray<int32_t, 2>* doc_topic = nullptr;   // D x K
  const std::vector<std::string>* vocab = nullptr;             // may be empty
};
tessera::Status SaveModel(const std::string& dir, const TrainedModel& model, int top_words);

// --load-model DIR --infer DOCWORD --out FILE: every worker loads the model and the documents;
// worker 0 samples their topics (collapsed Gibbs with the model's word-topic counts fixed) and
// writes one line of K proportions per document. Returns the process exit code.
int RunInference(tessera::Context& ctx, const ModelOptions& options);

}  // namespace lda

#endif  // TESSERA_APPS_LDA_LDA_MODEL_H_
