#include "vocabulary.h"

#include <fmt/format.h>

#include <filesystem>

#include "corpus/text_corpus.h"

namespace lda {

tessera::Result<std::vector<std::string>> ReadVocabulary(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return tessera::Status::InvalidArgument(fmt::format("--vocab '{}' is a directory", path));
  }
  auto words = corpus::ReadWordList(path);
  if (!words.ok()) {
    return tessera::Status(words.status().code(),
                           fmt::format("the vocabulary --vocab: {}", words.status().message()));
  }
  return words;
}

}  // namespace lda
