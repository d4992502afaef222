// Loads one input file with tessera's data loaders and writes a digest of what it built -- shapes,
// nnz, every key and value in storage order, the id maps -- to OUT.<rank>. Run alone it is the
// serial reference; under `tessera run -w W` every worker loads its byte range and the records are
// all-gathered, so every worker's digest must equal the serial one (load_test.cc).
//
//   load_check OUT triples PATH [TEST_PATH]   load_triples<float> (TEST_PATH: the held-out file)
//   load_check OUT docword PATH [MAX_DOCS]     load_docword
//
// OUT "-" writes no digest (for timing). Prints "load seconds S" and the mode to stdout; a load
// error goes to stderr and the exit code is 1.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <tessera/tessera.h>

namespace {

template <typename T>
void WriteArray(std::FILE* out, const char* name, const tessera::DistArray<T, 2>& a) {
  std::fprintf(out, "%s shape %" PRId64 " %" PRId64 " nnz %" PRId64 "\n", name, a.extent(0),
               a.extent(1), a.nnz());
  for (int64_t p = 0; p < a.nnz(); ++p) {
    const tessera::Key<2>& k = a.key_at(p);
    std::fprintf(out, "%" PRId64 " %" PRId64 " %.9g\n", k[0], k[1], static_cast<double>(a.value_at(p)));
  }
}

void WriteIds(std::FILE* out, const char* name, const tessera::IdMap& ids) {
  std::fprintf(out, "%s %" PRId64 ":", name, ids.size());
  for (int64_t i = 0; i < ids.size(); ++i) std::fprintf(out, " %" PRId64, ids.external(i));
  std::fprintf(out, "\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    std::fprintf(stderr, "usage: %s OUT (triples PATH [TEST_PATH] | docword PATH [MAX_DOCS])\n",
                 argv[0]);
    return 2;
  }
  const std::string out_prefix = argv[1], kind = argv[2], path = argv[3];
  tessera::Context ctx(argc, argv);
  std::printf("mode %s workers %d\n",
              ctx.mode() == tessera::ExecutionMode::kDistributed ? "distributed" : "serial",
              ctx.job().num_workers);
  std::FILE* out = nullptr;
  if (out_prefix != "-") {
    const std::string name = out_prefix + "." + std::to_string(ctx.job().rank);
    out = std::fopen(name.c_str(), "w");
    if (out == nullptr) {
      std::perror(name.c_str());
      return 2;
    }
  }
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  if (kind == "triples") {
    tessera::TripleOptions options;
    if (argc == 5) options.test_path = argv[4];
    auto data = tessera::load_triples<float>(ctx, path, options);
    if (!data.ok()) {
      std::fprintf(stderr, "load failed: %s\n", data.status().ToString().c_str());
      return 1;
    }
    std::printf("load seconds %.3f\n", seconds());
    if (out != nullptr) {
      WriteArray(out, "train", data->train);
      WriteArray(out, "test", data->test);
      WriteIds(out, "users", data->users);
      WriteIds(out, "items", data->items);
    }
  } else if (kind == "docword") {
    tessera::DocwordOptions options;
    if (argc == 5) options.max_docs = std::atoll(argv[4]);
    auto corpus = tessera::load_docword(ctx, path, options);
    if (!corpus.ok()) {
      std::fprintf(stderr, "load failed: %s\n", corpus.status().ToString().c_str());
      return 1;
    }
    std::printf("load seconds %.3f\n", seconds());
    if (out != nullptr) {
      std::fprintf(out, "docs %" PRId64 " vocab %" PRId64 " tokens %" PRId64 "\n", corpus->num_docs,
                   corpus->vocab_size, corpus->num_tokens);
      WriteArray(out, "counts", corpus->counts);
    }
  } else {
    std::fprintf(stderr, "unknown kind '%s'\n", kind.c_str());
    return 2;
  }
  if (out != nullptr && std::fclose(out) != 0) {
    std::perror("closing the digest");
    return 2;
  }
  std::fflush(stdout);
  return 0;
}
