#include "input/rating_formats.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <memory>

#include "input/text_fields.h"
#include "input/timestamp.h"

namespace tessera {

int64_t string_id_key(std::string_view id) {
  // FNV-1a, 64 bits, folded to 63: stable across builds, hosts and byte ranges.
  uint64_t h = 14695981039346656037ull;
  for (char c : id) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return static_cast<int64_t>(h >> 1);
}

namespace internal {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// The text of the last Netflix header line that starts before byte `before` of an uncompressed
// file, read backwards in windows (a share's reader must not hold the whole prefix in memory);
// empty when there is none. *gzip is set instead when the file is compressed.
Result<std::string> LastHeaderBefore(const std::string& path, int64_t before, bool* gzip) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!file) return Status::NotFound(fmt::format("cannot open {}", path));
  unsigned char magic[2] = {0, 0};
  *gzip = std::fread(magic, 1, 2, file.get()) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (*gzip) return std::string();
  // The line holding byte before-1 may run past `before`: read a little further to finish it
  // (a header is short; a longer line is no header anyway).
  constexpr int64_t kWindow = 1 << 16;
  constexpr int64_t kHeaderMax = 64;
  std::string carry;  // the start of the line cut by the previous window's left edge
  int64_t end = before;
  bool first = true;
  while (end > 0) {
    const int64_t start = std::max<int64_t>(0, end - kWindow);
    const int64_t want = (end - start) + (first ? kHeaderMax : 0);
    std::string chunk(static_cast<size_t>(want), '\0');
    if (std::fseek(file.get(), start, SEEK_SET) != 0) {
      return Status::DataLoss(fmt::format("{}: cannot seek to byte {}", path, start));
    }
    chunk.resize(std::fread(chunk.data(), 1, chunk.size(), file.get()));
    if (first) {
      // Keep the bytes up to the end of the line that holds byte before-1.
      const size_t cut = chunk.find('\n', static_cast<size_t>(end - start - 1));
      if (cut != std::string::npos) chunk.resize(cut);
      first = false;
    }
    chunk += carry;
    // Whole lines are those after the first newline (or all of it at the start of the file).
    size_t line_end = chunk.size();
    while (true) {
      const size_t nl = line_end == 0 ? std::string::npos : chunk.rfind('\n', line_end - 1);
      if (nl == std::string::npos && start > 0) break;
      const size_t line_start = nl == std::string::npos ? 0 : nl + 1;
      const std::string_view line(chunk.data() + line_start, line_end - line_start);
      if (IsNetflixHeader(line)) return std::string(line);
      if (nl == std::string::npos) break;
      line_end = nl;
    }
    carry = chunk.substr(0, line_end);
    end = start;
  }
  return std::string();
}

// The movie of the last header line that starts before `before`; *found false when none does.
Result<int64_t> NetflixMovieBefore(const std::string& path, int64_t before, const IdParse& parse,
                                   bool* found) {
  *found = false;
  bool gzip = false;
  Result<std::string> header = LastHeaderBefore(path, before, &gzip);
  if (!header.ok()) return header.status();
  int64_t movie = 0;
  if (!gzip) {
    if (header->empty()) return movie;
    *found = true;
    // A header's id is digits, as IsNetflixHeader checked.
    const std::string_view text = Trim(*header);
    const std::string_view id = Trim(text.substr(0, text.size() - 1));
    if (parse.string_ids) return string_id_key(id);
    if (!ParseInt(id, &movie)) {
      return Status::InvalidArgument(
          fmt::format("{}: movie id {} is out of range", path, Quote(id)));
    }
    return movie;
  }
  // Compressed: every reader decompresses the whole file anyway (line_reader.h); scan forward.
  auto opened = LineReader::Open(path, ReadRange{0, before});
  if (!opened.ok()) return opened.status();
  std::string_view line;
  while (opened->Next(&line)) {
    if (!IsNetflixHeader(line)) continue;
    const std::string_view text = Trim(line);
    TESSERA_RETURN_IF_ERROR(
        ParseId(Trim(text.substr(0, text.size() - 1)), parse, false, *opened, &movie));
    *found = true;
  }
  return movie;
}

}  // namespace

Status ParseId(std::string_view text, const IdParse& parse, bool user, const LineReader& reader,
               int64_t* id) {
  const char* what = user ? "user" : "item";
  if (!parse.string_ids) {
    if (ParseInt(text, id)) return Status::Ok();
    return Status::InvalidArgument(fmt::format(
        "{}: {} id {} is not an integer (for ids that are strings, load with string ids: mf "
        "--string-ids)",
        reader.Where(), what, Quote(text)));
  }
  if (text.empty()) {
    return Status::InvalidArgument(fmt::format("{}: empty {} id", reader.Where(), what));
  }
  *id = string_id_key(text);
  auto* names = user ? parse.user_names : parse.item_names;
  if (names != nullptr) {
    auto [it, inserted] = names->try_emplace(*id, text);
    if (!inserted && it->second != text) {
      return Status::InvalidArgument(
          fmt::format("{}: {} ids {} and {} have the same key {}: rename one of them",
                      reader.Where(), what, Quote(it->second), Quote(text), *id));
    }
  }
  return Status::Ok();
}

bool IsNetflixHeader(std::string_view line) {
  line = Trim(line);
  if (line.size() < 2 || line.back() != ':') return false;
  for (char c : line.substr(0, line.size() - 1)) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

Status ReadNetflixRatings(const std::string& path, ReadRange range, const IdParse& parse,
                          std::vector<RatingRecord>* out) {
  int64_t movie = 0;
  bool have_movie = false;
  if (range.begin > 0) {
    Result<int64_t> before = NetflixMovieBefore(path, range.begin, parse, &have_movie);
    if (!before.ok()) return before.status();
    movie = *before;
  }
  auto opened = LineReader::Open(path, range);
  if (!opened.ok()) return opened.status();
  LineReader& reader = opened.value();
  std::string_view line;
  while (reader.Next(&line)) {
    const std::string_view text = Trim(line);
    if (text.empty()) continue;
    if (IsNetflixHeader(text)) {
      TESSERA_RETURN_IF_ERROR(
          ParseId(Trim(text.substr(0, text.size() - 1)), parse, false, reader, &movie));
      have_movie = true;
      continue;
    }
    if (text.back() == ':') {
      return Status::InvalidArgument(fmt::format(
          "{}: a Netflix movie line is a movie id and ':', found {}", reader.Where(), Quote(text)));
    }
    if (!have_movie) {
      return Status::InvalidArgument(
          fmt::format("{}: rating line {} before any 'MOVIE_ID:' line (Netflix prize format)",
                      reader.Where(), Quote(text)));
    }
    std::string_view fields[3];
    int count = 0;
    for (std::string_view rest = text;;) {
      const size_t comma = rest.find(',');
      if (count < 3) fields[count] = Trim(rest.substr(0, comma));
      ++count;
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    if (count < 2 || count > 3) {
      return Status::InvalidArgument(fmt::format(
          "{}: expected 'user,rating[,date]' under movie {} (Netflix prize format), found {}",
          reader.Where(), movie, Quote(text)));
    }
    RatingRecord r;
    r.item = movie;
    TESSERA_RETURN_IF_ERROR(ParseId(fields[0], parse, true, reader, &r.user));
    if (!ParseFinite(fields[1], &r.value)) {
      return Status::InvalidArgument(
          fmt::format("{}: rating {} is not a finite number", reader.Where(), Quote(fields[1])));
    }
    if (count == 3 && !IsTimestamp(fields[2])) {
      return Status::InvalidArgument(
          fmt::format("{}: date {} is neither a number nor an ISO 8601 date (YYYY-MM-DD)",
                      reader.Where(), Quote(fields[2])));
    }
    if (!parse.names_only) out->push_back(r);
  }
  return reader.status();
}

}  // namespace internal
}  // namespace tessera
