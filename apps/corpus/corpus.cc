// corpus: plain text, one document per line, to the UCI bag-of-words files lda reads.
//
//   corpus --text docs.txt --docword docword.txt --vocab vocab.txt --english-stop-words --min-df 2
//   lda --docword docword.txt --vocab vocab.txt --topics 50 --save-model model/
//   corpus --text new.txt --docword new-docword.txt --vocab-in model/vocab.txt
//   lda --load-model model/ --infer new-docword.txt --out theta.txt
//
// Line n of --text is docID n (an empty or fully filtered line stays a document without words).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <string>

#include "common/app_io.h"
#include "corpus/text_corpus.h"
#include "tessera/version.h"

namespace {

tessera::Result<std::vector<std::string>> ReadLines(const std::string& path) {
  if (tessera::Status s = tessera::apps::CheckInputFile(path); !s.ok()) return s;
  return corpus::ReadWordList(path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Plain text (one document per line) to a UCI bag-of-words corpus (docword + vocab)"};
  app.set_version_flag("--version", std::string("corpus ") + tessera::kVersion);
  app.option_defaults()->always_capture_default();
  std::string text_path, docword_path, vocab_path, vocab_in, stop_words_path;
  bool english = false, keep_case = false;
  corpus::Options options;
  app.add_option("--text", text_path, "input: one document per line (plain or gzip)")->required();
  app.add_option("--docword", docword_path, "output: the UCI docword file")->required();
  app.add_option(
      "--vocab", vocab_path,
      "output: the vocabulary, one word per line (default: none; required unless --vocab-in)");
  app.add_option("--vocab-in", vocab_in,
                 "use this vocabulary (one word per line, e.g. a saved lda model's vocab.txt) "
                 "instead of building one: other words are dropped (default: none)");
  app.add_flag("--keep-case", keep_case, "do not lower-case ASCII letters");
  app.add_option("--stop-words", stop_words_path,
                 "drop the words of this file, one per line (default: none)");
  app.add_flag("--english-stop-words", english, "drop about 170 common English words");
  app.add_option("--min-length", options.min_length, "drop tokens shorter than this")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_flag("--keep-numbers", options.keep_numbers, "keep tokens without a letter");
  app.add_option("--min-df", options.min_df, "drop words found in fewer documents than this")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-df", options.max_df,
                 "drop words found in more than this fraction of the documents")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  CLI11_PARSE(app, argc, argv);
  options.lowercase = !keep_case;
  if (vocab_path.empty() == vocab_in.empty()) {
    fmt::print(stderr, "corpus: give --vocab FILE (to build a vocabulary) or --vocab-in FILE\n");
    return 2;
  }
  // Every path before any work.
  tessera::Status ready = tessera::apps::CheckInputFile(text_path);
  if (ready.ok()) ready = tessera::apps::CheckOutputFile(docword_path);
  if (ready.ok() && !vocab_path.empty()) ready = tessera::apps::CheckOutputFile(vocab_path);
  if (ready.ok() && english) options.stop_words = corpus::EnglishStopWords();
  if (ready.ok() && !stop_words_path.empty()) {
    auto words = ReadLines(stop_words_path);
    if (words.ok()) {
      for (std::string& w : *words) {
        if (options.lowercase) {
          for (char& c : w) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
        }
        options.stop_words.insert(w);
      }
    } else {
      ready = words.status();
    }
  }
  if (ready.ok() && !vocab_in.empty()) {
    auto words = ReadLines(vocab_in);
    if (words.ok() && words->empty()) {
      ready = tessera::Status::InvalidArgument(fmt::format("--vocab-in '{}' is empty", vocab_in));
    } else if (words.ok()) {
      options.fixed_vocab = std::move(words).value();
    } else {
      ready = words.status();
    }
  }
  if (!ready.ok()) {
    fmt::print(stderr, "corpus: {}\n", ready.ToString());
    return 1;
  }
  auto built = corpus::Build(text_path, options);
  if (!built.ok()) {
    fmt::print(stderr, "corpus: {}\n", built.status().ToString());
    return 1;
  }
  // With --vocab-in the vocabulary is the given one; the docword file is all that is written.
  const tessera::Status written = corpus::Write(*built, docword_path, vocab_path);
  if (!written.ok()) {
    fmt::print(stderr, "corpus: {}\n", written.ToString());
    return 1;
  }
  fmt::print("corpus: {} documents, {} words, {} tokens kept, {} dropped\n", built->docs.size(),
             built->vocab.size(), built->tokens, built->dropped_tokens);
  return 0;
}
