#include "mf/mf_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string_view>
#include <unordered_set>

#include "tessera/array_io.h"
#include "tessera/version.h"

namespace mf {
namespace {

namespace fs = std::filesystem;
using tessera::Result;
using tessera::Status;

constexpr int kModelVersion = 1;

std::string In(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / name).string();
}

// The ids of a map, one per line by index: `names[i]` when given (string ids), else the key.
Status WriteIds(const std::string& path, const tessera::IdMap& ids,
                const std::vector<std::string>* names) {
  if (names != nullptr && static_cast<int64_t>(names->size()) != ids.size()) {
    return Status::Internal(fmt::format("'{}': {} names for {} ids", path, names->size(), ids.size()));
  }
  std::ofstream out(path + ".tmp", std::ios::binary | std::ios::trunc);
  for (int64_t i = 0; i < ids.size(); ++i) {
    if (names != nullptr) {
      out << (*names)[static_cast<size_t>(i)] << '\n';
    } else {
      out << ids.external(i) << '\n';
    }
  }
  out.close();
  if (!out) return Status::DataLoss(fmt::format("writing '{}' failed", path));
  std::error_code ec;
  fs::rename(path + ".tmp", path, ec);
  if (ec)
    return Status::InvalidArgument(fmt::format("cannot rename to '{}': {}", path, ec.message()));
  return Status::Ok();
}

Result<std::vector<std::string>> ReadIds(const std::string& path, int64_t expected) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("cannot open '{}'", path));
  std::vector<std::string> ids;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    ids.push_back(line);
  }
  if (static_cast<int64_t>(ids.size()) != expected) {
    return Status::DataLoss(
        fmt::format("'{}' has {} ids; the model has {}", path, ids.size(), expected));
  }
  return ids;
}

}  // namespace

const std::vector<std::string>& ModelFiles() {
  static const std::vector<std::string> files = {"model.json",     "W.tarr",         "H.tarr",
                                                 "user_bias.tarr", "item_bias.tarr", "users.txt",
                                                 "items.txt"};
  return files;
}

std::string ArrayFile(const std::string& dir, const std::string& name, bool text) {
  return In(dir, name + (text ? ".txt" : ".tarr"));
}

Status SaveModelDescription(const std::string& dir, const ModelDescription& m) {
  TESSERA_RETURN_IF_ERROR(WriteIds(In(dir, "users.txt"), *m.users, m.user_names));
  TESSERA_RETURN_IF_ERROR(WriteIds(In(dir, "items.txt"), *m.items, m.item_names));
  // model.json last: a directory with it is complete.
  nlohmann::json j = {{"model", "tessera-mf"},
                      {"model_version", kModelVersion},
                      {"k", m.k},
                      {"mu", m.mu},
                      {"users", m.users->size()},
                      {"items", m.items->size()},
                      {"string_ids", m.user_names != nullptr},
                      {"written_by", std::string("mf ") + tessera::kVersion}};
  const std::string path = In(dir, "model.json");
  std::ofstream out(path + ".tmp", std::ios::trunc);
  out << j.dump(2) << '\n';
  out.close();
  if (!out) return Status::DataLoss(fmt::format("writing '{}' failed", path));
  std::error_code ec;
  fs::rename(path + ".tmp", path, ec);
  if (ec)
    return Status::InvalidArgument(fmt::format("cannot rename to '{}': {}", path, ec.message()));
  return Status::Ok();
}

Result<Model> Model::Load(tessera::Context& ctx, const std::string& dir) {
  Model m;
  const std::string json_path = In(dir, "model.json");
  std::ifstream in(json_path);
  if (!in) return Status::NotFound(fmt::format("cannot open '{}'", json_path));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.value("model", "") != "tessera-mf") {
    return Status::InvalidArgument(fmt::format("'{}' is not an mf model description", json_path));
  }
  if (j.value("model_version", 0) != kModelVersion) {
    return Status::InvalidArgument(fmt::format("'{}': model version {}, this mf reads {}",
                                               json_path, j.value("model_version", 0),
                                               kModelVersion));
  }
  if (!j["k"].is_number_integer() || !j["mu"].is_number() || !j["users"].is_number_integer() ||
      !j["items"].is_number_integer()) {
    return Status::InvalidArgument(fmt::format("'{}' lacks k, mu, users or items", json_path));
  }
  m.k_ = j["k"].get<int>();
  m.string_ids_ = j.value("string_ids", false);
  m.mu_ = j["mu"].get<float>();
  const int64_t users = j["users"].get<int64_t>(), items = j["items"].get<int64_t>();
  auto W = tessera::load_array<float, 2>(ctx, In(dir, "W.tarr"));
  if (!W.ok()) return W.status();
  auto H = tessera::load_array<float, 2>(ctx, In(dir, "H.tarr"));
  if (!H.ok()) return H.status();
  auto ub = tessera::load_array<float, 1>(ctx, In(dir, "user_bias.tarr"));
  if (!ub.ok()) return ub.status();
  auto ib = tessera::load_array<float, 1>(ctx, In(dir, "item_bias.tarr"));
  if (!ib.ok()) return ib.status();
  m.W_ = std::move(W).value();
  m.H_ = std::move(H).value();
  m.user_bias_ = std::move(ub).value();
  m.item_bias_ = std::move(ib).value();
  const bool shapes_agree = !m.W_.is_sparse() && !m.H_.is_sparse() && !m.user_bias_.is_sparse() &&
                            !m.item_bias_.is_sparse() && m.W_.extent(0) == users &&
                            m.W_.extent(1) == m.k_ && m.H_.extent(0) == items &&
                            m.H_.extent(1) == m.k_ && m.user_bias_.extent(0) == users &&
                            m.item_bias_.extent(0) == items;
  if (!shapes_agree) {
    return Status::DataLoss(fmt::format(
        "model '{}': the arrays' shapes disagree with model.json ({} users, {} items, k={})", dir,
        users, items, m.k_));
  }
  auto user_ids = ReadIds(In(dir, "users.txt"), users);
  if (!user_ids.ok()) return user_ids.status();
  auto item_ids = ReadIds(In(dir, "items.txt"), items);
  if (!item_ids.ok()) return item_ids.status();
  m.users_ = std::move(user_ids).value();
  m.items_ = std::move(item_ids).value();
  for (size_t u = 0; u < m.users_.size(); ++u) m.user_index_.emplace(m.users_[u], u);
  for (size_t i = 0; i < m.items_.size(); ++i) m.item_index_.emplace(m.items_[i], i);
  return m;
}

int64_t Model::user(const std::string& id) const {
  auto it = user_index_.find(id);
  return it == user_index_.end() ? -1 : it->second;
}

int64_t Model::item(const std::string& id) const {
  auto it = item_index_.find(id);
  return it == item_index_.end() ? -1 : it->second;
}

float Model::Predict(int64_t u, int64_t i) const {
  float p = mu_;
  if (u >= 0) p += user_bias_.get({{u}});
  if (i >= 0) p += item_bias_.get({{i}});
  if (u >= 0 && i >= 0) {
    auto w = W_.row(u);
    auto h = H_.row(i);
    float dot = 0;
    for (int j = 0; j < k_; ++j) dot += w[j] * h[j];
    p += dot;
  }
  return p;
}

Evaluation Evaluate(const Model& model, const std::vector<Pair>& ratings) {
  Evaluation e;
  double sq = 0;
  for (const Pair& p : ratings) {
    const int64_t u = model.user(p.user), i = model.item(p.item);
    e.unknown_users += u < 0;
    e.unknown_items += i < 0;
    const double err = p.rating - model.Predict(u, i);
    sq += err * err;
  }
  e.ratings = static_cast<int64_t>(ratings.size());
  e.rmse = e.ratings > 0 ? std::sqrt(sq / static_cast<double>(e.ratings)) : NAN;
  return e;
}

namespace {

// Writes `out` through a temporary file renamed into place.
template <typename Fill>
Status WriteText(const std::string& out, Fill&& fill) {
  const std::string tmp = out + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return Status::InvalidArgument(fmt::format("cannot write '{}'", out));
  fill(f);
  const bool ok = std::ferror(f) == 0;
  if (std::fclose(f) != 0 || !ok) {
    std::remove(tmp.c_str());
    return Status::DataLoss(fmt::format("writing '{}' failed", out));
  }
  if (std::rename(tmp.c_str(), out.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::InvalidArgument(fmt::format("cannot rename '{}' to '{}'", tmp, out));
  }
  return Status::Ok();
}

}  // namespace

Status WritePredictions(const Model& model, const std::vector<Pair>& pairs,
                        const std::string& out) {
  return WriteText(out, [&](std::FILE* f) {
    for (const Pair& p : pairs) {
      fmt::print(f, "{}\t{}\t{}\n", p.user, p.item,
                 model.Predict(model.user(p.user), model.item(p.item)));
    }
  });
}

Status WriteRecommendations(const Model& model, int n, const std::vector<Pair>& exclude,
                            const std::string& out) {
  // Excluded (user, item) index pairs, as one 64-bit key each.
  std::unordered_set<uint64_t> skip;
  for (const Pair& p : exclude) {
    const int64_t u = model.user(p.user), i = model.item(p.item);
    if (u >= 0 && i >= 0)
      skip.insert(static_cast<uint64_t>(u) * static_cast<uint64_t>(model.num_items()) +
                  static_cast<uint64_t>(i));
  }
  return WriteText(out, [&](std::FILE* f) {
    std::vector<std::pair<float, int64_t>> scores;
    for (int64_t u = 0; u < model.num_users(); ++u) {
      scores.clear();
      for (int64_t i = 0; i < model.num_items(); ++i) {
        if (skip.count(static_cast<uint64_t>(u) * static_cast<uint64_t>(model.num_items()) +
                       static_cast<uint64_t>(i)) > 0)
          continue;
        scores.emplace_back(model.Predict(u, i), i);
      }
      const size_t top = std::min<size_t>(static_cast<size_t>(n), scores.size());
      // Best first; ties by item index, so the output is deterministic.
      std::partial_sort(scores.begin(), scores.begin() + static_cast<std::ptrdiff_t>(top),
                        scores.end(), [](const auto& a, const auto& b) {
                          return a.first > b.first || (a.first == b.first && a.second < b.second);
                        });
      for (size_t r = 0; r < top; ++r) {
        fmt::print(f, "{}\t{}\t{}\n", model.user_id(u), model.item_id(scores[r].second),
                   scores[r].first);
      }
    }
  });
}

}  // namespace mf
