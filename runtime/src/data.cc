#include "tessera/data.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include "internal/line_reader.h"

namespace tessera {
namespace {

using internal::LineReader;

constexpr int kMaxFields = 8;

struct Fields {
  std::string_view f[kMaxFields];
  int count = 0;  // may exceed kMaxFields (then only the first kMaxFields are kept)
};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool IsBlank(std::string_view s) { return Trim(s).empty(); }

void SplitOn(std::string_view line, std::string_view sep, bool trim, Fields* out) {
  out->count = 0;
  for (;;) {
    const size_t at = line.find(sep);
    std::string_view field = line.substr(0, at);
    if (out->count < kMaxFields) out->f[out->count] = trim ? Trim(field) : field;
    ++out->count;
    if (at == std::string_view::npos) return;
    line.remove_prefix(at + sep.size());
  }
}

void SplitWhitespace(std::string_view line, Fields* out) {
  out->count = 0;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size()) break;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (out->count < kMaxFields) out->f[out->count] = line.substr(i, j - i);
    ++out->count;
    i = j;
  }
}

bool ParseInt(std::string_view s, int64_t* v) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

bool ParseFinite(std::string_view s, double* v) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty() && std::isfinite(*v);
}

std::string Quote(std::string_view s) {
  constexpr size_t kMax = 60;
  return s.size() <= kMax ? fmt::format("'{}'", s) : fmt::format("'{}...'", s.substr(0, kMax));
}

const char* FormatName(TripleFormat f) {
  switch (f) {
    case TripleFormat::kTab: return "tab-separated";
    case TripleFormat::kDoubleColon: return "'::'-separated";
    case TripleFormat::kCsv: return "comma-separated";
    case TripleFormat::kWhitespace: return "whitespace-separated";
    case TripleFormat::kAuto: break;
  }
  return "auto";
}

TripleFormat Detect(std::string_view line) {
  if (line.find("::") != std::string_view::npos) return TripleFormat::kDoubleColon;
  if (line.find('\t') != std::string_view::npos) return TripleFormat::kTab;
  if (line.find(',') != std::string_view::npos) return TripleFormat::kCsv;
  return TripleFormat::kWhitespace;
}

void Split(TripleFormat f, std::string_view line, Fields* out) {
  switch (f) {
    case TripleFormat::kTab: SplitOn(line, "\t", /*trim=*/false, out); return;
    case TripleFormat::kDoubleColon: SplitOn(line, "::", /*trim=*/true, out); return;
    case TripleFormat::kCsv: SplitOn(line, ",", /*trim=*/true, out); return;
    case TripleFormat::kWhitespace:
    case TripleFormat::kAuto: SplitWhitespace(line, out); return;
  }
}

struct Rating {
  int64_t user;
  int64_t item;
  double value;
};

// Parses one ratings file (or its range) into `out`.
Status ReadRatings(const std::string& path, TripleFormat format, ReadRange range,
                   std::vector<Rating>* out) {
  // A CSV header is only ever on the file's first line; read it from there even for a range.
  auto opened = LineReader::Open(path, range);
  if (!opened.ok()) return opened.status();
  LineReader& reader = opened.value();
  std::string_view line;
  Fields fields;
  bool first = true;
  while (reader.Next(&line)) {
    if (IsBlank(line)) continue;
    if (format == TripleFormat::kAuto) format = Detect(line);
    Split(format, line, &fields);
    if (first && reader.from_start() && format == TripleFormat::kCsv) {
      first = false;
      int64_t ignored;
      bool numeric = false;
      for (int i = 0; i < std::min(fields.count, kMaxFields); ++i) {
        numeric |= ParseInt(fields.f[i], &ignored);
      }
      if (!numeric) continue;  // "userId,movieId,rating,timestamp": a header, not data
    }
    first = false;
    if (fields.count < 3 || fields.count > 4) {
      return Status::InvalidArgument(fmt::format(
          "{}: expected 3 or 4 {} fields (user, item, rating[, timestamp]), found {}: {}",
          reader.Where(), FormatName(format), fields.count, Quote(line)));
    }
    Rating r;
    if (!ParseInt(fields.f[0], &r.user)) {
      return Status::InvalidArgument(fmt::format("{}: user id {} is not an integer",
                                                 reader.Where(), Quote(fields.f[0])));
    }
    if (!ParseInt(fields.f[1], &r.item)) {
      return Status::InvalidArgument(fmt::format("{}: item id {} is not an integer",
                                                 reader.Where(), Quote(fields.f[1])));
    }
    if (!ParseFinite(fields.f[2], &r.value)) {
      return Status::InvalidArgument(fmt::format("{}: rating {} is not a finite number",
                                                 reader.Where(), Quote(fields.f[2])));
    }
    if (fields.count == 4) {
      int64_t ts;
      if (!ParseInt(fields.f[3], &ts)) {
        return Status::InvalidArgument(fmt::format("{}: timestamp {} is not an integer",
                                                   reader.Where(), Quote(fields.f[3])));
      }
    }
    out->push_back(r);
  }
  return Status::Ok();
}

bool HeldOut(const Rating& r, double fraction, uint64_t seed) {
  if (fraction <= 0) return false;
  uint64_t state = seed ^ (static_cast<uint64_t>(r.user) * 0x9E3779B97F4A7C15ULL) ^
                   (static_cast<uint64_t>(r.item) * 0xC2B2AE3D27D4EB4FULL);
  const uint64_t h = internal::SplitMix64(state);
  return static_cast<double>(h >> 11) * 0x1.0p-53 < fraction;
}

template <typename T>
Status InsertAll(const std::string& path, const std::vector<Rating>& ratings, const IdMap& users,
                 const IdMap& items, DistArray<T, 2>& into) {
  into.reserve(into.nnz() + static_cast<int64_t>(ratings.size()));
  // Duplicates are found by sorting the keys afterwards: much faster than keeping the sparse
  // array's hash index up to date on multi-million-rating files.
  std::vector<int64_t> linear;
  linear.reserve(ratings.size());
  const int64_t num_items = into.extent(1);
  for (const Rating& r : ratings) {
    const Key<2> k{{users.index(r.user), items.index(r.item)}};
    linear.push_back(k[0] * num_items + k[1]);
    into.append_unchecked(k, static_cast<T>(r.value));
  }
  std::sort(linear.begin(), linear.end());
  const auto dup = std::adjacent_find(linear.begin(), linear.end());
  if (dup != linear.end()) {
    return Status::InvalidArgument(fmt::format("{}: user {} rated item {} more than once", path,
                                               users.external(*dup / num_items),
                                               items.external(*dup % num_items)));
  }
  return Status::Ok();
}

}  // namespace

IdMap::IdMap(std::vector<int64_t> ids) : external_(std::move(ids)) {
  std::sort(external_.begin(), external_.end());
  external_.erase(std::unique(external_.begin(), external_.end()), external_.end());
  index_.reserve(external_.size());
  for (size_t i = 0; i < external_.size(); ++i) index_.emplace(external_[i], static_cast<int64_t>(i));
}

int64_t IdMap::index(int64_t external_id) const {
  auto it = index_.find(external_id);
  return it == index_.end() ? -1 : it->second;
}

template <typename T>
Result<TripleData<T>> load_triples(Context& ctx, const std::string& path,
                                   const TripleOptions& options) {
  if (!(options.test_fraction >= 0 && options.test_fraction < 1)) {
    return Status::InvalidArgument(
        fmt::format("test_fraction must be in [0, 1), got {}", options.test_fraction));
  }
  if (options.test_fraction > 0 && !options.test_path.empty()) {
    return Status::InvalidArgument("give either test_fraction or test_path, not both");
  }
  std::vector<Rating> train;
  std::vector<Rating> test;
  TESSERA_RETURN_IF_ERROR(ReadRatings(path, options.format, options.range, &train));
  // An empty file is an error; an empty share of one (a range holding no line start) is not.
  const bool whole_file = options.range.begin == 0 && options.range.end < 0;
  if (train.empty() && whole_file) return Status::InvalidArgument(fmt::format("{}: no ratings", path));
  if (!options.test_path.empty()) {
    TESSERA_RETURN_IF_ERROR(ReadRatings(options.test_path, options.format, ReadRange{}, &test));
  } else if (options.test_fraction > 0) {
    std::vector<Rating> kept;
    kept.reserve(train.size());
    for (const Rating& r : train) {
      (HeldOut(r, options.test_fraction, options.split_seed) ? test : kept).push_back(r);
    }
    train.swap(kept);
  }

  std::vector<int64_t> user_ids, item_ids;
  user_ids.reserve(train.size() + test.size());
  item_ids.reserve(train.size() + test.size());
  for (const auto* set : {&train, &test}) {
    for (const Rating& r : *set) {
      user_ids.push_back(r.user);
      item_ids.push_back(r.item);
    }
  }
  TripleData<T> data;
  data.users = IdMap(std::move(user_ids));
  data.items = IdMap(std::move(item_ids));
  const std::array<int64_t, 2> shape{data.users.size(), data.items.size()};
  data.train = DistArray<T, 2>::sparse(ctx, shape);
  data.test = DistArray<T, 2>::sparse(ctx, shape);
  TESSERA_RETURN_IF_ERROR(InsertAll(path, train, data.users, data.items, data.train));
  TESSERA_RETURN_IF_ERROR(InsertAll(options.test_path.empty() ? path : options.test_path, test,
                                    data.users, data.items, data.test));
  return data;
}

template Result<TripleData<float>> load_triples<float>(Context&, const std::string&,
                                                       const TripleOptions&);
template Result<TripleData<double>> load_triples<double>(Context&, const std::string&,
                                                         const TripleOptions&);

Result<Corpus> load_docword(Context& ctx, const std::string& path, const DocwordOptions& options) {
  if (options.max_docs < 0) return Status::InvalidArgument("max_docs must be >= 0");
  // The header, always from the start of the file; its three short lines start within the
  // first bytes.
  auto head = internal::LineReader::Open(path, ReadRange{0, 256});
  if (!head.ok()) return head.status();
  int64_t header[3];
  const char* names[3] = {"D (number of documents)", "W (vocabulary size)",
                          "NNZ (number of entries)"};
  std::string_view line;
  for (int i = 0; i < 3; ++i) {
    if (!head->Next(&line)) {
      return Status::InvalidArgument(
          fmt::format("{}: missing header line {}, {}", path, i + 1, names[i]));
    }
    if (!ParseInt(Trim(line), &header[i]) || header[i] < (i == 2 ? 0 : 1)) {
      return Status::InvalidArgument(
          fmt::format("{}: header line should be {}, a positive integer; found {}", head->Where(),
                      names[i], Quote(line)));
    }
  }
  const int64_t header_bytes = head->offset();
  const bool whole = options.range.begin <= header_bytes && options.range.end < 0;
  ReadRange range = options.range;
  range.begin = std::max(range.begin, header_bytes);
  if (range.end >= 0 && range.end < range.begin) range.end = range.begin;  // only header bytes
  auto opened = internal::LineReader::Open(path, range, whole ? /*first_line=*/4 : 0);
  if (!opened.ok()) return opened.status();
  internal::LineReader& reader = opened.value();

  const int64_t D = header[0], W = header[1], nnz = header[2];
  const int64_t keep_docs = options.max_docs > 0 ? std::min(D, options.max_docs) : D;
  Corpus corpus;
  corpus.num_docs = keep_docs;
  corpus.vocab_size = W;
  corpus.counts = DistArray<int32_t, 2>::sparse(ctx, {keep_docs, W});
  corpus.counts.reserve(options.max_docs > 0 ? nnz * keep_docs / D + 1 : nnz);
  // (doc, word) of every entry, to find duplicates by sorting afterwards: several times faster
  // than a hash set on million-entry corpora.
  std::vector<std::pair<int64_t, int64_t>> seen;  // (linear key, entry number)
  seen.reserve(static_cast<size_t>(nnz));
  int64_t entries = 0;
  Fields fields;
  while (reader.Next(&line)) {
    if (IsBlank(line)) continue;
    SplitWhitespace(line, &fields);
    if (fields.count != 3) {
      return Status::InvalidArgument(fmt::format("{}: expected 3 fields (docID wordID count), found {}: {}",
                                                 reader.Where(), fields.count, Quote(line)));
    }
    int64_t v[3];
    const char* what[3] = {"docID", "wordID", "count"};
    for (int i = 0; i < 3; ++i) {
      if (!ParseInt(fields.f[i], &v[i])) {
        return Status::InvalidArgument(fmt::format("{}: {} {} is not an integer", reader.Where(),
                                                   what[i], Quote(fields.f[i])));
      }
    }
    if (v[0] < 1 || v[0] > D) {
      return Status::InvalidArgument(
          fmt::format("{}: docID {} outside [1, {}] (D in the header)", reader.Where(), v[0], D));
    }
    if (v[1] < 1 || v[1] > W) {
      return Status::InvalidArgument(
          fmt::format("{}: wordID {} outside [1, {}] (W in the header)", reader.Where(), v[1], W));
    }
    if (v[2] < 1 || v[2] > INT32_MAX) {
      return Status::InvalidArgument(fmt::format("{}: count {} must be in [1, 2^31)", reader.Where(), v[2]));
    }
    seen.emplace_back((v[0] - 1) * W + (v[1] - 1), entries);
    ++entries;
    if (v[0] > keep_docs) continue;
    corpus.counts.append_unchecked({{v[0] - 1, v[1] - 1}}, static_cast<int32_t>(v[2]));
    corpus.num_tokens += v[2];
  }
  std::sort(seen.begin(), seen.end());
  const auto dup = std::adjacent_find(seen.begin(), seen.end(),
                                      [](const auto& a, const auto& b) { return a.first == b.first; });
  if (dup != seen.end()) {
    // Rare: re-read to name the line of the second occurrence.
    const int64_t target = std::max(dup->second, std::next(dup)->second);
    auto again = internal::LineReader::Open(path, range, whole ? 4 : 0);
    std::string where = path;
    int64_t n = 0;
    while (again.ok() && again->Next(&line)) {
      if (IsBlank(line)) continue;
      if (n++ == target) {
        where = again->Where();
        break;
      }
    }
    return Status::InvalidArgument(fmt::format("{}: (docID {}, wordID {}) appears twice", where,
                                               dup->first / W + 1, dup->first % W + 1));
  }
  if (whole && entries != nnz) {
    return Status::DataLoss(fmt::format("{}: the header promises NNZ = {} entries, the file has {}",
                                        path, nnz, entries));
  }
  return corpus;
}

}  // namespace tessera
