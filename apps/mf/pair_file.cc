#include "mf/pair_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <memory>
#include <string_view>

#include "tessera/common/line_file.h"

namespace mf {
namespace {

using tessera::Result;
using tessera::Status;
using tessera::TripleFormat;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> SplitLine(std::string_view line, std::string_view sep) {
  std::vector<std::string_view> out;
  if (sep.empty()) {  // runs of spaces and tabs
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
      if (j > i) out.push_back(line.substr(i, j - i));
      i = j;
    }
    return out;
  }
  for (;;) {
    const size_t at = line.find(sep);
    out.push_back(Trim(line.substr(0, at)));
    if (at == std::string_view::npos) return out;
    line.remove_prefix(at + sep.size());
  }
}

bool ParseNumber(std::string_view s, double* v) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty() && std::isfinite(*v);
}

bool IsNumber(std::string_view s) {
  double v = 0;
  return ParseNumber(s, &v);
}

// An integer id is spelt canonically ("007" and "+7" are 7, as the training loader reads them);
// anything else is kept as written.
std::string CanonicalId(std::string_view s) {
  std::string_view digits = s;
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
  int64_t v;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec == std::errc() && p == digits.data() + digits.size() && !digits.empty()) {
    return std::to_string(v);
  }
  return std::string(s);
}

// A Netflix movie line: digits, then ':' (as the training loader's IsNetflixHeader).
bool IsNetflixHeader(std::string_view line) {
  line = Trim(line);
  if (line.size() < 2 || line.back() != ':') return false;
  const std::string_view id = Trim(line.substr(0, line.size() - 1));
  return !id.empty() &&
         std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string_view SeparatorOf(TripleFormat format) {
  switch (format) {
    case TripleFormat::kTab:
      return "\t";
    case TripleFormat::kDoubleColon:
      return "::";
    case TripleFormat::kCsv:
    case TripleFormat::kNetflix:
      return ",";
    default:
      return "";
  }
}

}  // namespace

Result<std::vector<Pair>> ReadPairs(const std::string& path, bool need_rating, bool string_ids,
                                    TripleFormat format) {
  std::vector<Pair> pairs;
  bool detected = format != TripleFormat::kAuto;
  bool netflix = format == TripleFormat::kNetflix;
  std::string sep(SeparatorOf(format));
  std::string movie;  // Netflix: the item of the lines that follow
  auto id = [string_ids](std::string_view s) {
    return string_ids ? std::string(s) : CanonicalId(s);
  };
  Status read = tessera::ForEachLine(path, [&](std::string_view line, int64_t line_no) -> Status {
    std::string_view l = Trim(line);
    if (l.empty()) return Status::Ok();
    const bool first = !detected;
    if (!detected) {
      detected = true;
      netflix = IsNetflixHeader(l);
      sep = netflix                                  ? ","
            : l.find("::") != std::string_view::npos ? "::"
            : l.find('\t') != std::string_view::npos ? "\t"
            : l.find(',') != std::string_view::npos  ? ","
                                                     : "";
    }
    if (netflix) {
      if (IsNetflixHeader(l)) {
        movie = id(Trim(l.substr(0, l.size() - 1)));
        return Status::Ok();
      }
      if (movie.empty()) {
        return Status::InvalidArgument(
            fmt::format("{}:{}: a Netflix-format file starts with a 'MOVIE_ID:' line, found '{}'",
                        path, line_no, l));
      }
      const std::vector<std::string_view> f = SplitLine(l, sep);
      // With ratings, the training loader's rule: user,rating[,date]. Pairs may carry more.
      if (f.empty() || f[0].empty() || (need_rating && (f.size() < 2 || f.size() > 3))) {
        return Status::InvalidArgument(fmt::format("{}:{}: expected 'user{}', found '{}'", path,
                                                   line_no,
                                                   need_rating ? ",rating[,date]" : "[,...]", l));
      }
      Pair p{id(f[0]), movie, 0.0};
      if (need_rating && !ParseNumber(f[1], &p.rating)) {
        return Status::InvalidArgument(
            fmt::format("{}:{}: rating '{}' is not a finite number", path, line_no, f[1]));
      }
      pairs.push_back(std::move(p));
      return Status::Ok();
    }
    const std::vector<std::string_view> f = SplitLine(l, sep);
    // "userId,movieId,...": a header. String ids may hold no digit at all: then only a line whose
    // rating is no number is one (and a file without ratings has no header).
    if (first && sep == ",") {
      const bool header = string_ids ? need_rating && f.size() >= 3 && !IsNumber(f[2])
                                     : std::none_of(l.begin(), l.end(),
                                                    [](char c) { return c >= '0' && c <= '9'; });
      if (header) return Status::Ok();
    }
    if (f.size() < (need_rating ? 3u : 2u) || f[0].empty() || f[1].empty()) {
      return Status::InvalidArgument(fmt::format("{}:{}: expected 'user item{}', found '{}'", path,
                                                 line_no, need_rating ? " rating" : "", l));
    }
    Pair p{id(f[0]), id(f[1]), 0.0};
    if (need_rating && !ParseNumber(f[2], &p.rating)) {
      return Status::InvalidArgument(
          fmt::format("{}:{}: rating '{}' is not a finite number", path, line_no, f[2]));
    }
    pairs.push_back(std::move(p));
    return Status::Ok();
  });
  if (!read.ok()) return read;
  return pairs;
}

}  // namespace mf
