// The runtime_parallel kernels as one SPMD program: run alone it is the serial reference; under
// `tessera run -w W` every worker runs it with the distributed executor. Each process writes one
// line per kernel -- name, element count, FNV-1a hash of the values -- to OUT.<rank>, so a test
// compares every worker's results with the serial run's exactly.
#include <tessera/tessera.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "kernels.h"

namespace {

uint64_t Fnv1a(const std::vector<int64_t>& values) {
  uint64_t h = 1469598103934665603ULL;
  for (int64_t v : values) {
    for (int b = 0; b < 8; ++b) {
      h ^= static_cast<uint64_t>(v >> (8 * b)) & 0xff;
      h *= 1099511628211ULL;
    }
  }
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_PREFIX\n", argv[0]);
    return 2;
  }
  tessera::Context ctx(argc, argv);
  std::ofstream out(std::string(argv[1]) + "." + std::to_string(ctx.job().rank));
  auto emit = [&out](const char* name, const tessera::testing::KernelRun& run) {
    out << name << " " << run.values.size() << " " << Fnv1a(run.values) << "\n";
  };
  using namespace tessera::testing;
  emit("row_scaling", RowScaling(ctx, 37, 29));
  emit("column_recurrence", ColumnRecurrence(ctx, 41, 23));
  emit("sparse_row_fold", SparseRowFold(ctx, 53, 47, 900));
  emit("sparse_row_fold_reshuffled", SparseRowFoldReshuffled(ctx, 31, 37, 500, 3));
  emit("matrix_update_2d", MatrixUpdate2D(ctx, 61, 43, 1200));
  emit("wavefront", Wavefront(ctx, 24));
  emit("skewed_wavefront", SkewedWavefront(ctx, 21));
  emit("data_parallel_sums", DataParallelSums(ctx, 40, 16, /*lock_free=*/false));
  emit("permuted_sweeps", PermutedSweeps(ctx, 37, 41, 2));
  emit("shared_total", SharedTotal(ctx, 300));  // tessc runs it serially: whole on every worker

  // A write at an offset from the key (tessc's halo): a block of keys [a, b] writes [a+1, b+1].
  {
    auto src = tessera::DistArray<int64_t, 1>::random(ctx, {999}, 11, 0, 100);
    auto shifted = tessera::DistArray<int64_t, 1>::dense(ctx, {1000});
    tessera::parallel_for(
        src, [&](const tessera::Key<1>& key, int64_t& x) { shifted(key[0] + 1) = 3 * x + 1; });
    out << "halo_write " << shifted.size() << " "
        << Fnv1a(std::vector<int64_t>(shifted.data(), shifted.data() + shifted.size())) << "\n";
  }

  // A sparse space whose every element the body rewrites, run again and again (the executor then
  // sends each worker's positions whole instead of comparing with a snapshot), then a run that
  // changes only a few elements: the result must still be the serial one.
  {
    auto tokens = tessera::DistArray<int64_t, 2>::sparse(ctx, {300, 7});
    for (int64_t i = 0; i < 300; ++i) {
      for (int64_t j = i % 3; j < 7; j += 2) tokens.append_unchecked({{i, j}}, i * 7 + j);
    }
    for (int64_t round = 0; round < 4; ++round) {
      tessera::parallel_for(tokens, [&](const tessera::Key<2>& key, int64_t& x) {
        if (round < 3 || key[0] % 50 == 0) x = x * 31 + key[1] + round;
      });
    }
    std::vector<int64_t> values;
    for (int64_t p = 0; p < tokens.size(); ++p) values.push_back(tokens.value_at(p));
    out << "rewritten_sparse " << values.size() << " " << Fnv1a(values) << "\n";
  }

  // Count tables that a 2d loop keeps partitioned (one by rows of the space, one rotating), then
  // each the iteration space of a loop of its own: every worker must first hold the rows of its
  // blocks of that loop, whatever the 2d loop left where.
  {
    auto entries = tessera::DistArray<int64_t, 2>::sparse(ctx, {90, 70});
    for (int64_t d = 0; d < 90; ++d) {
      for (int64_t w = d % 5; w < 70; w += 3 + d % 4) entries.append_unchecked({{d, w}}, d * w % 7);
    }
    auto by_doc = tessera::DistArray<int64_t, 2>::dense(ctx, {90, 4});
    auto by_word = tessera::DistArray<int64_t, 2>::dense(ctx, {70, 4});
    tessera::parallel_for(entries, [&](const tessera::Key<2>& key, int64_t& x) {
      by_doc(key[0], x % 4) += 1 + key[1];
      by_word(key[1], x % 4) += 1 + key[0];
    });
    tessera::Accumulator<int64_t> doc_sum(ctx), word_sum(ctx);
    tessera::parallel_for(by_doc, [&](const tessera::Key<2>& key, int64_t& n) {
      doc_sum += n * (key[0] * 4 + key[1] + 1);
    });
    tessera::parallel_for(by_word, [&](const tessera::Key<2>& key, int64_t& n) {
      word_sum += n * (key[0] * 4 + key[1] + 1);
    });
    // Rewritten where each row is held, then read by code outside loops.
    tessera::parallel_for(by_doc, [&](const tessera::Key<2>& key, int64_t& n) {
      n = 2 * n + key[1];
    });
    const int64_t read = by_doc(0, 1) + by_doc(45, 2) + by_doc(89, 3);
    out << "tables_after_2d 3 " << Fnv1a({doc_sum.value(), word_sum.value(), read}) << "\n";
  }

  // Data-parallel additive updates of shared arrays (on the parameter servers when distributed)
  // add up exactly once every worker's updates are in; a worker with several threads runs such
  // a loop on one of them (no lock_free), so none is lost there either.
  {
    auto samples = tessera::DistArray<int64_t, 1>::random(ctx, {5000}, 10, 0, 1000);
    auto hits = tessera::DistArray<int64_t, 1>::dense(ctx, {17});
    auto weight = tessera::DistArray<double, 2>::dense(ctx, {17, 3});
    auto counted = tessera::RelaxedArray<int64_t, 1>::dense(ctx, {5});  // atomic adds: exact
    for (int epoch = 0; epoch < 2; ++epoch) {
      tessera::parallel_for(
          samples,
          [&](const tessera::Key<1>&, int64_t& v) {
            hits(v % 17) += 1;
            weight(v % 17, v % 3) += 0.5;
            counted.add(v % 5, v);
          },
          tessera::DataParallel{.staleness = 1});
    }
    std::vector<int64_t> relaxed;
    for (int64_t i = 0; i < 5; ++i) relaxed.push_back(counted(i));
    out << "data_parallel_relaxed " << relaxed.size() << " " << Fnv1a(relaxed) << "\n";
    std::vector<int64_t> all(hits.data(), hits.data() + 17);
    for (int64_t i = 0; i < 17 * 3; ++i) all.push_back(static_cast<int64_t>(weight.data()[i] * 2));
    out << "data_parallel_shared " << all.size() << " " << Fnv1a(all) << "\n";
  }

  // An accumulator summed over the workers, read after the loop; additions outside the loop
  // count once.
  auto v = tessera::DistArray<int64_t, 1>::random(ctx, {1000}, 9, 0, 100);
  tessera::Accumulator<int64_t> total(ctx, 7);
  std::atomic<int64_t> ran_here{0};  // not program state: how many iterations this process ran
  tessera::parallel_for(v, [&](const tessera::Key<1>& key, int64_t& x) {
    total += x * (key[0] % 3);
    ran_here.fetch_add(1, std::memory_order_relaxed);
  });
  total += 5;
  out << "accumulator 1 " << total.value() << "\n";
  std::ofstream(std::string(argv[1]) + ".share." + std::to_string(ctx.job().rank))
      << ran_here.load() << "\n";
  return out.good() ? 0 : 1;
}
