// libFuzzer target: the runtime's file parsers, given whatever a file may hold. An input is two
// frames (frames.h): the first byte of the first picks the parser, the second is the file's
// content, written to a file in a temporary directory and read back by:
//   0 load_triples<float> (ratings: tab, "::", csv or whitespace, detected)
//   1 load_triples<double> of a gzip file (the same formats, compressed)
//   2 load_docword (UCI bag-of-words)
//   3 load_array<float, 2> and 4 load_array<int64_t, 1> (docs/array-format.md)
//   5 ParseLoopSchedule (the schedule JSON tessc embeds, docs/schedule-json.md)
//   6 DecodeManifest (a checkpoint's manifest, runtime/src/checkpoint)
//   7 corpus::ReadWordList as a vocabulary (corpus --vocab-in): the corpus then built with it as
//     its fixed vocabulary, written, and its docword file read back by load_docword
//   8 corpus::Build of the file as text (one document per line, as corpus --text), written and
//     read back alike
// (checkpoint_fuzz covers a checkpoint's data files.)
// A parser may refuse the file with an error; a crash, a sanitizer report, or an allocation past
// libFuzzer's limit is a finding.
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "corpus/text_corpus.h"
#include "frames.h"
#include "schedule/loop_schedule.h"
#include "tessera/array_io.h"
#include "tessera/context.h"
#include "tessera/data.h"

namespace {

std::string Gzip(const std::string& text) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    std::abort();
  std::string out(deflateBound(&z, text.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string ArrayFileSeed() {
  tessera::Context ctx;
  auto a = tessera::DistArray<float, 2>::dense(ctx, {2, 3});
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) a(i, j) = static_cast<float>(i * 3 + j) * 0.5f;
  }
  const std::string path = std::filesystem::temp_directory_path() / "tessera-fuzz-seed.arr";
  if (!tessera::save_array(a, path).ok()) std::abort();
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  return bytes;
}

std::vector<std::vector<std::string>> Seeds() {
  const std::string ratings = "1\t10\t4\t881250949\n2\t10\t3\t881250950\n1\t20\t5\t881250951\n";
  const std::string csv = "userId,movieId,rating,timestamp\n1,10,4.0,9\n2,30,2.5,9\n";
  const std::string colons = "1::10::5::978300760\n1::11::3::978302109\n";
  const std::string docword = "3\n4\n4\n1 1 2\n1 3 1\n2 2 5\n3 4 1\n";
  tessera::internal::checkpoint::Manifest m;
  m.loop = 2;
  m.workers = 2;
  m.sites = {"apps/mf/mf.cc:118"};
  m.site_of_loop = {0, 0};
  m.accumulators = {{"ab"}, {"cd"}};
  m.arrays.push_back({.id = 1,
                      .element_bytes = 4,
                      .count = 6,
                      .rows = 2,
                      .sparse = false,
                      .files = {{.name = "a1.w0", .bytes = 24, .crc32 = 7, .ranges = {0, 6}}}});
  const std::string schedule =
      R"({"version": 1, "file": "/src/mf.cc", "line": 118, "column": 5, "function": "main",
  "space": {"array": "ratings", "rank": 2, "element_type": "float"},
  "strategy": "2d", "space_dim": 0, "time_dim": 1, "skew": null,
  "data_parallel": {"permitted": false}, "staleness": 0,
  "arrays": [{"name": "ratings", "placement": "local", "kind": "dist_array",
    "element_type": "float", "element_bytes": 4, "rank": 2, "array_dim": 0, "key_dim": 0,
    "halo": [0, 0], "read": true, "write": false, "additive_writes_only": false,
    "index_map": [0, 1], "accesses": []}],
  "dependences": [{"array": "W", "vector": [0, "*"], "lines": [125, 131]}],
  "cost": 64, "conservative": []})";
  const std::string vocab = "apple\nbanana\r\ncherry\n\ndate";
  const std::string text = "An apple, a banana.\nThe cherry's date\n\n\xc3\xa9t\xc3\xa9 apple\n";
  return {{"\x00", ratings},       {"\x00", csv},      {"\x00", colons},
          {"\x01", Gzip(ratings)}, {"\x02", docword},  {"\x03", ArrayFileSeed()},
          {"\x04", "garbage"},     {"\x05", schedule}, {"\x06", EncodeManifest(m)},
          {"\x07", vocab},         {"\x08", text},     {"\x08", Gzip(text)}};
}

struct Harness {
  Harness() {
    spdlog::set_level(spdlog::level::off);
    char tmpl[] = "/tmp/tessera-files-fuzz-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) std::abort();
    dir = tmpl;
  }
  ~Harness() { std::filesystem::remove_all(dir); }
  std::string Write(const std::string& name, const std::string& content) const {
    const std::string path = dir + "/" + name;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
    return path;
  }
  // Writes `built` and reads its docword file back, as lda would.
  void WriteAndReadBack(const corpus::Corpus& built) {
    const std::string docword = dir + "/corpus-docword.txt", vocab = dir + "/corpus-vocab.txt";
    if (corpus::Write(built, docword, vocab).ok()) (void)tessera::load_docword(ctx, docword);
  }
  std::string dir;
  tessera::Context ctx;
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tessera::fuzz::MaybeWriteSeeds(Seeds());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Harness harness;
  const std::vector<std::string> frames = tessera::fuzz::SplitFrames(data, size);
  if (frames.size() < 2 || frames[0].empty()) return 0;
  const std::string& content = frames[1];
  switch (static_cast<unsigned char>(frames[0][0]) % 9) {
    case 0:
      (void)tessera::load_triples<float>(harness.ctx, harness.Write("ratings.txt", content));
      break;
    case 1:
      (void)tessera::load_triples<double>(harness.ctx, harness.Write("ratings.gz", content));
      break;
    case 2:
      (void)tessera::load_docword(harness.ctx, harness.Write("docword.txt", content));
      break;
    case 3:
      (void)tessera::load_array<float, 2>(harness.ctx, harness.Write("a.arr", content));
      break;
    case 4:
      (void)tessera::load_array<int64_t, 1>(harness.ctx, harness.Write("b.arr", content));
      break;
    case 5:
      (void)tessera::internal::ParseLoopSchedule(content);
      break;
    case 6:
      (void)tessera::internal::checkpoint::DecodeManifest(content, "fuzz");
      break;
    case 7: {
      auto words = corpus::ReadWordList(harness.Write("vocab.txt", content));
      if (!words.ok() || words->empty()) break;
      corpus::Options options;
      options.fixed_vocab = std::move(words).value();
      auto built = corpus::Build(
          harness.Write("docs.txt", "apple banana\ncherry apple date\n\nunknown words\n"), options);
      if (built.ok()) harness.WriteAndReadBack(*built);
      break;
    }
    case 8: {
      corpus::Options options;
      options.stop_words = corpus::EnglishStopWords();
      auto built = corpus::Build(harness.Write("text.gz", content), options);
      if (built.ok()) harness.WriteAndReadBack(*built);
      break;
    }
  }
  return 0;
}
