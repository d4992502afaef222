// A program that saves arrays a distributed job keeps partitioned (only loops and saves touch
// them; the ratings are records in shuffled blocks, the rest dense): every worker calls save_array / save_array_text, worker 0 writes, and the files must be
// byte-for-byte those of a serial run where the loop is bit-exact, and those of whole copies of
// the same arrays (made by a loop, read by serial code, saved by each worker to its own
// <name>.whole.<rank> files) where it is not (partitioned_save_test.cc). Each worker writes the
// status of its saves to STATUS_DIR/status.<rank>.
//
//   partitioned_save STATUS_DIR SAVE_DIR TRAIN (all|rank0-only)
//
// rank0-only: worker 0 alone saves W, under a condition tessc cannot see (the launcher's rank
// variable read directly), so W stays partitioned and the save must fail clearly, not hang.
#include <tessera/tessera.h>

#include <cstdio>
#include <cstdlib>
#include <string>

using tessera::DistArray;
using tessera::Key;

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s STATUS_DIR SAVE_DIR TRAIN (all|rank0-only)\n", argv[0]);
    return 2;
  }
  tessera::Context ctx(argc, argv);
  const std::string status_dir = argv[1];
  const std::string out = argv[2];
  const std::string mode = argv[4];
  auto loaded = tessera::load_triples<float>(ctx, argv[3]);
  if (!loaded.ok()) {
    std::fprintf(stderr, "load failed: %s\n", loaded.status().ToString().c_str());
    return 1;
  }
  DistArray<float, 2>& ratings = loaded->train;
  const int64_t users = ratings.extent(0), items = ratings.extent(1);
  ratings.shuffle_blocks(3, {4, 4}, /*sort_within=*/true);
  // Partitioned dense arrays of several element types: W (local), H (rotating), counts, and C,
  // which no loop writes (its rows are the factory's values, computed where a loop needed them
  // or by the writer).
  auto W = DistArray<float, 2>::random(ctx, {users, 5}, 1, -0.5f, 0.5f);
  auto H = DistArray<double, 2>::random(ctx, {items, 3}, 2, -0.5, 0.5);
  auto user_count = DistArray<int32_t, 1>::dense(ctx, {users});
  auto item_bias = DistArray<int64_t, 1>::dense(ctx, {items});
  auto C = DistArray<float, 2>::random(ctx, {items, 2}, 9, 0.0f, 1.0f);
  for (int epoch = 0; epoch < 2; ++epoch) {
    tessera::parallel_for(ratings, [&](const Key<2>& k, float& r) {
      auto w = W.row(k[0]);
      auto h = H.row(k[1]);
      auto c = C.row(k[1]);
      double dot = c[0];
      for (int j = 0; j < 3; ++j) dot += w[j] * h[j];
      const double e = r - dot;
      for (int j = 0; j < 3; ++j) {
        w[j] += static_cast<float>(0.01 * e * h[j]);
        h[j] += 0.01 * e * w[j];
      }
      w[4] += 1.0f;
      user_count(k[0]) += 1;
      item_bias(k[1]) += static_cast<int64_t>(r * 10);
    });
  }
  tessera::Status st;
  auto keep = [&st](tessera::Status s) {
    if (st.ok()) st = std::move(s);
  };
  if (mode == "rank0-only") {
    const char* rank = std::getenv("TESSERA_RANK");
    if (rank == nullptr || std::string(rank) == "0") keep(tessera::save_array(W, out + "/W.tarr"));
  } else {
    keep(tessera::save_array(W, out + "/W.tarr"));
    keep(tessera::save_array_text(W, out + "/W.txt"));
    keep(tessera::save_array(H, out + "/H.tarr"));
    keep(tessera::save_array_text(H, out + "/H.txt"));
    keep(tessera::save_array(user_count, out + "/user_count.tarr"));
    keep(tessera::save_array(item_bias, out + "/item_bias.tarr"));
    keep(tessera::save_array_text(item_bias, out + "/item_bias.txt"));
    keep(tessera::save_array(C, out + "/C.tarr"));
    keep(tessera::save_array(ratings, out + "/ratings.tarr"));
    keep(tessera::save_array_text(ratings, out + "/ratings.txt"));
    // Whole copies: the serial reads below keep them whole on every worker, so each worker
    // saves its own copy locally.
    auto W_whole = DistArray<float, 2>::dense(ctx, {users, 5});
    auto H_whole = DistArray<double, 2>::dense(ctx, {items, 3});
    tessera::parallel_for(W_whole, [&](const Key<2>& k, float& v) { v = W(k[0], k[1]); });
    tessera::parallel_for(H_whole, [&](const Key<2>& k, double& v) { v = H(k[0], k[1]); });
    std::printf("W(0, 0) %.9g H(0, 0) %.17g\n", W_whole(0, 0), H_whole(0, 0));
    const std::string whole = ".whole." + std::to_string(ctx.job().rank);
    keep(tessera::save_array(W_whole, out + "/W" + whole + ".tarr"));
    keep(tessera::save_array_text(W_whole, out + "/W" + whole + ".txt"));
    keep(tessera::save_array(H_whole, out + "/H" + whole + ".tarr"));
    keep(tessera::save_array_text(H_whole, out + "/H" + whole + ".txt"));
  }
  const std::string name = status_dir + "/status." + std::to_string(ctx.job().rank);
  if (std::FILE* f = std::fopen(name.c_str(), "w")) {
    std::fprintf(f, "%s\n", st.ok() ? "ok" : st.ToString().c_str());
    std::fclose(f);
  }
  if (!st.ok()) {
    std::fprintf(stderr, "partitioned_save: %s\n", st.ToString().c_str());
    return 1;
  }
  return 0;
}
