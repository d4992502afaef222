// From plain text (one document per line) to a UCI bag-of-words corpus: tokenizing, a vocabulary
// built with the usual filters (or a fixed one), and the docword + vocab files lda reads.
//
//   corpus::Options options;
//   options.stop_words = corpus::EnglishStopWords();
//   auto built = corpus::Build("docs.txt", options);       // Result<Corpus>
//   corpus::Write(*built, "docword.txt", "vocab.txt");
//
// Thread safety: reentrant.
#ifndef TESSERA_APPS_CORPUS_TEXT_CORPUS_H_
#define TESSERA_APPS_CORPUS_TEXT_CORPUS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "tessera/common/status.h"

namespace corpus {

struct Options {
  bool lowercase = true;                       // Default: ASCII letters lower-cased
  int min_length = 2;                          // Default: 2; shorter tokens are dropped
  bool keep_numbers = false;                   // Default: tokens without a letter are dropped
  std::unordered_set<std::string> stop_words;  // compared after lower-casing
  int64_t min_df = 1;                          // Default: 1; words in fewer documents are dropped
  double max_df = 1.0;  // Default: 1.0; words in more than this fraction of documents too
  // A fixed vocabulary (word n on line n): words outside it are dropped and the filters above
  // except tokenizing are not applied, so that new documents get a model's wordIDs. Default: none.
  std::vector<std::string> fixed_vocab;
};

// Tokens of one line: maximal runs of ASCII letters, digits, '_' and '\'' and of bytes >= 0x80
// (UTF-8 text stays whole), with apostrophes trimmed from both ends.
std::vector<std::string> Tokenize(std::string_view line, bool lowercase);

// About 170 common English words (the usual stop list of topic-model tools).
std::unordered_set<std::string> EnglishStopWords();

struct Corpus {
  std::vector<std::string> vocab;  // wordID n (1-based) is vocab[n - 1]; alphabetical unless fixed
  // Per document (line n of the input is docID n), its (wordID, count) pairs by wordID.
  std::vector<std::vector<std::pair<int64_t, int32_t>>> docs;
  int64_t tokens = 0;          // kept
  int64_t dropped_tokens = 0;  // stop words, too short, filtered by document frequency, unknown
};

// Reads `path` (plain or gzip-compressed). Errors: NotFound, DataLoss (read error),
// InvalidArgument (no documents, or no word left after the filters).
tessera::Result<Corpus> Build(const std::string& path, const Options& options);

// The lines of a word list (a vocabulary, word n on line n, or stop words), the trailing '\r's
// (CRLF line endings) dropped from each. Errors: NotFound (cannot open), DataLoss (read error).
tessera::Result<std::vector<std::string>> ReadWordList(const std::string& path);

// Writes the UCI docword file (D, W, NNZ header lines, then "docID wordID count") and the vocab
// file (one word per line; skipped when `vocab_path` is empty), each through a temporary file
// renamed into place.
tessera::Status Write(const Corpus& corpus, const std::string& docword_path,
                      const std::string& vocab_path);

}  // namespace corpus

#endif  // TESSERA_APPS_CORPUS_TEXT_CORPUS_H_
