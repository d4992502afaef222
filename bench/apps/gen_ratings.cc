// A synthetic low-rank rating matrix for the memory and loading benchmarks, fast enough for tens of
// millions of ratings: the model of gen_lowrank.py (rating(u, i) = 3 + <a_u, b_i> + noise, a_u and
// b_i ~ N(0, rank^-1/4) per component, noise ~ N(0, noise); every user rates about nnz/users
// distinct items chosen uniformly; 1-based ids; `user item rating` lines), with its own generator,
// so the files differ from gen_lowrank.py's in their values, not in their shape.
//
//   g++ -O2 -std=c++20 -o /tmp/gen_ratings bench/apps/gen_ratings.cc
//   /tmp/gen_ratings OUT USERS ITEMS NNZ [RANK=8] [NOISE=0.3] [SEED=1]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s OUT USERS ITEMS NNZ [RANK=8] [NOISE=0.3] [SEED=1]\n", argv[0]);
    return 2;
  }
  const std::string out = argv[1];
  const long users = std::atol(argv[2]), items = std::atol(argv[3]), nnz = std::atol(argv[4]);
  const int rank = argc > 5 ? std::atoi(argv[5]) : 8;
  const double noise = argc > 6 ? std::atof(argv[6]) : 0.3;
  const unsigned long seed = argc > 7 ? std::strtoul(argv[7], nullptr, 10) : 1;
  if (users < 1 || items < 1 || nnz < 1 || nnz / users > items || rank < 1) {
    std::fprintf(stderr, "need USERS, ITEMS, NNZ >= 1, NNZ/USERS <= ITEMS, RANK >= 1\n");
    return 2;
  }
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> factor(0.0, std::pow(rank, -0.25));
  std::normal_distribution<double> noisy(0.0, noise);
  std::vector<float> a(static_cast<size_t>(users) * rank), b(static_cast<size_t>(items) * rank);
  for (float& x : a) x = static_cast<float>(factor(rng));
  for (float& x : b) x = static_cast<float>(factor(rng));
  const std::string tmp = out + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) {
    std::perror(tmp.c_str());
    return 1;
  }
  std::uniform_int_distribution<long> pick(0, items - 1);
  std::unordered_set<long> chosen;
  const long per_user = nnz / users, extra = nnz % users;
  for (long u = 0; u < users; ++u) {
    const long n = per_user + (u < extra ? 1 : 0);
    chosen.clear();
    while (static_cast<long>(chosen.size()) < n) {
      const long i = pick(rng);
      if (!chosen.insert(i).second) continue;
      double r = 3.0 + noisy(rng);
      for (int d = 0; d < rank; ++d) r += a[u * rank + d] * b[i * rank + d];
      std::fprintf(f, "%ld %ld %.3f\n", u + 1, i + 1, r);
    }
  }
  if (std::fclose(f) != 0 || std::rename(tmp.c_str(), out.c_str()) != 0) {
    std::perror(out.c_str());
    return 1;
  }
  std::printf("%s: %ld users, %ld items, %ld ratings, rank %d, noise %g\n", out.c_str(), users,
              items, nnz, rank, noise);
  return 0;
}
