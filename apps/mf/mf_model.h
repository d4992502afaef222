// The files of a trained matrix-factorization model, and what mf does with one: evaluate it on
// held-out ratings, predict ratings for (user, item) pairs, recommend the top items per user.
//
// A model directory (docs/apps.md, "mf model directory"):
//   model.json                         k, the global mean mu, the shapes, the program version
//   W.tarr H.tarr                      user and item factors (users x k, items x k), float32
//   user_bias.tarr item_bias.tarr      biases (users, items), float32
//   users.txt items.txt                the external id of index n on line n + 1 (the id's string
//                                      when the model was trained with string ids)
//   *.txt beside each .tarr            with --model-text: the same arrays as text
// The .tarr files are tessera::save_array files (docs/array-format.md).
//
// Thread safety: none needed; the apps call these from serial code.
#ifndef TESSERA_APPS_MF_MF_MODEL_H_
#define TESSERA_APPS_MF_MF_MODEL_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "mf/pair_file.h"
#include "tessera/tessera.h"

namespace mf {

// Files every model directory holds (CheckModelDir).
const std::vector<std::string>& ModelFiles();

// The files of array `name` ("W", "H", "user_bias", "item_bias") in a model directory: the
// tessera::save_array file, or with `text` the save_array_text file beside it.
std::string ArrayFile(const std::string& dir, const std::string& name, bool text = false);

// What a model directory holds besides its arrays (owned by the caller).
struct ModelDescription {
  int k = 0;
  float mu = 0;
  const tessera::IdMap* users = nullptr;
  const tessera::IdMap* items = nullptr;
  // Trained with string ids (tessera::TripleOptions::string_ids): the strings of the ids by
  // index, written instead of the maps' keys. Null otherwise.
  const std::vector<std::string>* user_names = nullptr;
  const std::vector<std::string>* item_names = nullptr;
};

// Writes the id files and model.json into `dir` (which must exist), model.json last: call it
// once the arrays are saved (ArrayFile), so that a directory with model.json is complete. The
// arrays are saved by the program itself, with tessera::save_array called on every worker of a
// distributed job, so that arrays the job keeps partitioned are saved where they live.
tessera::Status SaveModelDescription(const std::string& dir, const ModelDescription& model);

class Model {
 public:
  // Reads and cross-checks every file of `dir` (shapes against model.json and the id files).
  static tessera::Result<Model> Load(tessera::Context& ctx, const std::string& dir);

  int k() const { return k_; }
  // Trained with string ids: ids are matched as written (see ReadPairs).
  bool string_ids() const { return string_ids_; }
  int64_t num_users() const { return static_cast<int64_t>(users_.size()); }
  int64_t num_items() const { return static_cast<int64_t>(items_.size()); }
  const std::string& user_id(int64_t u) const { return users_[static_cast<size_t>(u)]; }
  const std::string& item_id(int64_t i) const { return items_[static_cast<size_t>(i)]; }
  // Index of an external id, -1 when the model has not seen it.
  int64_t user(const std::string& id) const;
  int64_t item(const std::string& id) const;
  // mu + b_u + c_i + <W[u], H[i]>; an unknown user or item (-1) contributes nothing but mu.
  float Predict(int64_t u, int64_t i) const;

 private:
  int k_ = 0;
  bool string_ids_ = false;
  float mu_ = 0;
  tessera::DistArray<float, 2> W_, H_;
  tessera::DistArray<float, 1> user_bias_, item_bias_;
  std::vector<std::string> users_, items_;
  std::unordered_map<std::string, int64_t> user_index_, item_index_;
};

struct Evaluation {
  double rmse = 0;
  int64_t ratings = 0;
  int64_t unknown_users = 0;  // ratings whose user the model has not seen
  int64_t unknown_items = 0;
};
Evaluation Evaluate(const Model& model, const std::vector<Pair>& ratings);

// "user<TAB>item<TAB>prediction" per pair, in input order.
tessera::Status WritePredictions(const Model& model, const std::vector<Pair>& pairs,
                                 const std::string& out);

// For every user of the model, the `n` items of highest predicted rating, skipping the pairs in
// `exclude` (e.g. the training ratings): "user<TAB>item<TAB>score" lines, best first.
tessera::Status WriteRecommendations(const Model& model, int n, const std::vector<Pair>& exclude,
                                     const std::string& out);

}  // namespace mf

#endif  // TESSERA_APPS_MF_MF_MODEL_H_
