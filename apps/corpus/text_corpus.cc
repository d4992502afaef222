#include "corpus/text_corpus.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <unordered_map>

#include "tessera/common/line_file.h"

namespace corpus {
namespace {

using tessera::Result;
using tessera::Status;

bool WordByte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '\'' || c >= 0x80;
}

bool HasLetter(const std::string& t) {
  return std::any_of(t.begin(), t.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
  });
}

Status WriteFile(const std::string& path, const std::function<void(std::FILE*)>& fill) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return Status::InvalidArgument(
        fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  }
  fill(f);
  const bool ok = std::ferror(f) == 0;
  if (std::fclose(f) != 0 || !ok) {
    std::remove(tmp.c_str());
    return Status::DataLoss(fmt::format("writing '{}' failed", path));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::InvalidArgument(fmt::format("cannot rename '{}' to '{}'", tmp, path));
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::string> Tokenize(std::string_view line, bool lowercase) {
  std::vector<std::string> tokens;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && !WordByte(static_cast<unsigned char>(line[i]))) ++i;
    size_t j = i;
    while (j < line.size() && WordByte(static_cast<unsigned char>(line[j]))) ++j;
    size_t b = i, e = j;
    while (b < e && line[b] == '\'') ++b;
    while (e > b && line[e - 1] == '\'') --e;
    if (e > b) {
      std::string t(line.substr(b, e - b));
      if (lowercase) {
        for (char& c : t) {
          if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        }
      }
      tokens.push_back(std::move(t));
    }
    i = j;
  }
  return tokens;
}

std::unordered_set<std::string> EnglishStopWords() {
  return {"a",         "about",     "above",      "after",   "again",   "against",   "all",
          "am",        "an",        "and",        "any",     "are",     "aren't",    "as",
          "at",        "be",        "because",    "been",    "before",  "being",     "below",
          "between",   "both",      "but",        "by",      "can",     "can't",     "cannot",
          "could",     "couldn't",  "did",        "didn't",  "do",      "does",      "doesn't",
          "doing",     "don't",     "down",       "during",  "each",    "few",       "for",
          "from",      "further",   "had",        "hadn't",  "has",     "hasn't",    "have",
          "haven't",   "having",    "he",         "he'd",    "he'll",   "he's",      "her",
          "here",      "here's",    "hers",       "herself", "him",     "himself",   "his",
          "how",       "how's",     "i",          "i'd",     "i'll",    "i'm",       "i've",
          "if",        "in",        "into",       "is",      "isn't",   "it",        "it's",
          "its",       "itself",    "let's",      "me",      "more",    "most",      "mustn't",
          "my",        "myself",    "no",         "nor",     "not",     "of",        "off",
          "on",        "once",      "only",       "or",      "other",   "ought",     "our",
          "ours",      "ourselves", "out",        "over",    "own",     "same",      "shan't",
          "she",       "she'd",     "she'll",     "she's",   "should",  "shouldn't", "so",
          "some",      "such",      "than",       "that",    "that's",  "the",       "their",
          "theirs",    "them",      "themselves", "then",    "there",   "there's",   "these",
          "they",      "they'd",    "they'll",    "they're", "they've", "this",      "those",
          "through",   "to",        "too",        "under",   "until",   "up",        "very",
          "was",       "wasn't",    "we",         "we'd",    "we'll",   "we're",     "we've",
          "were",      "weren't",   "what",       "what's",  "when",    "when's",    "where",
          "where's",   "which",     "while",      "who",     "who's",   "whom",      "why",
          "why's",     "will",      "with",       "won't",   "would",   "wouldn't",  "you",
          "you'd",     "you'll",    "you're",     "you've",  "your",    "yours",     "yourself",
          "yourselves"};
}

Result<Corpus> Build(const std::string& path, const Options& options) {
  const bool fixed = !options.fixed_vocab.empty();
  // Words get provisional ids in order of first sight; the final ids come after filtering.
  std::unordered_map<std::string, int64_t> id;
  std::vector<int64_t> df;  // documents containing the word, by provisional id
  if (fixed) {
    // Line n is wordID n; a repeated word keeps its first line.
    for (size_t n = 0; n < options.fixed_vocab.size(); ++n) {
      id.emplace(options.fixed_vocab[n], static_cast<int64_t>(n));
    }
    df.assign(options.fixed_vocab.size(), 0);
  }
  Corpus c;
  std::unordered_map<int64_t, int32_t> counts;
  TESSERA_RETURN_IF_ERROR(tessera::ForEachLine(path, [&](std::string_view line, int64_t) -> Status {
    counts.clear();
    for (std::string& t : Tokenize(line, options.lowercase)) {
      const bool keep = fixed ? true
                              : static_cast<int>(t.size()) >= options.min_length &&
                                    (options.keep_numbers || HasLetter(t)) &&
                                    options.stop_words.count(t) == 0;
      if (!keep) {
        ++c.dropped_tokens;
        continue;
      }
      auto it = id.find(t);
      if (it == id.end()) {
        if (fixed) {
          ++c.dropped_tokens;
          continue;
        }
        it = id.emplace(std::move(t), static_cast<int64_t>(df.size())).first;
        df.push_back(0);
      }
      ++counts[it->second];
    }
    std::vector<std::pair<int64_t, int32_t>> doc(counts.begin(), counts.end());
    for (const auto& [w, n] : doc) ++df[static_cast<size_t>(w)];
    c.docs.push_back(std::move(doc));
    return Status::Ok();
  }));
  if (c.docs.empty()) return Status::InvalidArgument(fmt::format("'{}' holds no documents", path));
  // Final ids: the fixed vocabulary's, or the surviving words in alphabetical order.
  std::vector<int64_t> final_id(df.size(), -1);
  if (fixed) {
    c.vocab = options.fixed_vocab;
    for (size_t w = 0; w < df.size(); ++w) final_id[w] = static_cast<int64_t>(w) + 1;
  } else {
    const double max_docs = options.max_df * static_cast<double>(c.docs.size());
    std::vector<std::pair<const std::string*, int64_t>> kept;
    for (const auto& [word, w] : id) {
      const int64_t n = df[static_cast<size_t>(w)];
      if (n >= options.min_df && static_cast<double>(n) <= max_docs) kept.emplace_back(&word, w);
    }
    std::sort(kept.begin(), kept.end(),
              [](const auto& a, const auto& b) { return *a.first < *b.first; });
    for (size_t n = 0; n < kept.size(); ++n) {
      c.vocab.push_back(*kept[n].first);
      final_id[static_cast<size_t>(kept[n].second)] = static_cast<int64_t>(n) + 1;
    }
  }
  for (auto& doc : c.docs) {
    std::vector<std::pair<int64_t, int32_t>> out;
    for (const auto& [w, n] : doc) {
      const int64_t f = final_id[static_cast<size_t>(w)];
      if (f < 0) {
        c.dropped_tokens += n;
      } else {
        out.emplace_back(f, n);
        c.tokens += n;
      }
    }
    std::sort(out.begin(), out.end());
    doc = std::move(out);
  }
  if (c.tokens == 0) {
    return Status::InvalidArgument(fmt::format(
        "'{}': no word is left after tokenizing and filtering (stop words, --min-df, --max-df{})",
        path, fixed ? ", the fixed vocabulary" : ""));
  }
  return c;
}

Status Write(const Corpus& c, const std::string& docword_path, const std::string& vocab_path) {
  int64_t nnz = 0;
  for (const auto& doc : c.docs) nnz += static_cast<int64_t>(doc.size());
  TESSERA_RETURN_IF_ERROR(WriteFile(docword_path, [&](std::FILE* f) {
    fmt::print(f, "{}\n{}\n{}\n", c.docs.size(), c.vocab.size(), nnz);
    for (size_t d = 0; d < c.docs.size(); ++d) {
      for (const auto& [w, n] : c.docs[d]) fmt::print(f, "{} {} {}\n", d + 1, w, n);
    }
  }));
  if (vocab_path.empty()) return Status::Ok();
  return WriteFile(vocab_path, [&](std::FILE* f) {
    for (const std::string& w : c.vocab) fmt::print(f, "{}\n", w);
  });
}

tessera::Result<std::vector<std::string>> ReadWordList(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return tessera::Status::NotFound(
        fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  }
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    // Every trailing '\r', not one: a word then never ends in '\r', so written one per line and
    // read back it is the same word.
    while (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  if (in.bad()) return tessera::Status::DataLoss(fmt::format("reading '{}' failed", path));
  return lines;
}

}  // namespace corpus
