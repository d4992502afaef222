#include "input/rating_records.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <system_error>

namespace tessera::internal {

bool ParseRatingFast(TripleFormat format, std::string_view line, RatingRecord* r) {
  const char* p = line.data();
  const char* const end = p + line.size();
  const bool blanks = format != TripleFormat::kTab;  // tab fields are not trimmed
  // After a field: the separator (with the blanks around it, where allowed).
  auto separator = [&](const char* at) -> const char* {
    if (format == TripleFormat::kWhitespace) {
      const char* next = SkipBlanks(at, end);
      return next > at && next < end ? next : nullptr;
    }
    if (blanks) at = SkipBlanks(at, end);
    const char sep = format == TripleFormat::kTab ? '\t' : ',';
    if (at >= end || *at != sep) return nullptr;
    return blanks ? SkipBlanks(at + 1, end) : at + 1;
  };
  if (blanks) p = SkipBlanks(p, end);
  auto user = std::from_chars(p, end, r->user);
  if (user.ec != std::errc() || user.ptr == p || (p = separator(user.ptr)) == nullptr) return false;
  auto item = std::from_chars(p, end, r->item);
  if (item.ec != std::errc() || item.ptr == p || (p = separator(item.ptr)) == nullptr) return false;
  auto value = std::from_chars(p, end, r->value);
  if (value.ec != std::errc() || value.ptr == p || !std::isfinite(r->value)) return false;
  p = blanks ? SkipBlanks(value.ptr, end) : value.ptr;
  return p == end;
}

size_t EstimateRecords(int64_t bytes, int64_t bytes_read, size_t lines_read) {
  const double per_line = static_cast<double>(bytes_read) / static_cast<double>(lines_read);
  return static_cast<size_t>(1.1 * static_cast<double>(bytes) / per_line) + 1024;
}

std::vector<int64_t> DistinctIds(std::initializer_list<const std::vector<RatingRecord>*> sets,
                                 bool users) {
  const auto field = users ? &RatingRecord::user : &RatingRecord::item;
  size_t n = 0;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const auto* set : sets) {
    n += set->size();
    for (const RatingRecord& r : *set) {
      lo = std::min(lo, r.*field);
      hi = std::max(hi, r.*field);
    }
  }
  std::vector<int64_t> ids;
  if (n == 0) return ids;
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
  if (span != 0 && span <= 64 * static_cast<uint64_t>(n) + 4096) {
    std::vector<uint64_t> seen((span + 63) / 64, 0);
    for (const auto* set : sets) {
      for (const RatingRecord& r : *set) {
        const uint64_t b = static_cast<uint64_t>(r.*field) - static_cast<uint64_t>(lo);
        seen[b / 64] |= uint64_t{1} << (b % 64);
      }
    }
    for (size_t w = 0; w < seen.size(); ++w) {
      for (uint64_t bits = seen[w]; bits != 0; bits &= bits - 1) {
        const uint64_t b = w * 64 + static_cast<uint64_t>(__builtin_ctzll(bits));
        ids.push_back(static_cast<int64_t>(static_cast<uint64_t>(lo) + b));
      }
    }
    return ids;
  }
  ids.reserve(n);
  for (const auto* set : sets) {
    for (const RatingRecord& r : *set) ids.push_back(r.*field);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

template <typename T>
void InsertRecords(std::vector<RatingRecord>* ratings, const IdMap& users, const IdMap& items,
                   DistArray<T, 2>& into) {
  into.reserve(into.nnz() + static_cast<int64_t>(ratings->size()));
  constexpr size_t kRelease = size_t{1} << 18;  // records per release: 6 MiB
  const RatingRecord* data = ratings->data();
  for (size_t i = 0; i < ratings->size(); ++i) {
    const RatingRecord& r = data[i];
    into.append_unchecked(Key<2>{{users.index(r.user), items.index(r.item)}},
                          static_cast<T>(r.value));
    if ((i + 1) % kRelease == 0)
      ReleasePages(data + (i + 1 - kRelease), kRelease * sizeof(RatingRecord));
  }
  std::vector<RatingRecord>().swap(*ratings);
}

// Duplicates are found after the records are stored, one row at a time (the positions grouped by
// user by a counting sort, each row's items sorted): much faster than keeping the sparse array's
// hash index up to date on multi-million-rating files, and 4 bytes per element rather than 8 for a
// sort of every linear key.
template <typename T>
Status CheckNoDuplicates(const std::string& path, const DistArray<T, 2>& array, const IdMap& users,
                         const IdMap& items) {
  const int64_t n = array.nnz();
  if (n < 2) return Status::Ok();
  const int64_t rows = array.extent(0);
  std::vector<int64_t> start(static_cast<size_t>(rows) + 1, 0);
  for (int64_t p = 0; p < n; ++p) ++start[static_cast<size_t>(array.key_at(p)[0]) + 1];
  for (int64_t r = 0; r < rows; ++r) start[r + 1] += start[r];
  // Items fit in 32 bits wherever the array fits in memory; wider extents take the general sort.
  if (array.extent(1) > UINT32_MAX) {
    std::vector<int64_t> linear(static_cast<size_t>(n));
    for (int64_t p = 0; p < n; ++p) {
      const Key<2>& k = array.key_at(p);
      linear[p] = k[0] * array.extent(1) + k[1];
    }
    std::sort(linear.begin(), linear.end());
    const auto dup = std::adjacent_find(linear.begin(), linear.end());
    if (dup == linear.end()) return Status::Ok();
    return Status::InvalidArgument(fmt::format("{}: user {} rated item {} more than once", path,
                                               users.external(*dup / array.extent(1)),
                                               items.external(*dup % array.extent(1))));
  }
  std::vector<uint32_t> cols(static_cast<size_t>(n));
  {
    std::vector<int64_t> fill(start.begin(), start.end() - 1);
    for (int64_t p = 0; p < n; ++p) {
      const Key<2>& k = array.key_at(p);
      cols[static_cast<size_t>(fill[k[0]]++)] = static_cast<uint32_t>(k[1]);
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    auto b = cols.begin() + start[r], e = cols.begin() + start[r + 1];
    if (e - b < 2) continue;
    std::sort(b, e);
    const auto dup = std::adjacent_find(b, e);
    if (dup != e) {
      return Status::InvalidArgument(fmt::format("{}: user {} rated item {} more than once", path,
                                                 users.external(r), items.external(*dup)));
    }
  }
  return Status::Ok();
}

template void InsertRecords<float>(std::vector<RatingRecord>*, const IdMap&, const IdMap&,
                                   DistArray<float, 2>&);
template void InsertRecords<double>(std::vector<RatingRecord>*, const IdMap&, const IdMap&,
                                    DistArray<double, 2>&);
template Status CheckNoDuplicates<float>(const std::string&, const DistArray<float, 2>&,
                                         const IdMap&, const IdMap&);
template Status CheckNoDuplicates<double>(const std::string&, const DistArray<double, 2>&,
                                          const IdMap&, const IdMap&);

}  // namespace tessera::internal
