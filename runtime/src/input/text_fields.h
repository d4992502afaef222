// Parsing one whitespace-free field of a text input line, and quoting a field in an error
// message: shared by the loaders (data.cc) and the rating formats (rating_formats.cc).
#ifndef TESSERA_RUNTIME_SRC_INPUT_TEXT_FIELDS_H_
#define TESSERA_RUNTIME_SRC_INPUT_TEXT_FIELDS_H_

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

namespace tessera::internal {

// The whole of `s` (an optional leading '+') as an integer; false for anything else.
inline bool ParseInt(std::string_view s, int64_t* v) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

// The whole of `s` as a finite number; false for anything else (nan and inf included).
inline bool ParseFinite(std::string_view s, double* v) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty() && std::isfinite(*v);
}

// `s` in quotes for a message, cut after 60 characters.
inline std::string Quote(std::string_view s) {
  constexpr size_t kMax = 60;
  return s.size() <= kMax ? fmt::format("'{}'", s) : fmt::format("'{}...'", s.substr(0, kMax));
}

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_INPUT_TEXT_FIELDS_H_
