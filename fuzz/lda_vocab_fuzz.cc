// libFuzzer target: lda's --vocab reader (apps/lda/vocabulary.h). An input is the bytes of a
// vocabulary file. Any bytes are a vocabulary, so the reader must accept them, and:
//   - word n is line n of the file (lines split at '\n', a last line without one included) with
//     its trailing '\r's dropped, computed here independently of the reader;
//   - the words written one per line, as a saved model's vocab.txt is (lda --save-model), read
//     back to the same words (what `lda --vocab model/vocab.txt` and `corpus --vocab-in` read).
// A difference, a crash or a sanitizer report is a finding.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "lda/vocabulary.h"

namespace {

struct Harness {
  Harness() {
    char tmpl[] = "/tmp/tessera-lda-vocab-fuzz-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) std::abort();
    dir = tmpl;
  }
  ~Harness() { std::filesystem::remove_all(dir); }
  std::string Write(const std::string& name, std::string_view content) const {
    const std::string path = dir + "/" + name;
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(content.data(), static_cast<std::streamsize>(content.size()));
    return path;
  }
  std::string dir;
};

std::vector<std::string> ExpectedWords(std::string_view bytes) {
  std::vector<std::string> words;
  while (!bytes.empty()) {
    const size_t nl = bytes.find('\n');
    std::string_view line = bytes.substr(0, nl);
    while (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    words.emplace_back(line);
    bytes = nl == std::string_view::npos ? std::string_view() : bytes.substr(nl + 1);
  }
  return words;
}

[[noreturn]] void Finding(const char* what) {
  std::fprintf(stderr, "lda_vocab_fuzz: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Harness harness;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto words = lda::ReadVocabulary(harness.Write("vocab.txt", bytes));
  if (!words.ok()) Finding("a readable file was refused");
  if (*words != ExpectedWords(bytes)) Finding("the words are not the file's lines");
  std::string written;
  for (const std::string& w : *words) written += w + "\n";
  auto again = lda::ReadVocabulary(harness.Write("model-vocab.txt", written));
  if (!again.ok() || *again != *words) Finding("the vocabulary written and read back differs");
  return 0;
}
