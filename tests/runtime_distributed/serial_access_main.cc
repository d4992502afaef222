// A program whose code outside loops reads and writes single elements of arrays that a
// distributed job keeps partitioned (tessc: loop_only, with a serial access): each such access
// fetches the element's row from its holder, so the arrays stay partitioned and every worker
// computes what the serial program computes (serial_access_test.cc). Every loop here is exact
// (integer sums, values of the factories' recipes), so each worker's output must equal the
// serial run's byte for byte. Each worker writes its output to OUT_DIR/out.<rank>.
//
//   serial_access OUT_DIR TRAIN
#include <tessera/tessera.h>

#include <cstdint>
#include <cstdio>
#include <string>

using tessera::DistArray;
using tessera::Key;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s OUT_DIR TRAIN\n", argv[0]);
    return 2;
  }
  tessera::Context ctx(argc, argv);
  auto loaded = tessera::load_triples<float>(ctx, argv[2]);
  if (!loaded.ok()) {
    std::fprintf(stderr, "load failed: %s\n", loaded.status().ToString().c_str());
    return 1;
  }
  DistArray<float, 2>& ratings = loaded->train;
  const int64_t users = ratings.extent(0), items = ratings.extent(1);
  ratings.shuffle_blocks(3, {4, 4}, /*sort_within=*/true);
  // Rows wider than FetchRow's 64 KiB pieces for user_count and F (8 and 32 KiB: it brings 8 and
  // 2 rows), so that they stay split; item_stars' rows are small (a piece holds them all).
  auto user_count = DistArray<int64_t, 2>::dense(ctx, {users, 1024});       // local by user
  auto item_stars = DistArray<int64_t, 2>::dense(ctx, {items, 2});          // rotating by item
  auto F = DistArray<double, 2>::random(ctx, {items, 4096}, 7, -1.0, 1.0);  // read-only, rotating
  const std::string out = std::string(argv[1]) + "/out." + std::to_string(ctx.job().rank);
  std::FILE* f = std::fopen(out.c_str(), "w");
  if (f == nullptr) {
    std::perror(out.c_str());
    return 1;
  }
  // Before any loop: rows no worker has computed yet.
  std::fprintf(f, "F(3, 1) %.17g F(%lld, 2) %.17g\n", F(3, 1), static_cast<long long>(items - 1),
               F.get({{items - 1, 2}}));
  user_count(5, 0) = 1000;
  user_count(6, 1023) = 7;
  for (int epoch = 0; epoch < 2; ++epoch) {
    tessera::parallel_for(ratings, [&](const Key<2>& k, float& r) {
      user_count(k[0], 0) += 1;
      user_count(k[0], 1023) += user_count(k[0], 0) % 3;
      item_stars(k[1], 0) += static_cast<int64_t>(r);
      item_stars(k[1], 1) += static_cast<int64_t>(F(k[1], 0) * 1000);
    });
  }
  // After training: rows held by one worker each.
  for (int64_t u : {int64_t{0}, int64_t{5}, users / 2, users - 1}) {
    std::fprintf(f, "user_count(%lld) %lld\n", static_cast<long long>(u),
                 static_cast<long long>(user_count(u, 0) * 10000 + user_count(u, 1023)));
  }
  for (int64_t i : {int64_t{1}, items / 3, items - 1}) {
    std::fprintf(f, "item_stars(%lld) %lld %lld\n", static_cast<long long>(i),
                 static_cast<long long>(item_stars(i, 0)),
                 static_cast<long long>(item_stars.at({{i, 1}})));
  }
  // Writes from code outside loops, which the next loop must see.
  item_stars(2, 0) += 7;
  ++user_count(users - 1, 0);
  F(4, 0) = 0.25;
  int64_t sum_here = 0;
  for (int64_t i = 0; i < 8 && i < items; ++i) sum_here += item_stars(i, 0);
  std::fprintf(f, "first items' stars %lld\n", static_cast<long long>(sum_here));
  tessera::Accumulator<int64_t> total(ctx);
  tessera::parallel_for(ratings, [&](const Key<2>& k, float&) {
    total += item_stars(k[1], 0) + user_count(k[0], 0) + user_count(k[0], 1023) +
             static_cast<int64_t>((F(k[1], 0) + F(k[1], 4095)) * 1000);
  });
  std::fprintf(f, "total %lld\n", static_cast<long long>(total.value()));
  std::fprintf(f, "F(4, 0) %.17g user_count(%lld) %lld\n", F(4, 0),
               static_cast<long long>(users - 1), static_cast<long long>(user_count(users - 1, 0)));
  std::fclose(f);
  return 0;
}
