#include "schedule/array_binding.h"

#include <fmt/format.h>

#include <string_view>

#include "schedule/schedule_table.h"

namespace tessera::internal {

bool SiteBinding::complete(const LoopSchedule& s) const {
  for (size_t i = 0; i < arrays.size(); ++i) {
    if (arrays[i] == nullptr && !s.arrays[i].relaxed) return false;
  }
  return true;
}

int SiteBinding::IndexOf(const ArrayBase* a) const {
  for (size_t i = 0; i < arrays.size(); ++i) {
    if (arrays[i] == a) return static_cast<int>(i);
  }
  return -1;
}

namespace {

bool SameOrigin(const LoopSchedule::Origin& o, const ArrayOrigin& a) {
  return a.line == o.line && std::string_view(a.member) == o.member &&
         SameSourceFile(a.file, o.file);
}

}  // namespace

SiteBinding BindArrays(const LoopSchedule& s, const ArrayBase& space,
                       const std::map<int64_t, ArrayBase*>& live) {
  SiteBinding b;
  b.arrays.assign(s.arrays.size(), nullptr);
  b.why_unbound.assign(s.arrays.size(), std::string());
  for (size_t i = 0; i < s.arrays.size(); ++i) {
    const LoopSchedule::Array& a = s.arrays[i];
    if (i == 0) {
      b.arrays[0] = const_cast<ArrayBase*>(&space);
      continue;
    }
    if (a.may_alias) {
      b.why_unbound[i] = fmt::format("'{}' may be any array of its type (tessc could not resolve it)",
                                     a.name);
      continue;
    }
    if (!a.origin) {
      b.why_unbound[i] = fmt::format("tessc could not tell where '{}' was created: {}", a.name,
                                     a.origin_unknown);
      continue;
    }
    std::vector<ArrayBase*> found;
    for (const auto& [id, arr] : live) {
      if (SameOrigin(*a.origin, arr->origin())) found.push_back(arr);
    }
    if (found.size() > 1 && a.origin->column != 0) {
      std::vector<ArrayBase*> narrowed;
      for (ArrayBase* arr : found) {
        if (arr->origin().column == a.origin->column) narrowed.push_back(arr);
      }
      if (!narrowed.empty()) found.swap(narrowed);
    }
    const std::string where = fmt::format("{}:{}{}", a.origin->file, a.origin->line,
                                          a.origin->member.empty() ? "" : " ." + a.origin->member);
    if (found.empty()) {
      b.why_unbound[i] = fmt::format("no live array was created at {}, where tessc says '{}' was",
                                     where, a.name);
      continue;
    }
    if (found.size() > 1) {
      b.why_unbound[i] = fmt::format(
          "{} live arrays were created at {} (a loop or a helper creating several); '{}' may be "
          "any of them",
          found.size(), where, a.name);
      continue;
    }
    ArrayBase* arr = found[0];
    if (static_cast<int>(arr->element_bytes()) != a.element_bytes || arr->rank() != a.rank ||
        arr->relaxed() != a.relaxed) {
      b.why_unbound[i] = fmt::format(
          "the array created at {} ({}-byte elements, rank {}{}) is not what tessc saw for '{}' "
          "({}-byte elements, rank {}{})",
          where, arr->element_bytes(), arr->rank(), arr->relaxed() ? ", relaxed" : "", a.name,
          a.element_bytes, a.rank, a.relaxed ? ", relaxed" : "");
      continue;
    }
    b.arrays[i] = arr;
  }
  return b;
}

}  // namespace tessera::internal
