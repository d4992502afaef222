// Matrix factorization by SGD on ratings this program makes up itself: a Tessera program as a
// user writes one (see CMakeLists.txt next to it for how it is built).
//
// It is an ordinary serial program over DistArrays. The hot loop is a tessera::parallel_for over
// the ratings; at build time tessc sees that the body touches row key[0] of W and row key[1] of
// H and embeds a 2D schedule for it. Run alone, the binary is serial; under
//   tessera run -w 2 -s 1 -- ./mf_example
// every worker runs the same program and the loop is partitioned over the workers by that
// schedule (W's rows by worker, H's row blocks rotating between them).
//
//   ./mf_example [--epochs N] [--users N] [--items N]
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tessera/tessera.h"

namespace {

using tessera::DistArray;
using tessera::Key;

struct Options {
  int64_t users = 400;
  int64_t items = 300;
  int rank = 8;  // latent factors
  int epochs = 20;
  double density = 0.1;  // fraction of (user, item) pairs rated
};

// Ratings from a random rank-3 model plus a little noise. Every worker of a job runs the whole
// program, so every worker makes the same ratings (a fixed seed); only the loop is partitioned.
DistArray<float, 2> MakeRatings(tessera::Context& ctx, const Options& o) {
  constexpr int kTrueRank = 3;
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<float> factor(0.0f, 1.0f);
  std::normal_distribution<float> noise(0.0f, 0.05f);
  std::bernoulli_distribution rated(o.density);
  std::vector<float> u(static_cast<size_t>(o.users * kTrueRank));
  std::vector<float> v(static_cast<size_t>(o.items * kTrueRank));
  for (float& x : u) x = factor(rng);
  for (float& x : v) x = factor(rng);
  auto ratings = DistArray<float, 2>::sparse(ctx, {o.users, o.items});
  for (int64_t i = 0; i < o.users; ++i) {
    for (int64_t j = 0; j < o.items; ++j) {
      if (!rated(rng)) continue;
      float r = 0;
      for (int f = 0; f < kTrueRank; ++f) r += u[i * kTrueRank + f] * v[j * kTrueRank + f];
      ratings.insert({{i, j}}, r + noise(rng));
    }
  }
  ratings.shuffle(/*seed=*/7);  // SGD wants the samples in random order
  return ratings;
}

bool ParseFlag(int argc, char** argv, int* i, const char* name, int64_t* out) {
  if (std::strcmp(argv[*i], name) != 0 || *i + 1 >= argc) return false;
  char* end = nullptr;
  const long long v = std::strtoll(argv[*i + 1], &end, 10);
  if (*end != '\0' || v < 1) {
    std::fprintf(stderr, "mf_example: %s wants a positive integer, not '%s'\n", name, argv[*i + 1]);
    std::exit(2);
  }
  *out = v;
  ++*i;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    int64_t epochs = 0;
    if (ParseFlag(argc, argv, &i, "--epochs", &epochs)) {
      o.epochs = static_cast<int>(epochs);
    } else if (!ParseFlag(argc, argv, &i, "--users", &o.users) &&
               !ParseFlag(argc, argv, &i, "--items", &o.items)) {
      std::fprintf(stderr, "usage: mf_example [--epochs N] [--users N] [--items N]\n");
      return 2;
    }
  }
  // `tessera run --log-level L` reaches this program too: the runtime applies TESSERA_LOG_LEVEL
  // before main.
  tessera::Context ctx(argc, argv);         // joins the job when launched; alone, serial
  const bool report = ctx.job().rank == 0;  // every worker computes the same numbers
  DistArray<float, 2> ratings = MakeRatings(ctx, o);
  auto W = DistArray<float, 2>::random(ctx, {o.users, o.rank}, /*seed=*/1, 0.0f, 0.3f);
  auto H = DistArray<float, 2>::random(ctx, {o.items, o.rank}, /*seed=*/2, 0.0f, 0.3f);
  const int k = o.rank;
  const float lambda = 0.01f;
  float lr = 0.05f;
  if (report) {
    std::printf("mf_example: %lld users, %lld items, %lld ratings, k=%d\n",
                static_cast<long long>(o.users), static_cast<long long>(o.items),
                static_cast<long long>(ratings.nnz()), k);
  }

  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    tessera::Accumulator<double> squared_error(ctx);
    tessera::parallel_for(ratings, [&](const Key<2>& key, float& rating) {
      auto w = W.row(key[0]);  // row views, so that tessc sees W by key[0] and H by key[1]
      auto h = H.row(key[1]);
      float dot = 0;
      for (int j = 0; j < k; ++j) dot += w[j] * h[j];
      const float err = rating - dot;
      squared_error += static_cast<double>(err) * err;
      for (int j = 0; j < k; ++j) {
        const float wj = w[j];
        const float hj = h[j];
        w[j] = wj + lr * (err * hj - lambda * wj);
        h[j] = hj + lr * (err * wj - lambda * hj);
      }
    });
    const double rmse = std::sqrt(squared_error.value() / static_cast<double>(ratings.nnz()));
    if (report) std::printf("epoch %2d  train_rmse %.6f\n", epoch, rmse);
    lr *= 0.95f;
  }

  // The trained model's error: a loop that only reads W and H (tessc: independent).
  tessera::Accumulator<double> final_error(ctx);
  tessera::parallel_for(ratings, [&](const Key<2>& key, float& rating) {
    auto w = W.row(key[0]);
    auto h = H.row(key[1]);
    float dot = 0;
    for (int j = 0; j < k; ++j) dot += w[j] * h[j];
    final_error += static_cast<double>(rating - dot) * (rating - dot);
  });
  const double final_rmse = std::sqrt(final_error.value() / static_cast<double>(ratings.nnz()));
  if (report) std::printf("final_rmse %.6f\n", final_rmse);
  return 0;
}
