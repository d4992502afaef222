// The (user, item) pairs mf reads with a saved model: held-out ratings (--test), pairs to predict
// (--predict), pairs not to recommend again (--exclude). Every ratings format the training loader
// reads is accepted (docs/apps.md, "Data formats"), plain or gzip-compressed.
//
// Thread safety: reentrant.
#ifndef TESSERA_APPS_MF_PAIR_FILE_H_
#define TESSERA_APPS_MF_PAIR_FILE_H_

#include <string>
#include <vector>

#include "tessera/common/status.h"
#include "tessera/data.h"

namespace mf {

// One line of a pairs or ratings file.
struct Pair {
  std::string user, item;  // ids as the model's id files spell them
  double rating = 0;       // when the file has ratings
};

// Reads "user item [rating [...]]" lines separated by "::", tabs, commas or spaces, or the
// Netflix prize format ("MOVIE:" lines, each followed by "user[,rating][,date]" lines of that
// movie: the training files, probe.txt and qualifying.txt alike). kAuto detects the format from
// the first non-blank line, as the training loader does; a first comma-separated line without
// digits is a header. `need_rating`: the rating field must be a finite number (in Netflix files
// the field after the user). An integer id is spelt canonically ("007" is 7, as the training
// loader reads it) unless `string_ids` (then ids are kept as written). Errors name the file and
// line: NotFound (cannot open), InvalidArgument (a malformed line), DataLoss (a damaged gzip file).
tessera::Result<std::vector<Pair>> ReadPairs(
    const std::string& path, bool need_rating, bool string_ids = false,
    tessera::TripleFormat format = tessera::TripleFormat::kAuto);

}  // namespace mf

#endif  // TESSERA_APPS_MF_PAIR_FILE_H_
