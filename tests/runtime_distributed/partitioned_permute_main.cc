// DistArray::permuted end to end (docs/runtime.md, "Permuted arrays"). Each mode makes the other
// order of a sparse array and runs loops over it; the digest it writes to OUT.<rank> (and the
// array it saves to OUT.tarr) must be the same on every worker and in a serial run
// (partitioned_permute_test.cc).
//
//   partitioned_permute OUT tokens DOCWORD [nosave]
//                                             tokens loaded partitioned by document, permuted
//                                             to (word, doc, j); only loops touch both orders
//                                             (nosave: the word order is not saved, for memory
//                                             measurements, bench/README.md)
//   partitioned_permute OUT serialuse DOCWORD the same, but serial code reads the word order,
//                                             which must then be whole on every worker
//   partitioned_permute OUT whole             an array serial code builds (whole), permuted
//                                             into arrays only loops touch
//   partitioned_permute OUT assign DOCWORD    tokens and their word order hand each other their
//                                             values (assign_permuted) between sweeps that read
//                                             their own rows, as LDA's sampler does; prints the
//                                             bytes one value exchange sent ("assign bytes N")
#include <tessera/tessera.h>

#include <array>
#include <cinttypes>
#include <cstdio>
#include <string>

#include "element_hash.h"

using tessera::DistArray;
using tessera::Key;
using tessera::testing::ElementHash;

namespace {

std::FILE* OpenOut(tessera::Context& ctx, const std::string& prefix) {
  const std::string name = prefix + "." + std::to_string(ctx.job().rank);
  std::FILE* out = std::fopen(name.c_str(), "w");
  if (out == nullptr) std::perror(name.c_str());
  return out;
}

// What the loops over a rank-3 array found: an element count, a checksum and, per key[0] row, an
// order-sensitive digest of the row's keys and values (by_row). Loops must name the arrays they
// run over where those are declared (tessc binds them by their origin), so each caller runs its
// own loop and passes what it found.
int Write(tessera::Context& ctx, const std::string& prefix, const char* what,
          const std::array<int64_t, 3>& shape, int64_t nnz, double count, double checksum,
          const DistArray<int64_t, 1>& by_row) {
  std::FILE* out = OpenOut(ctx, prefix + "." + what);
  if (out == nullptr) return 2;
  std::fprintf(out,
               "shape %" PRId64 " %" PRId64 " %" PRId64 " nnz %" PRId64
               " counted %.17g checksum %.17g\n",
               shape[0], shape[1], shape[2], nnz, count, checksum);
  for (int64_t r = 0; r < shape[0]; ++r)
    std::fprintf(out, "row %" PRId64 " %" PRId64 "\n", r, by_row.get({{r}}));
  std::fclose(out);
  return 0;
}

int Saved(const tessera::Status& s) {
  if (s.ok()) return 0;
  std::fprintf(stderr, "save failed: %s\n", s.ToString().c_str());
  return 1;
}

tessera::DocwordOptions AsTokens() {
  tessera::DocwordOptions read;
  read.tokens = true;
  return read;
}

int RunTokens(tessera::Context& ctx, const std::string& prefix, const std::string& path,
              bool save) {
  // Called here: the loader's call is the tokens' origin, which tessc binds.
  auto loaded = tessera::load_docword(ctx, path, AsTokens());
  if (!loaded.ok()) {
    std::fprintf(stderr, "load failed: %s\n", loaded.status().ToString().c_str());
    return 1;
  }
  DistArray<int64_t, 3>& tokens = loaded->tokens;
  // Values that tell the tokens apart, written where the tokens are held.
  tessera::parallel_for(tokens, [&](const Key<3>& k, int64_t& v) { v = k[0] * 7 + k[2]; });
  auto tokens_w = tokens.permuted({1, 0, 2});
  auto by_word = DistArray<int64_t, 1>::dense(ctx, {tokens_w.extent(0)});
  tessera::Accumulator<double> checksum_w(ctx), count_w(ctx);
  tessera::parallel_for(tokens_w, [&](const Key<3>& k, int64_t& v) {
    by_word(k[0]) = (by_word(k[0]) * 3 + (k[1] + 1) * (k[2] + 1) + v) % 1000000007;
    checksum_w += ElementHash(k[0], k[1], k[2], v);
    count_w += 1;
  });
  // The source is still there, in its own order.
  auto by_doc = DistArray<int64_t, 1>::dense(ctx, {tokens.extent(0)});
  tessera::Accumulator<double> checksum_d(ctx), count_d(ctx);
  tessera::parallel_for(tokens, [&](const Key<3>& k, int64_t& v) {
    by_doc(k[0]) = (by_doc(k[0]) * 3 + (k[1] + 1) * (k[2] + 1) + v) % 1000000007;
    checksum_d += ElementHash(k[0], k[1], k[2], v);
    count_d += 1;
  });
  int rc = save ? Saved(tessera::save_array(tokens_w, prefix + ".w.tarr")) : 0;
  if (rc == 0) {
    rc = Write(ctx, prefix, "w", tokens_w.shape(), tokens_w.nnz(), count_w.value(),
               checksum_w.value(), by_word);
  }
  if (rc == 0) {
    rc = Write(ctx, prefix, "d", tokens.shape(), tokens.nnz(), count_d.value(), checksum_d.value(),
               by_doc);
  }
  return rc;
}

int RunAssign(tessera::Context& ctx, const std::string& prefix, const std::string& path) {
  // Called here: the loader's call is the tokens' origin, which tessc binds.
  auto loaded = tessera::load_docword(ctx, path, AsTokens());
  if (!loaded.ok()) {
    std::fprintf(stderr, "load failed: %s\n", loaded.status().ToString().c_str());
    return 1;
  }
  DistArray<int64_t, 3>& tokens = loaded->tokens;
  tessera::parallel_for(tokens, [&](const Key<3>& k, int64_t& v) { v = k[0] * 7 + k[2]; });
  auto tokens_w = tokens.permuted({1, 0, 2});
  uint64_t one_exchange = 0;
  for (int sweep = 0; sweep < 3; ++sweep) {
    const uint64_t before = ctx.traffic().permuted;
    tokens_w.assign_permuted(tokens, {1, 0, 2});
    if (sweep == 2) one_exchange = ctx.traffic().permuted - before;
    // Each token's new value depends on its word's row as the document sweep left it, and on
    // its place in the row, so a value put in the wrong element shows in every digest after.
    tessera::parallel_for(tokens_w, [&](const Key<3>& k, int64_t& v) {
      const auto row = tokens_w.sparse_row(k[0]);
      v = (v * 31 + row.value(0) + row.size() * (sweep + 1) + k[1]) % 1000000007;
    });
    tokens.assign_permuted(tokens_w, {1, 0, 2});
    tessera::parallel_for(tokens, [&](const Key<3>& k, int64_t& v) {
      const auto row = tokens.sparse_row(k[0]);
      v = (v * 17 + row.value(row.size() - 1) + k[1] * (sweep + 2)) % 1000000007;
    });
  }
  tokens_w.assign_permuted(tokens, {1, 0, 2});
  std::printf("assign bytes %" PRIu64 "\n", one_exchange);
  auto by_word = DistArray<int64_t, 1>::dense(ctx, {tokens_w.extent(0)});
  tessera::Accumulator<double> checksum_w(ctx), count_w(ctx);
  tessera::parallel_for(tokens_w, [&](const Key<3>& k, int64_t& v) {
    by_word(k[0]) = (by_word(k[0]) * 3 + (k[1] + 1) * (k[2] + 1) + v) % 1000000007;
    checksum_w += ElementHash(k[0], k[1], k[2], v);
    count_w += 1;
  });
  auto by_doc = DistArray<int64_t, 1>::dense(ctx, {tokens.extent(0)});
  tessera::Accumulator<double> checksum_d(ctx), count_d(ctx);
  tessera::parallel_for(tokens, [&](const Key<3>& k, int64_t& v) {
    by_doc(k[0]) = (by_doc(k[0]) * 3 + (k[1] + 1) * (k[2] + 1) + v) % 1000000007;
    checksum_d += ElementHash(k[0], k[1], k[2], v);
    count_d += 1;
  });
  int rc = Write(ctx, prefix, "w", tokens_w.shape(), tokens_w.nnz(), count_w.value(),
                 checksum_w.value(), by_word);
  if (rc == 0) {
    rc = Write(ctx, prefix, "d", tokens.shape(), tokens.nnz(), count_d.value(), checksum_d.value(),
               by_doc);
  }
  return rc;
}

int RunSerialUse(tessera::Context& ctx, const std::string& prefix, const std::string& path) {
  // Called here: the loader's call is the tokens' origin, which tessc binds.
  auto loaded = tessera::load_docword(ctx, path, AsTokens());
  if (!loaded.ok()) {
    std::fprintf(stderr, "load failed: %s\n", loaded.status().ToString().c_str());
    return 1;
  }
  DistArray<int64_t, 3>& tokens = loaded->tokens;
  tessera::parallel_for(tokens, [&](const Key<3>& k, int64_t& v) { v = k[0] * 7 + k[2]; });
  auto tokens_w = tokens.permuted({1, 0, 2});
  // Serial code reads the elements by position: the word order must be whole on every worker.
  double first = 0;
  for (int64_t p = 0; p < tokens_w.nnz() && p < 3; ++p)
    first += static_cast<double>(tokens_w.value_at(p));
  std::printf("first values %.17g\n", first);
  auto by_word = DistArray<int64_t, 1>::dense(ctx, {tokens_w.extent(0)});
  tessera::Accumulator<double> checksum_w(ctx), count_w(ctx);
  tessera::parallel_for(tokens_w, [&](const Key<3>& k, int64_t& v) {
    by_word(k[0]) = (by_word(k[0]) * 3 + (k[1] + 1) * (k[2] + 1) + v) % 1000000007;
    checksum_w += ElementHash(k[0], k[1], k[2], v);
    count_w += 1;
  });
  // Whole on every worker, so each saves it itself: to a file of its own.
  const std::string rank = ctx.job().rank == 0 ? "" : "." + std::to_string(ctx.job().rank);
  int rc = Saved(tessera::save_array(tokens_w, prefix + ".w.tarr" + rank));
  if (rc == 0) {
    rc = Write(ctx, prefix, "w", tokens_w.shape(), tokens_w.nnz(), count_w.value(),
               checksum_w.value(), by_word);
  }
  return rc;
}

int RunWhole(tessera::Context& ctx, const std::string& prefix) {
  // Built element by element in serial code: whole on every worker.
  auto a = DistArray<int64_t, 3>::sparse(ctx, {40, 3, 5});
  for (int64_t i = 0; i < 40; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      for (int64_t k = (i + j) % 2; k < 5; k += 1 + (i % 3))
        a.insert({{i, j, k}}, i * 100 + j * 10 + k);
    }
  }
  a.shuffle(5);
  // Key[0] of by_j is a's key[1] (3 values): at -w 4 a worker holds none of it.
  auto by_j = a.permuted({1, 2, 0});
  auto by_k = a.permuted({2, 0, 1});
  auto rows_j = DistArray<int64_t, 1>::dense(ctx, {by_j.extent(0)});
  tessera::Accumulator<double> checksum_j(ctx), count_j(ctx);
  tessera::parallel_for(by_j, [&](const Key<3>& k, int64_t& v) {
    rows_j(k[0]) = (rows_j(k[0]) * 3 + (k[1] + 1) * (k[2] + 1) + v) % 1000000007;
    checksum_j += ElementHash(k[0], k[1], k[2], v);
    count_j += 1;
  });
  auto rows_k = DistArray<int64_t, 1>::dense(ctx, {by_k.extent(0)});
  tessera::Accumulator<double> checksum_k(ctx), count_k(ctx);
  tessera::parallel_for(by_k, [&](const Key<3>& k, int64_t& v) {
    rows_k(k[0]) = (rows_k(k[0]) * 3 + (k[1] + 1) * (k[2] + 1) + v) % 1000000007;
    checksum_k += ElementHash(k[0], k[1], k[2], v);
    count_k += 1;
  });
  int rc = Saved(tessera::save_array(by_j, prefix + ".j.tarr"));
  if (rc == 0) rc = Saved(tessera::save_array(by_k, prefix + ".k.tarr"));
  if (rc == 0) {
    rc = Write(ctx, prefix, "j", by_j.shape(), by_j.nnz(), count_j.value(), checksum_j.value(),
               rows_j);
  }
  if (rc == 0) {
    rc = Write(ctx, prefix, "k", by_k.shape(), by_k.nnz(), count_k.value(), checksum_k.value(),
               rows_k);
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT (tokens|serialuse|assign|whole) [DOCWORD [nosave]]\n", argv[0]);
    return 2;
  }
  tessera::Context ctx(argc, argv);
  const std::string mode = argv[2];
  if (mode == "whole") return RunWhole(ctx, argv[1]);
  if (argc != 4 && !(argc == 5 && std::string(argv[4]) == "nosave")) return 2;
  if (mode == "serialuse") return RunSerialUse(ctx, argv[1], argv[3]);
  if (mode == "assign") return RunAssign(ctx, argv[1], argv[3]);
  return RunTokens(ctx, argv[1], argv[3], /*save=*/argc == 4);
}
