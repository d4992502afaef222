#include "input/timestamp.h"

#include <charconv>
#include <cmath>
#include <system_error>

namespace tessera::internal {
namespace {

// Reads exactly `digits` decimal digits at s[*at] into *v, within [lo, hi].
bool Digits(std::string_view s, size_t* at, int digits, int lo, int hi, int* v) {
  if (*at + static_cast<size_t>(digits) > s.size()) return false;
  int x = 0;
  for (int i = 0; i < digits; ++i) {
    const char c = s[*at + static_cast<size_t>(i)];
    if (c < '0' || c > '9') return false;
    x = x * 10 + (c - '0');
  }
  *at += static_cast<size_t>(digits);
  *v = x;
  return x >= lo && x <= hi;
}

bool Char(std::string_view s, size_t* at, char c) {
  if (*at < s.size() && s[*at] == c) {
    ++*at;
    return true;
  }
  return false;
}

bool IsDateTime(std::string_view s) {
  size_t at = 0;
  int v;
  if (!Digits(s, &at, 4, 0, 9999, &v) || !Char(s, &at, '-') || !Digits(s, &at, 2, 1, 12, &v) ||
      !Char(s, &at, '-') || !Digits(s, &at, 2, 1, 31, &v)) {
    return false;
  }
  if (at == s.size()) return true;
  if (!Char(s, &at, 'T') && !Char(s, &at, ' ')) return false;
  if (!Digits(s, &at, 2, 0, 23, &v) || !Char(s, &at, ':') || !Digits(s, &at, 2, 0, 59, &v)) {
    return false;
  }
  if (Char(s, &at, ':')) {
    if (!Digits(s, &at, 2, 0, 60, &v)) return false;
    if (Char(s, &at, '.')) {
      const size_t first = at;
      while (at < s.size() && s[at] >= '0' && s[at] <= '9') ++at;
      if (at == first) return false;
    }
  }
  if (at == s.size() || Char(s, &at, 'Z')) return at == s.size();
  if (!Char(s, &at, '+') && !Char(s, &at, '-')) return false;
  if (!Digits(s, &at, 2, 0, 23, &v)) return false;
  Char(s, &at, ':');
  return Digits(s, &at, 2, 0, 59, &v) && at == s.size();
}

}  // namespace

bool IsTimestamp(std::string_view s) {
  if (s.empty()) return false;
  std::string_view number = s;
  if (number.front() == '+') number.remove_prefix(1);
  double x;
  auto [p, ec] = std::from_chars(number.data(), number.data() + number.size(), x);
  if (ec == std::errc() && p == number.data() + number.size() && !number.empty()) {
    return std::isfinite(x);
  }
  return IsDateTime(s);
}

}  // namespace tessera::internal
