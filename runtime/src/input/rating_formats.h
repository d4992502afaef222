// The rating formats beyond one "user item rating" record per line (tessera/data.h): ids that
// are strings (TripleOptions::string_ids) and the Netflix prize files (TripleFormat::kNetflix).
// Used by data.cc's readers; the records they make are ordinary RatingRecords.
#ifndef TESSERA_RUNTIME_SRC_INPUT_RATING_FORMATS_H_
#define TESSERA_RUNTIME_SRC_INPUT_RATING_FORMATS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "input/line_reader.h"
#include "input/load_share.h"
#include "tessera/common/status.h"
#include "tessera/data.h"

namespace tessera::internal {

// How the id fields of a line become external ids.
struct IdParse {
  bool string_ids = false;  // TripleOptions::string_ids
  // When set (read_id_names), every string id met is recorded under its key; two different
  // strings with one key are an error.
  std::unordered_map<int64_t, std::string>* user_names = nullptr;
  std::unordered_map<int64_t, std::string>* item_names = nullptr;
  // Only the names are wanted: the readers make no records.
  bool names_only = false;
};

// Parses the id field `text` of the line last returned by `reader` into *id. `what` is "user" or
// "item". InvalidArgument naming the place: an integer id that is not one (with a hint at
// string_ids), an empty string id, a key shared by two strings.
Status ParseId(std::string_view text, const IdParse& parse, bool user, const LineReader& reader,
               int64_t* id);

// True for a Netflix movie line: digits, then ':' (blanks around allowed).
bool IsNetflixHeader(std::string_view line);

// Reads the records of the lines of `range` of a Netflix-format file into *out: item = the movie
// of the last "MOVIE:" line before (searched from the start of the file when the range begins
// after it), user and rating from "user,rating,date" (date optional). InvalidArgument naming
// path and line for a malformed line or a rating line before any movie line.
Status ReadNetflixRatings(const std::string& path, ReadRange range, const IdParse& parse,
                          std::vector<RatingRecord>* out);

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_INPUT_RATING_FORMATS_H_
