// A program whose docword counts only loops touch, so that a distributed job loads them
// partitioned by document (docs/runtime.md, "Partitioned data"). Its loops read the entries by
// document (the layout of the load) and, with `byword`, also by word (the entries move) and
// whole (a copy into a dense array). With `tokens` it loads the corpus as tokens
// (DocwordOptions::tokens) and runs them by document, reading their own document's row too
// (and with `tokensnext` the next document's). The digest it writes to OUT.<rank> must be
// the same on every worker, in a serial run and with every record on every worker
// (partitioned_docword_test.cc).
//
//   partitioned_docword OUT DOCWORD (bydoc|byword|tokens|tokensnext)
#include <tessera/tessera.h>

#include <cinttypes>
#include <cstdio>
#include <string>

using tessera::DistArray;
using tessera::Key;

namespace {

// A per-entry hash of (doc, word, count), 0-based ids as stored: summed over the entries it is a
// checksum of the file's entries that a lost or doubled entry changes (partitioned_docword_test
// computes the same from the file).
double EntryHash(int64_t doc, int64_t word, int32_t count) {
  uint64_t h = static_cast<uint64_t>(doc) * 1000003u + static_cast<uint64_t>(word) * 7919u +
               static_cast<uint64_t>(count);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 32;
  return static_cast<double>(h % 1000003u);
}

// The same for a token (doc, word, j).
double TokenHash(int64_t doc, int64_t word, int64_t j) {
  return EntryHash(doc, word, static_cast<int32_t>(j + 1));
}

// `tokens` mode: the corpus as tokens, touched only by a loop by document (and its shape).
int RunTokens(tessera::Context& ctx, const std::string& out_prefix, const std::string& path,
              bool next) {
  tessera::DocwordOptions read;
  read.tokens = true;
  auto loaded = tessera::load_docword(ctx, path, read);
  if (!loaded.ok()) {
    std::fprintf(stderr, "load failed: %s\n", loaded.status().ToString().c_str());
    return 1;
  }
  DistArray<int64_t, 3>& tokens = loaded->tokens;
  const int64_t docs = tokens.extent(0), words = tokens.extent(1);
  auto by_doc = DistArray<int64_t, 1>::dense(ctx, {docs});
  tessera::Accumulator<double> checksum(ctx), count(ctx);
  tessera::parallel_for(tokens, [&](const Key<3>& k, int64_t& v) {
    // Order-sensitive: key order within a document, j counting its tokens from 0.
    by_doc(k[0]) = (by_doc(k[0]) * 3 + (k[1] + 1) * (k[2] + 1)) % 1000000007;
    checksum += TokenHash(k[0], k[1], k[2]);
    count += 1;
    v = k[2];  // writes stay on the token's holder
  });
  tessera::Accumulator<double> written(ctx);
  tessera::parallel_for(tokens, [&](const Key<3>& k, int64_t& v) { written += v == k[2] ? 1 : 0; });
  // Each token reads its own document's row by name (the tokens stay split: a row is on one
  // worker and in one block) and writes its own element.
  tessera::parallel_for(tokens, [&](const Key<3>& k, int64_t& v) {
    int64_t sum = 0;
    for (auto [key, value] : tokens.sparse_row(k[0])) sum += (key[1] + 1) * (value + 1);
    v = sum + k[2];
  });
  // `tokensnext`: each document's first token reads the next document's row, which may be on
  // another worker, so the tokens are gathered whole first (once: they stay whole).
  auto next_row = DistArray<int64_t, 1>::dense(ctx, {docs});
  if (next) tessera::parallel_for(tokens, [&](const Key<3>& k, int64_t&) {
    if (k[2] != 0 || k[0] + 1 >= docs) return;
    int64_t sum = 0;
    for (auto [key, value] : tokens.sparse_row(k[0] + 1)) sum += key[2] * value % 1000003;
    next_row(k[0]) = sum;
  });
  tessera::Accumulator<double> rows(ctx);
  tessera::parallel_for(tokens, [&](const Key<3>& k, int64_t& v) {
    rows += static_cast<double>((v % 1000003) * (k[0] + 1) % 1000003);
  });
  const std::string name = out_prefix + "." + std::to_string(ctx.job().rank);
  std::FILE* out = std::fopen(name.c_str(), "w");
  if (out == nullptr) {
    std::perror(name.c_str());
    return 2;
  }
  std::fprintf(out, "docs %" PRId64 " words %" PRId64 " longest %" PRId64 " tokens %" PRId64
               " counted %.17g written %.17g checksum %.17g\n",
               docs, words, loaded->max_doc_length, loaded->num_tokens, count.value(),
               written.value(), checksum.value());
  std::fprintf(out, "rows %.17g\n", rows.value());
  for (int64_t d = 0; next && d < docs; ++d) {
    std::fprintf(out, "next %" PRId64 " %" PRId64 "\n", d, next_row(d));
  }
  for (int64_t d = 0; d < docs; ++d) std::fprintf(out, "doc %" PRId64 " %" PRId64 "\n", d, by_doc(d));
  std::fclose(out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s OUT DOCWORD (bydoc|byword|tokens|tokensnext)\n", argv[0]);
    return 2;
  }
  tessera::Context ctx(argc, argv);
  const std::string mode = argv[3];
  if (mode == "tokens" || mode == "tokensnext") {
    return RunTokens(ctx, argv[1], argv[2], mode == "tokensnext");
  }
  auto loaded = tessera::load_docword(ctx, argv[2]);
  if (!loaded.ok()) {
    std::fprintf(stderr, "load failed: %s\n", loaded.status().ToString().c_str());
    return 1;
  }
  DistArray<int32_t, 2>& counts = loaded->counts;
  const int64_t docs = counts.extent(0), words = counts.extent(1);

  // By document: each worker runs the entries it holds, in file order.
  auto by_doc = DistArray<int64_t, 1>::dense(ctx, {docs});
  auto last_word = DistArray<int64_t, 1>::filled(ctx, {docs}, -1);
  tessera::Accumulator<double> checksum(ctx), entries(ctx);
  tessera::parallel_for(counts, [&](const Key<2>& k, int32_t& c) {
    // Order-sensitive: file order within a document.
    by_doc(k[0]) = (by_doc(k[0]) * 3 + c) % 1000000007;
    last_word(k[0]) = k[1];
    checksum += EntryHash(k[0], k[1], c);
    entries += 1;
  });
  auto by_word = DistArray<int64_t, 1>::dense(ctx, {words});
  const bool byword = std::string(argv[3]) == "byword";
  if (byword) {
    // By word: the entries move to the workers of their words; then whole, into a dense copy.
    tessera::parallel_for(counts, [&](const Key<2>& k, int32_t& c) { by_word(k[1]) += c * (k[0] + 1); });
  }

  const std::string name = std::string(argv[1]) + "." + std::to_string(ctx.job().rank);
  std::FILE* out = std::fopen(name.c_str(), "w");
  if (out == nullptr) {
    std::perror(name.c_str());
    return 2;
  }
  std::fprintf(out, "docs %" PRId64 " words %" PRId64 " nnz %" PRId64 " tokens %" PRId64
               " entries %.17g checksum %.17g\n",
               docs, words, counts.nnz(), loaded->num_tokens, entries.value(), checksum.value());
  for (int64_t d = 0; d < docs; ++d) {
    std::fprintf(out, "doc %" PRId64 " %" PRId64 " %" PRId64 "\n", d, by_doc(d), last_word(d));
  }
  for (int64_t w = 0; byword && w < words; ++w) {
    std::fprintf(out, "word %" PRId64 " %" PRId64 "\n", w, by_word(w));
  }
  std::fclose(out);
  return 0;
}
