// A program whose ratings only loops touch, so that a distributed job keeps them partitioned
// between its workers (docs/runtime.md, "Partitioned data"). Its loops need the elements in
// several layouts: by user (the layout they are loaded in), by item (moved), and a 2d loop whose
// result depends on the order of the elements; shuffling without sorting gathers the array whole
// first. The digest it writes to
// OUT.<rank> must be the same on every worker and in a serial run (partitioned_data_test.cc).
//
//   partitioned_data OUT TRAIN TEST (sorted|shuffled)
#include <tessera/tessera.h>

#include <cinttypes>
#include <cstdio>
#include <string>

using tessera::DistArray;
using tessera::Key;

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s OUT TRAIN TEST (sorted|shuffled)\n", argv[0]);
    return 2;
  }
  tessera::Context ctx(argc, argv);
  tessera::TripleOptions options;
  options.test_path = argv[3];
  auto loaded = tessera::load_triples<double>(ctx, argv[2], options);
  if (!loaded.ok()) {
    std::fprintf(stderr, "load failed: %s\n", loaded.status().ToString().c_str());
    return 1;
  }
  DistArray<double, 2>& ratings = loaded->train;
  DistArray<double, 2>& test = loaded->test;
  const int64_t users = ratings.extent(0), items = ratings.extent(1);
  // Sorted within blocks: each worker reorders what it holds. Shuffled: gathered whole first.
  ratings.shuffle_blocks(7, {3, 3}, std::string(argv[4]) == "sorted");

  // By user (the layout of the load).
  auto by_user = DistArray<double, 1>::dense(ctx, {users});
  tessera::parallel_for(ratings, [&](const Key<2>& k, double& r) { by_user(k[0]) += r; });
  // By item: the elements move to the workers of their items.
  auto by_item = DistArray<double, 1>::dense(ctx, {items});
  tessera::parallel_for(ratings, [&](const Key<2>& k, double& r) { by_item(k[1]) += r * r; });
  // 2d, order-dependent: each element is visited in its block's serial order.
  auto user_state = DistArray<double, 1>::dense(ctx, {users});
  auto item_state = DistArray<double, 1>::dense(ctx, {items});
  // Only loops touch item_factor: it stays partitioned, rotating in the 2d loop; the test loop
  // reads it by key[1] only, so it rotates there too instead of being made whole.
  auto item_factor = DistArray<double, 1>::random(ctx, {items}, 11, -1.0, 1.0);
  // A table of rows by item that only loops touch (as LDA's word-topic counts): rotating here.
  auto item_table = DistArray<double, 2>::dense(ctx, {items, 3});
  tessera::parallel_for(ratings, [&](const Key<2>& k, double& r) {
    const double e = r - user_state(k[0]) * item_state(k[1]);
    user_state(k[0]) += 0.01 * e + 0.001;
    item_state(k[1]) += 0.02 * e - 0.001;
    item_factor(k[1]) += 0.001 * e * item_factor(k[1]);
    item_table(k[1], k[0] % 3) += r;
    r += 0.5;  // the space written: each element stays with the one worker that runs it
  });
  // item_factor as an iteration space of its own: its rows go from the rotation's holders to the
  // workers of this loop's blocks.
  tessera::Accumulator<double> factor_sum(ctx);
  tessera::parallel_for(item_factor, [&](const Key<1>& k, double& f) {
    factor_sum += f * static_cast<double>(k[0] + 1);
  });
  tessera::parallel_for(item_table, [&](const Key<2>& k, double& t) {
    factor_sum += t * static_cast<double>(k[0] + 1) * static_cast<double>(k[1] + 2);
  });
  tessera::Accumulator<double> test_sum(ctx), test_items(ctx);
  tessera::parallel_for(test, [&](const Key<2>& k, double& r) {
    test_sum += r * static_cast<double>(k[0] + 1) + user_state(k[0]);
    test_items += r * item_factor(k[1]);
  });

  const std::string name = std::string(argv[1]) + "." + std::to_string(ctx.job().rank);
  std::FILE* out = std::fopen(name.c_str(), "w");
  if (out == nullptr) {
    std::perror(name.c_str());
    return 2;
  }
  std::fprintf(out, "nnz %" PRId64 " %" PRId64 " test_sum %.17g test_items %.17g factor_sum %.17g\n",
               ratings.nnz(), test.nnz(), test_sum.value(), test_items.value(), factor_sum.value());
  for (int64_t u = 0; u < users; ++u) {
    std::fprintf(out, "user %" PRId64 " %.17g %.17g\n", u, by_user(u), user_state(u));
  }
  for (int64_t i = 0; i < items; ++i) {
    std::fprintf(out, "item %" PRId64 " %.17g %.17g\n", i, by_item(i), item_state(i));
  }
  // Every element, through a loop (code outside loops never touches the ratings).
  auto copy = DistArray<double, 2>::dense(ctx, {users, items});
  tessera::parallel_for(ratings, [&](const Key<2>& k, double& r) { copy(k[0], k[1]) = r; });
  for (int64_t u = 0; u < users; ++u) {
    for (int64_t i = 0; i < items; ++i) {
      if (copy(u, i) != 0) std::fprintf(out, "%" PRId64 " %" PRId64 " %.17g\n", u, i, copy(u, i));
    }
  }
  std::fclose(out);
  return 0;
}
