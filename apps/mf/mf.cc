// mf: matrix factorization by stochastic gradient descent, written as a serial Tessera program.
//
// Model: rating(u, i) ~ mu + b_u + c_i + <W[u], H[i]>, fit by SGD on the squared error with L2
// regularization; the learning rate decays geometrically per epoch. Each rating touches only
// user u's parameters (W row u, b_u) and item i's (H row i, c_i), so tessc can partition the
// ratings loop 2D: users over workers (space) and items rotating between them (time).
//
//   mf --train u1.base --test u1.test -k 40 --epochs 20
//   mf --train ratings.csv --test-fraction 0.1 --metrics mf.jsonl
//   tessera run -w 2 -s 1 -- mf --train u1.base --test u1.test --metrics mf.jsonl
//   mf --train u1.base --save-model model/          # then, from the saved model:
//   mf --load-model model/ --test u1.test           # evaluate
//   mf --load-model model/ --predict pairs.txt --out predictions.tsv
//   mf --load-model model/ --recommend 10 --exclude u1.base --out top10.tsv
//
// Under `tessera run` every worker runs this program (SPMD) and computes the same numbers (the
// accumulators are summed across workers); only worker 0 prints progress and writes --metrics.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "common/app_io.h"
#include "mf/mf_model.h"
#include "tessera/common/logging.h"
#include "tessera/tessera.h"
#include "tessera/version.h"

namespace {

struct MfOptions {
  std::string train_path;
  std::string test_path;        // Default: none (then test_fraction may hold out ratings)
  double test_fraction = 0.0;   // Default: 0
  std::string format = "auto";  // auto | tab | colon | csv | plain | netflix
  bool string_ids = false;      // ids are strings, mapped to dense indices
  int rank = 40;                // k
  int epochs = 20;
  float learning_rate = 0.03f;
  float decay = 0.9f;    // learning rate multiplier per epoch
  float lambda = 0.08f;  // L2 regularization of factors and biases
  float init_scale = 0.1f;  // factors start uniform in [0, init_scale)
  uint64_t seed = 1;
  std::string within_block = "sorted";  // sorted | shuffled
  int blocks = 0;  // order ratings in a blocks x blocks grid (0: automatic, 1: plain shuffle)
  std::string metrics_path;
  int data_parallel = -1;  // >= 0: run the SGD loop data-parallel with this staleness
  int threads = 1;         // executor threads per process (TESSERA_THREADS is the default)
  std::string save_model;  // Default: none; write the trained model into this directory
  bool model_text = false; // also write the model's arrays as text
  // Using a saved model instead of training (mf_model.h).
  std::string load_model;
  std::string predict_path;  // pairs to predict
  int recommend = 0;         // top-N items per user
  std::string exclude_path;  // ratings not to recommend again
  std::string out_path;      // where predictions or recommendations go
};

tessera::Result<tessera::TripleFormat> ParseFormat(const std::string& s) {
  if (s == "auto") return tessera::TripleFormat::kAuto;
  if (s == "tab") return tessera::TripleFormat::kTab;
  if (s == "colon") return tessera::TripleFormat::kDoubleColon;
  if (s == "csv") return tessera::TripleFormat::kCsv;
  if (s == "plain") return tessera::TripleFormat::kWhitespace;
  if (s == "netflix") return tessera::TripleFormat::kNetflix;
  return tessera::Status::InvalidArgument("unknown --format '" + s + "'");
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// "  eta 1m05s" while epochs remain: the rest of the run at the pace so far.
std::string EtaSuffix(double elapsed, int done, int total) {
  const std::string eta = tessera::FormatEta(elapsed, done, total);
  return eta.empty() ? eta : "  " + eta;
}

// tessera::AgreedExitStatus, as mf: 0, or the status to stop with (76 on the workers that stop
// only because another failed, so that `tessera run` reports the worker that failed).
int AgreedStatus(tessera::Context& ctx, bool ok) { return tessera::AgreedExitStatus(ctx, ok, "mf"); }

int Run(tessera::Context& ctx, const MfOptions& opt) {
  using tessera::DistArray;
  using tessera::Key;

  auto format = ParseFormat(opt.format);
  if (!format.ok()) {
    fmt::print(stderr, "mf: {}\n", format.status().ToString());
    return 2;
  }
  // Every worker computes the same numbers; worker 0 reports them (rank 0 when serial, too).
  const bool report = ctx.job().rank == 0;
  // The file worker 0 writes is checked before the ratings are even loaded.
  std::optional<tessera::MetricsLog> metrics;
  bool ready = true;
  if (report && !opt.save_model.empty()) {
    if (tessera::Status s = tessera::apps::PrepareOutputDir(opt.save_model); !s.ok()) {
      fmt::print(stderr, "mf: --save-model: {}\n", s.ToString());
      ready = false;
    }
  }
  if (report && !opt.metrics_path.empty()) {
    auto log = tessera::MetricsLog::Open(opt.metrics_path);
    if (log.ok()) {
      metrics.emplace(std::move(log).value());
    } else {
      fmt::print(stderr, "mf: --metrics: {}\n", log.status().ToString());
      ready = false;
    }
  }
  if (int status = AgreedStatus(ctx, ready)) return status;
  tessera::TripleOptions read;
  read.format = *format;
  read.test_path = opt.test_path;
  read.test_fraction = opt.test_fraction;
  read.split_seed = opt.seed;
  read.string_ids = opt.string_ids;
  const auto load_start = std::chrono::steady_clock::now();
  auto loaded = tessera::load_triples<float>(ctx, opt.train_path, read);
  if (!loaded.ok()) {
    fmt::print(stderr, "mf: {}\n", loaded.status().ToString());
    return 1;
  }
  const double load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  // String ids become 63-bit keys; two strings with one key would silently be one user (item).
  // Worker 0 reads the strings back now, which finds such a pair before any training, and keeps
  // them for --save-model.
  tessera::IdNames names;
  if (opt.string_ids) {
    bool named = true;
    if (report) {
      auto read_names = tessera::read_id_names(opt.train_path, read, loaded->users, loaded->items);
      if (read_names.ok()) {
        names = std::move(read_names).value();
      } else {
        fmt::print(stderr, "mf: {}\n", read_names.status().ToString());
        named = false;
      }
    }
    if (int status = AgreedStatus(ctx, named)) return status;
  }
  DistArray<float, 2>& ratings = loaded->train;
  DistArray<float, 2>& test = loaded->test;
  const int64_t users = ratings.extent(0), items = ratings.extent(1);
  const int k = opt.rank;
  const bool distributed = ctx.mode() == tessera::ExecutionMode::kDistributed;
  const std::string workers =
      distributed ? fmt::format("  workers {}", ctx.job().num_workers) : std::string();
  if (report) {
    fmt::print("mf: {} users, {} items, {} training and {} test ratings, k={}{}\n", users, items,
               ratings.nnz(), test.nnz(), k,
               opt.data_parallel >= 0 ? fmt::format(", data-parallel (staleness {})", opt.data_parallel)
                                      : std::string());
    // The loader's speed (bench/apps/memory.sh reports it): the files' bytes over the seconds
    // load_triples took, parsing, id maps and storing included.
    std::error_code ec;
    uintmax_t bytes = std::filesystem::file_size(opt.train_path, ec);
    if (!opt.test_path.empty()) bytes += std::filesystem::file_size(opt.test_path, ec);
    fmt::print("mf: loaded in {:.2f} s ({:.0f} MB/s)\n", load_seconds,
               ec ? 0.0 : static_cast<double>(bytes) / 1e6 / std::max(load_seconds, 1e-9));
  }

  // SGD wants a random order (files are often sorted by user). Visiting a grid of blocks in random
  // order, each block sorted by (user, item) as LIBMF does, keeps SGD's convergence (measured on
  // ml-100k: same RMSE) while W rows stream and the block's H rows stay in cache: 2-3x the
  // updates/s of a full shuffle once W and H outgrow the cache.
  int64_t blocks = opt.blocks;
  if (blocks == 0) {
    // Enough blocks that a block's slice of H (the rows its sorted ratings jump between) fits in
    // ~512 KiB; W rows are visited in order.
    const double bytes = static_cast<double>(items) * k * sizeof(float);
    blocks = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(bytes / (512.0 * 1024))));
  }
  ratings.shuffle_blocks(opt.seed, {blocks, blocks}, opt.within_block == "sorted");
  // A loop rather than serial code, so that only loops touch the ratings and a distributed job
  // may keep them partitioned between its workers.
  tessera::Accumulator<double> sum(ctx);
  tessera::parallel_for(ratings, [&](const Key<2>&, float& rating) { sum += rating; });
  const float mu = static_cast<float>(sum.value() / static_cast<double>(ratings.nnz()));

  auto W = DistArray<float, 2>::random(ctx, {users, k}, opt.seed + 1, 0.0f, opt.init_scale);
  auto H = DistArray<float, 2>::random(ctx, {items, k}, opt.seed + 2, 0.0f, opt.init_scale);
  auto user_bias = DistArray<float, 1>::dense(ctx, {users});
  auto item_bias = DistArray<float, 1>::dense(ctx, {items});

  float lr = opt.learning_rate;
  const float lambda = opt.lambda;
  const auto start = std::chrono::steady_clock::now();
  for (int epoch = 1; epoch <= opt.epochs; ++epoch) {
    tessera::Accumulator<double> train_sq(ctx);
    const tessera::Traffic traffic0 = ctx.traffic();
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t cpu0 = std::clock();
    // One body for both schedules: tessc's 2D schedule by default, or, with --data-parallel S,
    // the user's permission to run conflicting updates concurrently with reads up to S clocks
    // stale (every write is additive: `+=`).
    auto sgd = [&](const Key<2>& key, float& rating) {
      auto w = W.row(key[0]);
      auto h = H.row(key[1]);
      float& bu = user_bias(key[0]);
      float& bi = item_bias(key[1]);
      // Row views, not raw pointers, so that tessc sees every access (W by key[0], H by key[1]);
      // `omp simd` (-fopenmp-simd, no OpenMP runtime) vectorizes through them.
      float dot = 0;
#pragma omp simd reduction(+ : dot)
      for (int j = 0; j < k; ++j) dot += w[j] * h[j];
      const float err = rating - (mu + bu + bi + dot);
      train_sq += static_cast<double>(err) * err;
      bu += lr * (err - lambda * bu);
      bi += lr * (err - lambda * bi);
#pragma omp simd
      for (int j = 0; j < k; ++j) {
        const float wj = w[j];
        const float hj = h[j];
        w[j] += lr * (err * hj - lambda * wj);
        h[j] += lr * (err * wj - lambda * hj);
      }
    };
    if (opt.data_parallel >= 0) {
      tessera::parallel_for(ratings, sgd, tessera::DataParallel{.staleness = opt.data_parallel});
    } else {
      tessera::parallel_for(ratings, sgd);
    }
    const double train_seconds = Seconds(std::chrono::steady_clock::now() - t0);
    // Process CPU time as well: on a shared machine wall time measures the neighbours too, and
    // per CPU-second is per executor thread when several run (and, distributed, counts every
    // worker's CPU).
    auto train_cpu_seconds =
        tessera::SumOverWorkers(ctx, static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC);
    if (!train_cpu_seconds.ok()) {
      fmt::print(stderr, "mf: {}\n", train_cpu_seconds.status().ToString());
      return 1;
    }
    const double updates_per_cpu_s = static_cast<double>(ratings.nnz()) / *train_cpu_seconds;

    tessera::Accumulator<double> test_sq(ctx);
    if (test.nnz() > 0) {
      tessera::parallel_for(test, [&](const Key<2>& key, float& rating) {
        auto w = W.row(key[0]);
        auto h = H.row(key[1]);
        float dot = 0;
        for (int j = 0; j < k; ++j) dot += w[j] * h[j];
        const float err = rating - (mu + user_bias(key[0]) + item_bias(key[1]) + dot);
        test_sq += static_cast<double>(err) * err;
      });
    }
    const double train_rmse = std::sqrt(train_sq.value() / static_cast<double>(ratings.nnz()));
    const double test_rmse =
        test.nnz() > 0 ? std::sqrt(test_sq.value() / static_cast<double>(test.nnz())) : NAN;
    const double updates_per_s = static_cast<double>(ratings.nnz()) / train_seconds;
    const double elapsed = Seconds(std::chrono::steady_clock::now() - start);
    if (report) {
      fmt::print(
          "epoch {:3d}  train_rmse {:.4f}  test_rmse {:.4f}  updates/s {:.3e} ({:.3e}/cpu-s)  "
          "lr {:.5f}  {:.2f}s{}{}\n",
          epoch, train_rmse, test_rmse, updates_per_s, updates_per_cpu_s, lr, elapsed, workers,
          EtaSuffix(elapsed, epoch, opt.epochs));
      std::fflush(stdout);  // progress shows as it happens, also through a pipe (tessera run)
    }
    bool written = true;
    if (metrics) {
      tessera::MetricsRecord record;
      record.set("app", "mf")
          .set("epoch", epoch)
          .set("train_rmse", train_rmse)
          .set("test_rmse", test_rmse)
          .set("updates_per_s", updates_per_s)
          .set("updates_per_cpu_s", updates_per_cpu_s)
          .set("epoch_s", train_seconds)
          .set("elapsed_s", elapsed);
      if (distributed) {
        // What this worker sent in the epoch's loops, by kind (docs/runtime.md).
        const tessera::Traffic sent = ctx.traffic() - traffic0;
        record.set("workers", ctx.job().num_workers)
            .set("bytes_rotation", static_cast<int64_t>(sent.rotation))
            .set("bytes_repartition", static_cast<int64_t>(sent.repartition))
            .set("bytes_patches", static_cast<int64_t>(sent.patches))
            .set("bytes_server_updates", static_cast<int64_t>(sent.server_updates));
      }
      if (opt.data_parallel >= 0) record.set("data_parallel_staleness", opt.data_parallel);
      tessera::Status s = metrics->Write(record);
      if (!s.ok()) {
        fmt::print(stderr, "mf: --metrics: {}\n", s.ToString());
        written = false;
      }
    }
    if (int status = AgreedStatus(ctx, written)) return status;
    if (!std::isfinite(train_rmse)) {
      fmt::print(stderr, "mf: SGD diverged at epoch {} (non-finite training error); lower --lr\n", epoch);
      return 3;
    }
    lr *= opt.decay;
  }
  if (opt.save_model.empty()) return 0;
  // Every worker saves the arrays: save_array is collective for arrays a distributed job keeps
  // partitioned -- W, H and the biases, which only loops and these saves touch -- so their rows
  // go from where they live to worker 0, which writes the files, and every worker gets its
  // result (tessera/array_io.h). Each call depends on the previous result only, which every
  // worker shares, so all make the same calls.
  const std::string& dir = opt.save_model;
  tessera::Status saved = tessera::save_array(W, mf::ArrayFile(dir, "W"));
  if (saved.ok()) saved = tessera::save_array(H, mf::ArrayFile(dir, "H"));
  if (saved.ok()) saved = tessera::save_array(user_bias, mf::ArrayFile(dir, "user_bias"));
  if (saved.ok()) saved = tessera::save_array(item_bias, mf::ArrayFile(dir, "item_bias"));
  if (saved.ok() && opt.model_text) {
    saved = tessera::save_array_text(W, mf::ArrayFile(dir, "W", /*text=*/true));
    if (saved.ok()) saved = tessera::save_array_text(H, mf::ArrayFile(dir, "H", true));
    if (saved.ok()) {
      saved = tessera::save_array_text(user_bias, mf::ArrayFile(dir, "user_bias", true));
    }
    if (saved.ok()) {
      saved = tessera::save_array_text(item_bias, mf::ArrayFile(dir, "item_bias", true));
    }
  }
  if (saved.ok() && report) {
    mf::ModelDescription model;
    model.k = k;
    model.mu = mu;
    model.users = &loaded->users;
    model.items = &loaded->items;
    if (opt.string_ids) {
      model.user_names = &names.users;
      model.item_names = &names.items;
    }
    saved = mf::SaveModelDescription(dir, model);
    if (saved.ok()) fmt::print("mf: model saved to {}\n", dir);
  }
  if (!saved.ok() && report) fmt::print(stderr, "mf: --save-model: {}\n", saved.ToString());
  return AgreedStatus(ctx, saved.ok());
}

// Evaluates, predicts or recommends from a saved model. Every worker of a distributed job computes
// the same; worker 0 prints and writes.
int RunFromModel(tessera::Context& ctx, const MfOptions& opt) {
  using tessera::apps::CheckInputFile;
  const bool report = ctx.job().rank == 0;
  tessera::Status ready = tessera::apps::CheckModelDir(opt.load_model, mf::ModelFiles());
  for (const std::string* path : {&opt.test_path, &opt.predict_path, &opt.exclude_path}) {
    if (ready.ok() && !path->empty()) ready = CheckInputFile(*path);
  }
  if (ready.ok() && report && !opt.out_path.empty()) {
    ready = tessera::apps::CheckOutputFile(opt.out_path);
  }
  if (!ready.ok()) {
    fmt::print(stderr, "mf: {}\n", ready.ToString());
    AgreedStatus(ctx, false);
    return 1;
  }
  if (int status = AgreedStatus(ctx, true)) return status;
  auto model = mf::Model::Load(ctx, opt.load_model);
  if (!model.ok()) {
    fmt::print(stderr, "mf: --load-model: {}\n", model.status().ToString());
    return 1;
  }
  if (report) {
    fmt::print("mf: model {}: {} users, {} items, k={}\n", opt.load_model, model->num_users(),
               model->num_items(), model->k());
  }
  // --format is checked by the flag parser; it applies to these files as to --train.
  const auto parsed_format = ParseFormat(opt.format);
  const tessera::TripleFormat format =
      parsed_format.ok() ? *parsed_format : tessera::TripleFormat::kAuto;
  auto read = [&model, format](const std::string& path, bool need_rating) {
    auto pairs = mf::ReadPairs(path, need_rating, model->string_ids(), format);
    if (!pairs.ok()) fmt::print(stderr, "mf: {}\n", pairs.status().ToString());
    return pairs;
  };
  if (!opt.test_path.empty()) {
    auto test = read(opt.test_path, /*need_rating=*/true);
    if (!test.ok()) return 1;
    const mf::Evaluation e = mf::Evaluate(*model, *test);
    if (report) {
      fmt::print("test_rmse {:.4f}  over {} ratings ({} of an unknown user, {} of an unknown item)\n",
                 e.rmse, e.ratings, e.unknown_users, e.unknown_items);
    }
  }
  tessera::Status written;
  if (!opt.predict_path.empty()) {
    auto pairs = read(opt.predict_path, /*need_rating=*/false);
    if (!pairs.ok()) return 1;
    if (report) written = mf::WritePredictions(*model, *pairs, opt.out_path);
    if (report && written.ok()) fmt::print("mf: {} predictions written to {}\n", pairs->size(), opt.out_path);
  }
  if (opt.recommend > 0) {
    std::vector<mf::Pair> exclude;
    if (!opt.exclude_path.empty()) {
      auto pairs = read(opt.exclude_path, /*need_rating=*/false);
      if (!pairs.ok()) return 1;
      exclude = std::move(pairs).value();
    }
    if (report) written = mf::WriteRecommendations(*model, opt.recommend, exclude, opt.out_path);
    if (report && written.ok()) {
      fmt::print("mf: top {} items of {} users written to {}\n", opt.recommend, model->num_users(),
                 opt.out_path);
    }
  }
  if (!written.ok()) fmt::print(stderr, "mf: --out: {}\n", written.ToString());
  return AgreedStatus(ctx, written.ok());
}

// Flag combinations that cannot work, as a message (empty when fine).
std::string CheckModes(const MfOptions& opt) {
  const bool uses_model = !opt.predict_path.empty() || opt.recommend > 0 || !opt.out_path.empty() ||
                          !opt.exclude_path.empty();
  if (opt.load_model.empty()) {
    if (opt.train_path.empty()) return "give --train FILE (or --load-model DIR)";
    if (uses_model) return "--predict, --recommend, --exclude and --out need --load-model DIR";
    if (opt.test_fraction > 0 && !opt.test_path.empty()) return "give --test or --test-fraction, not both";
    return "";
  }
  if (!opt.train_path.empty() || !opt.save_model.empty() || opt.test_fraction > 0) {
    return "--load-model uses a trained model: drop --train, --save-model and --test-fraction";
  }
  if (!opt.predict_path.empty() && opt.recommend > 0) return "give --predict or --recommend, not both";
  if ((!opt.predict_path.empty() || opt.recommend > 0) && opt.out_path.empty()) {
    return "--predict and --recommend need --out FILE";
  }
  if (!opt.exclude_path.empty() && opt.recommend == 0) return "--exclude goes with --recommend";
  if (opt.test_path.empty() && opt.predict_path.empty() && opt.recommend == 0) {
    return "with --load-model, give --test, --predict or --recommend";
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"SGD matrix factorization on a Tessera DistArray of ratings"};
  app.set_version_flag("--version", std::string("mf ") + tessera::kVersion);
  app.option_defaults()->always_capture_default();
  MfOptions opt;
  // `tessera run --log-level L` passes L to every process as TESSERA_LOG_LEVEL.
  const char* env_level = std::getenv("TESSERA_LOG_LEVEL");
  std::string log_level = env_level != nullptr && *env_level != '\0' ? env_level : "info";
  app.add_option("--train", opt.train_path,
                 "ratings file (MovieLens tab, '::', CSV, or 'user item rating') (default: none; "
                 "required unless --load-model)");
  app.add_option("--test", opt.test_path, "held-out ratings file (default: none)");
  app.add_option("--test-fraction", opt.test_fraction, "hold out this fraction of --train instead")
      ->check(CLI::Range(0.0, 0.99));
  app.add_option("--format", opt.format,
                 "format of every ratings or pairs file (--train, --test, --predict, --exclude): "
                 "auto, tab, colon, csv, plain or netflix ('MOVIE:' lines, each followed by "
                 "'user,rating,date' lines; auto detects it); any of them may be gzip-compressed")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "tab", "colon", "csv", "plain", "netflix"}));
  app.add_flag("--string-ids", opt.string_ids,
               "user and item ids are strings (e.g. Amazon's 'A3SGXH7AUHU8GW'), mapped to dense "
               "indices; --save-model writes the strings, and --load-model matches them as "
               "written (default: off, ids are integers)");
  app.add_option("-k,--rank", opt.rank, "latent factors")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--epochs", opt.epochs, "passes over the training ratings")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--lr", opt.learning_rate, "initial learning rate")->capture_default_str();
  app.add_option("--decay", opt.decay, "learning-rate multiplier per epoch")->capture_default_str();
  app.add_option("--lambda", opt.lambda, "L2 regularization")->capture_default_str();
  app.add_option("--init-scale", opt.init_scale, "factors start uniform in [0, init-scale)")
      ->capture_default_str();
  app.add_option("--seed", opt.seed,
                 "seed of the test split, the rating order and the initial factors")
      ->capture_default_str();
  app.add_option("--blocks", opt.blocks,
                 "visit ratings in a shuffled BxB grid of blocks (0: automatic)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--within-block", opt.within_block, "order inside a block: sorted or shuffled")
      ->capture_default_str()
      ->check(CLI::IsMember({"sorted", "shuffled"}));
  app.add_option("--metrics", opt.metrics_path,
                 "write per-epoch metrics here (JSON lines) (default: none)");
  app.add_option("--data-parallel", opt.data_parallel,
                 "run the SGD loop data-parallel (SSP, parameters on the servers) with staleness S "
                 "instead of the 2D schedule (default: off, the 2D schedule)")
      ->default_str("")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--threads", opt.threads,
                 "executor threads per process: above 1, loops run in parallel under tessc's "
                 "schedules (default: TESSERA_THREADS, else 1)")
      ->check(CLI::Range(1, tessera::internal::kMaxExecutorSlots - 1));
  app.add_option("--log-level", log_level,
                 "trace, debug, info, warn, error or off (default: "
                 "TESSERA_LOG_LEVEL, else info)");
  app.add_option("--save-model", opt.save_model,
                 "after training, write the model (factors, biases, id maps) into this directory, "
                 "created if missing (default: none)");
  app.add_flag("--model-text", opt.model_text,
               "with --save-model, also write each array as text (.txt beside the .tarr)");
  app.add_option("--load-model", opt.load_model,
                 "use the model saved in this directory instead of training (default: none)");
  app.add_option("--predict", opt.predict_path,
                 "with --load-model: predict the rating of every 'user item' line of this file "
                 "into --out (default: none)");
  app.add_option("--recommend", opt.recommend,
                 "with --load-model: write the N items of highest predicted rating for every "
                 "user into --out (default: 0, none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--exclude", opt.exclude_path,
                 "with --recommend: never recommend the (user, item) pairs of this file, e.g. the "
                 "training ratings (default: none)");
  app.add_option("--out", opt.out_path, "where --predict or --recommend write (default: none)");
  CLI11_PARSE(app, argc, argv);
  // Without --threads, TESSERA_THREADS; a malformed value is an error, before any work.
  if (app.count("--threads") == 0) {
    const tessera::Result<int> env_threads = tessera::ThreadsFromEnvironment();
    if (!env_threads.ok()) {
      fmt::print(stderr, "mf: {}\n", env_threads.status().message());
      return 2;
    }
    if (*env_threads > 0) opt.threads = *env_threads;
  }
  if (const std::string bad = CheckModes(opt); !bad.empty()) {
    fmt::print(stderr, "mf: {}\n", bad);
    return 2;
  }
  if (tessera::Status s = tessera::SetLogLevel(log_level); !s.ok()) {
    fmt::print(stderr, "mf: {}\n", s.ToString());
    return 2;
  }
  tessera::ContextOptions context_options;
  context_options.threads = opt.threads;
  tessera::Context ctx(argc, argv, std::move(context_options));
  return opt.load_model.empty() ? Run(ctx, opt) : RunFromModel(ctx, opt);
}
