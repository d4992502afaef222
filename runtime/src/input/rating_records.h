// The bulk steps of load_triples (tessera/data.h) between the text and the arrays: the common
// line parsed in place, the records' id maps and their storing, and the whole-array duplicate
// check. Each keeps its transient memory small (docs/runtime.md, "Memory per record").
#ifndef TESSERA_RUNTIME_SRC_INPUT_RATING_RECORDS_H_
#define TESSERA_RUNTIME_SRC_INPUT_RATING_RECORDS_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "input/load_share.h"
#include "tessera/common/status.h"
#include "tessera/data.h"
#include "tessera/dist_array.h"

namespace tessera::internal {

inline const char* SkipBlanks(const char* p, const char* end) {
  while (p < end && (*p == ' ' || *p == '\t')) ++p;
  return p;
}

// The common line "USER ITEM RATING" (integer ids, no timestamp) of a kWhitespace, kTab or kCsv
// file, parsed with std::from_chars without splitting it into fields first: most of a large
// file's lines. True only for lines data.cc's general path accepts, with the values it reads;
// anything unusual (a '+' sign, a fourth field, a stray character, a non-finite rating) gives
// false, and the general path then reads the line or names its error.
bool ParseRatingFast(TripleFormat format, std::string_view line, RatingRecord* r);

// About how many records the lines of `bytes` bytes hold, from the lines read so far: a
// reservation that large is never copied as it fills, and its untouched pages cost no memory.
size_t EstimateRecords(int64_t bytes, int64_t bytes_read, size_t lines_read);

// The distinct user (or item) ids of the records, increasing. Ids that span a range at most 64
// times their count (most data sets: 1..n with few gaps) are marked in a bitmap of the range,
// one bit per id, instead of sorting a copy of every record's id (8 bytes per record).
std::vector<int64_t> DistinctIds(std::initializer_list<const std::vector<RatingRecord>*> sets,
                                 bool users);

// Stores the records in `into` in order, mapped by the id maps, and frees *ratings, whose pages
// go as they are stored (ReleasePages), so that the records and the array are not both resident.
template <typename T>
void InsertRecords(std::vector<RatingRecord>* ratings, const IdMap& users, const IdMap& items,
                   DistArray<T, 2>& into);

// InvalidArgument naming the smallest (user, item) that `array` stores twice (as "PATH: user U
// rated item I more than once"), if any.
template <typename T>
Status CheckNoDuplicates(const std::string& path, const DistArray<T, 2>& array, const IdMap& users,
                         const IdMap& items);

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_INPUT_RATING_RECORDS_H_
