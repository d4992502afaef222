#include "tessera/data.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <optional>
#include <string_view>
#include <system_error>
#include <type_traits>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "input/line_reader.h"
#include "input/load_share.h"
#include "input/rating_formats.h"
#include "input/rating_records.h"
#include "input/text_fields.h"
#include "input/timestamp.h"

namespace tessera {
namespace {

using internal::DocwordEntry;
using internal::DocwordShare;
using internal::LineReader;
using internal::LoadSplit;
using internal::RatingShare;
using Rating = internal::RatingRecord;

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

using internal::ParseFinite;
using internal::ParseInt;
using internal::Quote;

const char* FormatName(TripleFormat f) {
  switch (f) {
    case TripleFormat::kTab: return "tab-separated";
    case TripleFormat::kDoubleColon: return "'::'-separated";
    case TripleFormat::kCsv: return "comma-separated";
    case TripleFormat::kWhitespace: return "whitespace-separated";
    case TripleFormat::kNetflix: return "Netflix";
    case TripleFormat::kAuto: break;
  }
  return "auto";
}

TripleFormat Detect(std::string_view line) {
  if (internal::IsNetflixHeader(line)) return TripleFormat::kNetflix;
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
    case TripleFormat::kNetflix:  // read by ReadNetflixRatings
    case TripleFormat::kAuto: SplitWhitespace(line, out); return;
  }
}

// Parses one ratings file (or its range) into `out`.
Status ReadRatings(const std::string& path, TripleFormat format, ReadRange range,
                   const internal::IdParse& ids, std::vector<Rating>* out) {
  if (format == TripleFormat::kNetflix) return internal::ReadNetflixRatings(path, range, ids, out);
  // A CSV header is only ever on the file's first line; read it from there even for a range.
  auto opened = LineReader::Open(path, range);
  if (!opened.ok()) return opened.status();
  LineReader& reader = opened.value();
  std::string_view line;
  Fields fields;
  bool first = true;
  // The general path is for anything but the common line (ParseRatingFast).
  bool fast = false;
  // Reserved once about 4096 lines were read, for all of the range.
  size_t lines = 0;
  constexpr size_t kLinesBeforeReserving = 4096;
  const int64_t range_end =
      range.end < 0 ? reader.file_size() : std::min(range.end, reader.file_size());
  const int64_t range_begin = reader.offset();
  while (reader.Next(&line)) {
    if (++lines == kLinesBeforeReserving && !ids.names_only) {
      out->reserve(out->size() + internal::EstimateRecords(range_end - range_begin,
                                                           reader.offset() - range_begin, lines));
    }
    if (fast) {
      Rating r;
      if (internal::ParseRatingFast(format, line, &r)) {
        out->push_back(r);
        continue;
      }
    }
    if (IsBlank(line)) continue;
    if (format == TripleFormat::kAuto) {
      format = Detect(line);
      if (format == TripleFormat::kNetflix) {
        return internal::ReadNetflixRatings(path, range, ids, out);
      }
    }
    Split(format, line, &fields);
    if (first && reader.from_start() && format == TripleFormat::kCsv) {
      first = false;
      // Any number (string ids leave only the rating and timestamp numeric: "A3S,B00,4.0").
      double ignored;
      bool numeric = false;
      for (int i = 0; i < std::min(fields.count, kMaxFields); ++i) {
        numeric |= ParseFinite(fields.f[i], &ignored);
      }
      if (!numeric) continue;  // "userId,movieId,rating,timestamp": a header, not data
    }
    first = false;
    fast = !ids.string_ids && !ids.names_only &&
           (format == TripleFormat::kWhitespace || format == TripleFormat::kTab ||
            format == TripleFormat::kCsv);
    if (fields.count < 3 || fields.count > 4) {
      return Status::InvalidArgument(fmt::format(
          "{}: expected 3 or 4 {} fields (user, item, rating[, timestamp]), found {}: {}",
          reader.Where(), FormatName(format), fields.count, Quote(line)));
    }
    Rating r;
    TESSERA_RETURN_IF_ERROR(internal::ParseId(fields.f[0], ids, /*user=*/true, reader, &r.user));
    TESSERA_RETURN_IF_ERROR(internal::ParseId(fields.f[1], ids, /*user=*/false, reader, &r.item));
    if (!ParseFinite(fields.f[2], &r.value)) {
      return Status::InvalidArgument(fmt::format("{}: rating {} is not a finite number",
                                                 reader.Where(), Quote(fields.f[2])));
    }
    if (fields.count == 4 && !internal::IsTimestamp(fields.f[3])) {
      return Status::InvalidArgument(fmt::format(
          "{}: timestamp {} is neither a number nor an ISO 8601 date (YYYY-MM-DD[THH:MM[:SS]])",
          reader.Where(), Quote(fields.f[3])));
    }
    if (!ids.names_only) out->push_back(r);
  }
  return reader.status();
}

// Reads worker split.rank's share of a ratings file. Under kAuto the format comes from the file's
// first non-blank line, as in a whole-file read (not from the share's first line).
Status ReadRatingsShare(const std::string& path, TripleFormat format, const LoadSplit& split,
                        const internal::IdParse& ids, std::vector<Rating>* out) {
  // A range that reads nothing, to learn the size (and open errors, worded as for a whole read).
  auto probe = LineReader::Open(path, ReadRange{0, 0});
  if (!probe.ok()) return probe.status();
  if (format == TripleFormat::kAuto && split.rank > 0) {
    auto head = LineReader::Open(path, ReadRange{0, 1 << 16});
    if (!head.ok()) return head.status();
    std::string_view line;
    while (format == TripleFormat::kAuto && head->Next(&line)) {
      if (!IsBlank(line)) format = Detect(line);
    }
  }
  return ReadRatings(path, format, internal::WorkerRange(probe->file_size(), split.rank,
                                                         split.num_workers),
                     ids, out);
}

// Concatenates every worker's share in rank order (file order); every worker gets the same result,
// including the same error. Replaces *share with the whole.
template <typename Share>
Status GatherShares(const LoadSplit& split, Share* share, std::vector<size_t>* ends = nullptr) {
  auto all = split.gather(internal::EncodeShare(*share));
  if (!all.ok()) return all.status();
  Share whole;
  for (const std::string& part : *all) {
    TESSERA_RETURN_IF_ERROR(internal::MergeShare(part, &whole));
    if constexpr (std::is_same_v<Share, DocwordShare>) {
      if (ends != nullptr) ends->push_back(whole.entries.size());
    }
  }
  *share = std::move(whole);
  return Status::Ok();
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool HeldOut(const Rating& r, double fraction, uint64_t seed) {
  if (fraction <= 0) return false;
  uint64_t state = seed ^ (static_cast<uint64_t>(r.user) * 0x9E3779B97F4A7C15ULL) ^
                   (static_cast<uint64_t>(r.item) * 0xC2B2AE3D27D4EB4FULL);
  const uint64_t h = internal::SplitMix64(state);
  return static_cast<double>(h >> 11) * 0x1.0p-53 < fraction;
}

// Moves the held-out fraction of `train` to `test`, keeping the order of both. The kept records
// move down in place: a second copy of the training records would be the load's largest buffer.
void HoldOut(const TripleOptions& options, std::vector<Rating>* train, std::vector<Rating>* test) {
  size_t kept = 0;
  for (const Rating& r : *train) {
    if (HeldOut(r, options.test_fraction, options.split_seed)) {
      test->push_back(r);
    } else {
      (*train)[kept++] = r;
    }
  }
  train->resize(kept);
}

// Whether the job keeps both arrays of a split load partitioned (input/load_share.h): tessc
// proved only loops touch them (an empty held-out array needs no proof).
bool KeepsPartitioned(const LoadSplit& split, const TripleOptions& options,
                      const std::source_location& loc) {
  if (!split.exchange || !split.keeps_partitioned) return false;
  internal::ArrayOrigin origin = internal::OriginOf(loc);
  origin.member = "train";
  if (!split.keeps_partitioned(origin)) return false;
  origin.member = "test";
  return split.keeps_partitioned(origin) ||
         (options.test_path.empty() && options.test_fraction == 0);
}

// The shortest entry line: "1 1 1\n".
constexpr int64_t kMinEntryBytes = 6;

struct DocwordHeader {
  int64_t docs = 0;     // D
  int64_t vocab = 0;    // W
  int64_t nnz = 0;      // NNZ
  int64_t bytes = 0;    // offset of the first entry line
  int64_t file_size = 0;
};

Status ReadDocwordHeader(const std::string& path, DocwordHeader* header) {
  // Always from the start of the file; its three short lines start within the first bytes.
  auto head = LineReader::Open(path, ReadRange{0, 256});
  if (!head.ok()) return head.status();
  int64_t values[3];
  const char* names[3] = {"D (number of documents)", "W (vocabulary size)",
                          "NNZ (number of entries)"};
  std::string_view line;
  for (int i = 0; i < 3; ++i) {
    if (!head->Next(&line)) {
      return Status::InvalidArgument(
          fmt::format("{}: missing header line {}, {}", path, i + 1, names[i]));
    }
    if (!ParseInt(Trim(line), &values[i]) || values[i] < (i == 2 ? 0 : 1)) {
      return Status::InvalidArgument(
          fmt::format("{}: header line should be {}, a positive integer; found {}", head->Where(),
                      names[i], Quote(line)));
    }
  }
  header->docs = values[0];
  header->vocab = values[1];
  header->nnz = values[2];
  header->bytes = head->offset();
  header->file_size = head->file_size();
  return Status::Ok();
}

// The entry lines of `range` (clipped to start after the header), and the 1-based line number of
// the first (0: unknown). `whole`: the range is all of the entry lines.
ReadRange EntryRange(const DocwordHeader& header, ReadRange range, bool whole,
                     int64_t* first_line) {
  range.begin = std::max(range.begin, header.bytes);
  if (range.end >= 0 && range.end < range.begin) range.end = range.begin;  // only header bytes
  *first_line = whole ? 4 : 0;
  return range;
}

// About how many entries `range` holds: NNZ times its fraction of the entry bytes.
size_t EstimateEntries(const DocwordHeader& header, ReadRange range) {
  const int64_t entry_bytes = std::max<int64_t>(header.file_size - header.bytes, 1);
  const int64_t end = range.end < 0 ? header.file_size : std::min(range.end, header.file_size);
  const int64_t bytes = std::max<int64_t>(end - range.begin, 0);
  const double fraction = static_cast<double>(bytes) / static_cast<double>(entry_bytes);
  // A quarter more than the bytes' share of the header's entries: lines are shorter where the ids
  // are (the first documents'), and a vector outgrowing its reservation holds two copies at once,
  // while reserved pages cost nothing until written. Never more than the bytes can hold, so that
  // a header claiming absurdly many entries is reported by the count check, not by bad_alloc.
  return static_cast<size_t>(std::min({static_cast<double>(header.nnz),
                                       1.25 * static_cast<double>(header.nnz) * fraction + 64,
                                       static_cast<double>(bytes / kMinEntryBytes + 64)}));
}

// Parses the entry lines of `range`, validating them against the header, and hands each entry to
// `add` in file order.
template <typename Add>
Status ReadDocwordEntries(const std::string& path, const DocwordHeader& header, ReadRange range,
                          int64_t first_line, Add&& add) {
  auto opened = LineReader::Open(path, range, first_line);
  if (!opened.ok()) return opened.status();
  LineReader& reader = opened.value();
  const int64_t D = header.docs, W = header.vocab;
  std::string_view line;
  Fields fields;
  while (reader.Next(&line)) {
    int64_t v[3];
    // The common line, three integers between blanks, without splitting it first (as
    // ParseRatingFast); anything else takes the general path, which reads it or names its error.
    const char* p = internal::SkipBlanks(line.data(), line.data() + line.size());
    const char* const end = line.data() + line.size();
    int i = 0;
    for (; i < 3; ++i) {
      const auto [next, ec] = std::from_chars(p, end, v[i]);
      if (ec != std::errc() || next == p) break;
      p = internal::SkipBlanks(next, end);
      if (i < 2 && (p == next || p == end)) break;
    }
    if (i == 3 && p == end && v[0] >= 1 && v[0] <= D && v[1] >= 1 && v[1] <= W && v[2] >= 1 &&
        v[2] <= INT32_MAX) {
      add(DocwordEntry{v[0], v[1], static_cast<int32_t>(v[2])});
      continue;
    }
    if (IsBlank(line)) continue;
    SplitWhitespace(line, &fields);
    if (fields.count != 3) {
      return Status::InvalidArgument(fmt::format("{}: expected 3 fields (docID wordID count), found {}: {}",
                                                 reader.Where(), fields.count, Quote(line)));
    }
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
    add(DocwordEntry{v[0], v[1], static_cast<int32_t>(v[2])});
  }
  return reader.status();
}

// Builds the corpus from the entries in file order, and keeps every entry's (doc, word) to find
// duplicates by sorting afterwards: several times faster than a hash set on million-entry corpora.
class CorpusBuilder {
 public:
  CorpusBuilder(Context& ctx, const DocwordHeader& header, int64_t max_docs,
                internal::ArrayOrigin origin)
      : vocab_(header.vocab),
        keep_docs_(max_docs > 0 ? std::min(header.docs, max_docs) : header.docs) {
    corpus_.num_docs = keep_docs_;
    corpus_.vocab_size = header.vocab;
    corpus_.counts = DistArray<int32_t, 2>::WithOrigin(ctx, {keep_docs_, header.vocab},
                                                       /*sparse=*/true, origin);
    // Sized by what the file can hold, not by what its header claims: a header claiming 1e11
    // entries is reported by the count check after the read, not by bad_alloc here.
    const int64_t plausible =
        std::min(header.nnz, (header.file_size - header.bytes) / kMinEntryBytes + 1);
    corpus_.counts.reserve(max_docs > 0 ? plausible * keep_docs_ / header.docs + 1 : plausible);
    seen_.reserve(static_cast<size_t>(plausible));
  }

  void Add(const DocwordEntry& e) {
    seen_.emplace_back((e.doc - 1) * vocab_ + (e.word - 1), entries_++);
    if (e.doc > keep_docs_) return;
    corpus_.counts.append_unchecked({{e.doc - 1, e.word - 1}}, e.count);
    corpus_.num_tokens += e.count;
  }

  int64_t entries() const { return entries_; }
  // Whether some (doc, word) came twice; then the 1-based ids and the entry number of the later.
  bool FindDuplicate(int64_t* doc, int64_t* word, int64_t* entry) {
    std::sort(seen_.begin(), seen_.end());
    const auto dup = std::adjacent_find(
        seen_.begin(), seen_.end(), [](const auto& a, const auto& b) { return a.first == b.first; });
    if (dup == seen_.end()) return false;
    *doc = dup->first / vocab_ + 1;
    *word = dup->first % vocab_ + 1;
    *entry = std::max(dup->second, std::next(dup)->second);
    return true;
  }
  Corpus Finish() { return std::move(corpus_); }

 private:
  const int64_t vocab_;
  const int64_t keep_docs_;
  Corpus corpus_;
  std::vector<std::pair<int64_t, int64_t>> seen_;  // (linear key, entry number)
  int64_t entries_ = 0;
};

// "path:LINE" or "path:byte N" of the index-th entry line of `range`; `path` if not found.
std::string EntryLocation(const std::string& path, ReadRange range, int64_t first_line,
                          int64_t index) {
  auto reader = LineReader::Open(path, range, first_line);
  std::string_view line;
  int64_t n = 0;
  while (reader.ok() && reader->Next(&line)) {
    if (IsBlank(line)) continue;
    if (n++ == index) return reader->Where();
  }
  return path;
}

// "path:LINE" or "path:byte N" of the second entry line for (doc, word) (1-based) in the
// ranges `range_of(0..workers-1)` read in turn, as a whole-file read names a duplicate; `path`
// if there is none.
template <typename RangeOf>
std::string SecondOccurrence(const std::string& path, int workers, RangeOf&& range_of, int64_t doc,
                             int64_t word) {
  int seen = 0;
  for (int rank = 0; rank < workers; ++rank) {
    int64_t first_line = 0;
    const ReadRange range = range_of(rank, &first_line);
    auto reader = LineReader::Open(path, range, first_line);
    if (!reader.ok()) return path;
    std::string_view line;
    Fields fields;
    while (reader->Next(&line)) {
      SplitWhitespace(line, &fields);
      int64_t d = 0, w = 0;
      if (fields.count != 3 || !ParseInt(fields.f[0], &d) || !ParseInt(fields.f[1], &w)) continue;
      if (d == doc && w == word && ++seen == 2) return reader->Where();
    }
  }
  return path;
}

}  // namespace

IdMap::IdMap(std::vector<int64_t> ids) : external_(std::move(ids)) {
  std::sort(external_.begin(), external_.end());
  external_.erase(std::unique(external_.begin(), external_.end()), external_.end());
  // Given every record's id, the vector would keep a slot per record for as long as the map lives.
  external_.shrink_to_fit();
  // Ids without gaps (1..n, 0..n-1: most data sets) need no hash index: index = id - first.
  if (external_.empty() ||
      static_cast<uint64_t>(external_.back()) - static_cast<uint64_t>(external_.front()) ==
          external_.size() - 1) {
    return;
  }
  index_.reserve(external_.size());
  for (size_t i = 0; i < external_.size(); ++i) index_.emplace(external_[i], static_cast<int64_t>(i));
}

int64_t IdMap::index(int64_t external_id) const {
  if (index_.empty()) {  // no gaps (or no ids)
    if (external_.empty() || external_id < external_.front() || external_id > external_.back()) {
      return -1;
    }
    return external_id - external_.front();
  }
  auto it = index_.find(external_id);
  return it == index_.end() ? -1 : it->second;
}

Result<IdNames> read_id_names(const std::string& path, const TripleOptions& options,
                              const IdMap& users, const IdMap& items) {
  std::unordered_map<int64_t, std::string> user_names;
  std::unordered_map<int64_t, std::string> item_names;
  const internal::IdParse ids{.string_ids = true,
                              .user_names = &user_names,
                              .item_names = &item_names,
                              .names_only = true};
  std::vector<Rating> none;
  TESSERA_RETURN_IF_ERROR(ReadRatings(path, options.format, ReadRange{}, ids, &none));
  if (!options.test_path.empty()) {
    TESSERA_RETURN_IF_ERROR(ReadRatings(options.test_path, options.format, ReadRange{}, ids, &none));
  }
  auto fill = [&path](const IdMap& map, std::unordered_map<int64_t, std::string>& found,
                      const char* what, std::vector<std::string>* out) {
    out->reserve(static_cast<size_t>(map.size()));
    for (int64_t i = 0; i < map.size(); ++i) {
      auto it = found.find(map.external(i));
      if (it == found.end()) {
        return Status::InvalidArgument(fmt::format(
            "{}: no {} id has the key {} of index {} (did the file change since it was loaded?)",
            path, what, map.external(i), i));
      }
      out->push_back(std::move(it->second));
    }
    return Status::Ok();
  };
  IdNames names;
  TESSERA_RETURN_IF_ERROR(fill(users, user_names, "user", &names.users));
  TESSERA_RETURN_IF_ERROR(fill(items, item_names, "item", &names.items));
  return names;
}

namespace internal {

template <typename T>
Result<TripleData<T>> LoadTriples(Context& ctx, const std::string& path,
                                  const TripleOptions& options, const LoadSplit* split,
                                  std::source_location loc) {
  if (!(options.test_fraction >= 0 && options.test_fraction < 1)) {
    return Status::InvalidArgument(
        fmt::format("test_fraction must be in [0, 1), got {}", options.test_fraction));
  }
  if (options.test_fraction > 0 && !options.test_path.empty()) {
    return Status::InvalidArgument("give either test_fraction or test_path, not both");
  }
  const auto start = std::chrono::steady_clock::now();
  // In a split load every worker reads its share of both files and takes part in the gather
  // whatever happened, so that all of them return the same result.
  RatingShare share;
  const internal::IdParse ids{.string_ids = options.string_ids};
  if (split == nullptr) {
    share.error = ReadRatings(path, options.format, options.range, ids, &share.train);
  } else {
    share.error = ReadRatingsShare(path, options.format, *split, ids, &share.train);
  }
  if (share.error.ok() && !options.test_path.empty()) {
    share.error =
        split == nullptr
            ? ReadRatings(options.test_path, options.format, ReadRange{}, ids, &share.test)
            : ReadRatingsShare(options.test_path, options.format, *split, ids, &share.test);
    share.error_in_test = true;
  }
  if (split != nullptr && KeepsPartitioned(*split, options, loc)) {
    if (share.error.ok() && options.test_path.empty() && options.test_fraction > 0) {
      HoldOut(options, &share.train, &share.test);
    }
    return internal::LoadTriplesPartitioned<T>(ctx, path, options, *split, std::move(share),
                                               OriginOf(loc));
  }
  if (split != nullptr) {
    const size_t parsed = share.train.size() + share.test.size();
    const double parse_seconds = SecondsSince(start);
    TESSERA_RETURN_IF_ERROR(GatherShares(*split, &share));
    if (share.error.ok()) {
      ctx.logger().info(
          "loaded {}: {} of {} records parsed by this worker (byte range {} of {}; parse {:.3f} s, "
          "exchange {:.3f} s)",
          path, parsed, share.train.size() + share.test.size(), split->rank, split->num_workers,
          parse_seconds, SecondsSince(start) - parse_seconds);
    }
  }
  std::vector<Rating>& train = share.train;
  std::vector<Rating>& test = share.test;
  if (!share.error.ok() && !share.error_in_test) return share.error;
  // An empty file is an error; an empty share of one (a range holding no line start) is not.
  const bool whole_file = split != nullptr || (options.range.begin == 0 && options.range.end < 0);
  if (train.empty() && whole_file) return Status::InvalidArgument(fmt::format("{}: no ratings", path));
  TESSERA_RETURN_IF_ERROR(share.error);
  if (options.test_path.empty() && options.test_fraction > 0) HoldOut(options, &train, &test);

  TripleData<T> data;
  data.users = IdMap(internal::DistinctIds({&train, &test}, /*users=*/true));
  data.items = IdMap(internal::DistinctIds({&train, &test}, /*users=*/false));
  const std::array<int64_t, 2> shape{data.users.size(), data.items.size()};
  ArrayOrigin origin = OriginOf(loc);
  origin.member = "train";
  data.train = DistArray<T, 2>::WithOrigin(ctx, shape, /*sparse=*/true, origin);
  origin.member = "test";
  data.test = DistArray<T, 2>::WithOrigin(ctx, shape, /*sparse=*/true, origin);
  internal::InsertRecords(&train, data.users, data.items, data.train);
  internal::InsertRecords(&test, data.users, data.items, data.test);
  TESSERA_RETURN_IF_ERROR(internal::CheckNoDuplicates(path, data.train, data.users, data.items));
  TESSERA_RETURN_IF_ERROR(internal::CheckNoDuplicates(
      options.test_path.empty() ? path : options.test_path, data.test, data.users, data.items));
  return data;
}

template Result<TripleData<float>> LoadTriples<float>(Context&, const std::string&,
                                                      const TripleOptions&, const LoadSplit*,
                                                      std::source_location);
template Result<TripleData<double>> LoadTriples<double>(Context&, const std::string&,
                                                        const TripleOptions&, const LoadSplit*,
                                                        std::source_location);

Result<Corpus> LoadDocword(Context& ctx, const std::string& path, const DocwordOptions& options,
                           const LoadSplit* split, std::source_location loc) {
  ArrayOrigin origin = OriginOf(loc);
  origin.member = "counts";
  if (options.max_docs < 0) return Status::InvalidArgument("max_docs must be >= 0");
  const auto start = std::chrono::steady_clock::now();
  DocwordHeader header;
  // This worker's range of entry lines; in a split load, worker r's.
  auto range_of = [&](int rank, int64_t* first_line) {
    if (split == nullptr) {
      const bool whole = options.range.begin <= header.bytes && options.range.end < 0;
      return EntryRange(header, options.range, whole, first_line);
    }
    const ReadRange r = EntryRange(
        header, WorkerRange(header.file_size, rank, split->num_workers), false, first_line);
    if (r.begin == header.bytes) *first_line = 4;  // it starts at the first entry line
    return r;
  };
  std::optional<CorpusBuilder> builder;
  std::vector<size_t> ends;  // split: entries up to the end of worker r's share, at r
  if (split == nullptr) {
    // Serial: entries go straight into the corpus as they are parsed.
    TESSERA_RETURN_IF_ERROR(ReadDocwordHeader(path, &header));
    builder.emplace(ctx, header, options.max_docs, origin);
    int64_t first_line = 0;
    const ReadRange range = range_of(0, &first_line);
    TESSERA_RETURN_IF_ERROR(ReadDocwordEntries(
        path, header, range, first_line, [&](const DocwordEntry& e) { builder->Add(e); }));
  } else {
    // Split: every worker parses its share and takes part in the gather whatever happened.
    DocwordShare share;
    share.error = ReadDocwordHeader(path, &header);
    if (share.error.ok()) {
      int64_t first_line = 0;
      const ReadRange range = range_of(split->rank, &first_line);
      share.entries.reserve(EstimateEntries(header, range));
      share.error = ReadDocwordEntries(path, header, range, first_line, [&](const DocwordEntry& e) {
        share.entries.push_back(e);
      });
    }
    // Only loops touch `counts` (or `tokens`, when those are asked for) and every document is
    // kept: each entry goes to one worker.
    ArrayOrigin kept = origin;
    if (options.tokens) kept.member = "tokens";
    if (split->exchange && split->keeps_partitioned && split->keeps_partitioned(kept) &&
        (options.max_docs == 0 || options.max_docs >= header.docs)) {
      return internal::LoadDocwordPartitioned(
          ctx, path, {header.docs, header.vocab, header.nnz}, *split, std::move(share), origin,
          options.tokens, [&](int64_t doc, int64_t word) {
            return SecondOccurrence(path, split->num_workers, range_of, doc, word);
          });
    }
    const size_t parsed = share.entries.size();
    const double parse_seconds = SecondsSince(start);
    TESSERA_RETURN_IF_ERROR(GatherShares(*split, &share, &ends));
    TESSERA_RETURN_IF_ERROR(share.error);
    ctx.logger().info(
        "loaded {}: {} of {} records parsed by this worker (byte range {} of {}; parse {:.3f} s, "
        "exchange {:.3f} s)",
        path, parsed, share.entries.size(), split->rank, split->num_workers, parse_seconds,
        SecondsSince(start) - parse_seconds);
    builder.emplace(ctx, header, options.max_docs, origin);
    for (const DocwordEntry& e : share.entries) builder->Add(e);
  }

  int64_t doc, word, target;
  if (builder->FindDuplicate(&doc, &word, &target)) {
    // Rare: re-read the range holding the later occurrence to name its line.
    int rank = 0;
    if (split != nullptr) {
      while (rank + 1 < static_cast<int>(ends.size()) &&
             static_cast<int64_t>(ends[static_cast<size_t>(rank)]) <= target) {
        ++rank;
      }
      if (rank > 0) target -= static_cast<int64_t>(ends[static_cast<size_t>(rank) - 1]);
    }
    int64_t first_line = 0;
    const ReadRange range = range_of(rank, &first_line);
    return Status::InvalidArgument(fmt::format("{}: (docID {}, wordID {}) appears twice",
                                               EntryLocation(path, range, first_line, target), doc,
                                               word));
  }
  const bool whole =
      split != nullptr || (options.range.begin <= header.bytes && options.range.end < 0);
  if (whole && builder->entries() != header.nnz) {
    return Status::DataLoss(fmt::format("{}: the header promises NNZ = {} entries, the file has {}",
                                        path, header.nnz, builder->entries()));
  }
  Corpus corpus = builder->Finish();
  builder.reset();  // its duplicate index goes before the tokens are built
  if (options.tokens) {
    int64_t largest = 0;
    Key<2> where{{0, 0}};
    for (int64_t p = 0; p < corpus.counts.nnz(); ++p) {
      if (corpus.counts.value_at(p) > largest) {
        largest = corpus.counts.value_at(p);
        where = corpus.counts.key_at(p);
      }
    }
    TESSERA_RETURN_IF_ERROR(internal::CheckTokensFit(
        path, static_cast<uint64_t>(corpus.num_tokens), 1,
        fmt::format("the largest, {}, is docID {} wordID {}", largest, where[0] + 1, where[1] + 1)));
    internal::ExpandTokens(ctx, &corpus, origin);
  }
  return corpus;
}

}  // namespace internal

namespace {

// Distributed loads split the file between the workers unless the caller chose a range.
bool SplitLoad(Context& ctx, const ReadRange& range, LoadSplit* split) {
  if (ctx.mode() != ExecutionMode::kDistributed || ctx.job().num_workers <= 1) return false;
  if (range.begin != 0 || range.end >= 0) return false;
  split->rank = ctx.job().rank;
  split->num_workers = ctx.job().num_workers;
  split->gather = [&ctx](std::string bytes) { return ctx.AllGather(std::move(bytes)); };
  split->exchange = [&ctx](std::vector<std::string> to_each) {
    return ctx.AllToAll(std::move(to_each));
  };
  split->keeps_partitioned = [&ctx](const internal::ArrayOrigin& origin) {
    return ctx.PartitionsLoadedArray(origin);
  };
  return true;
}

}  // namespace

template <typename T>
Result<TripleData<T>> load_triples(Context& ctx, const std::string& path,
                                   const TripleOptions& options, std::source_location loc) {
  LoadSplit split;
  return internal::LoadTriples<T>(ctx, path, options,
                                  SplitLoad(ctx, options.range, &split) ? &split : nullptr, loc);
}

template Result<TripleData<float>> load_triples<float>(Context&, const std::string&,
                                                       const TripleOptions&, std::source_location);
template Result<TripleData<double>> load_triples<double>(Context&, const std::string&,
                                                         const TripleOptions&,
                                                         std::source_location);

Result<Corpus> load_docword(Context& ctx, const std::string& path, const DocwordOptions& options,
                            std::source_location loc) {
  LoadSplit split;
  return internal::LoadDocword(ctx, path, options,
                               SplitLoad(ctx, options.range, &split) ? &split : nullptr, loc);
}

}  // namespace tessera
