// Readers that turn input files into sparse DistArrays.
//
//   tessera::TripleOptions options;
//   options.test_fraction = 0.1;
//   auto data = tessera::load_triples<float>(ctx, "ml-100k/u.data", options);
//   if (!data.ok()) { fmt::print(stderr, "{}\n", data.status().ToString()); return 1; }
//   DistArray<float, 2>& ratings = data->train;   // key (user, item), value rating
//
// Both readers report bad input as a Status naming the file and line (never abort, never skip a
// malformed line silently). Blank lines are allowed and ignored.
//
// Distributed loading: in a distributed job (ctx.mode() == kDistributed, more than one worker)
// a call that leaves `range` at its default (the whole file) is split between the workers: worker
// r reads only the r-th of W near-equal byte ranges of the file (and of TripleOptions::test_path),
// parses it, and the records go to EVERY worker through one Context::AllGather (a Cap'n Proto
// LoadedShare message per worker, concatenated in rank order, which is file order). Every worker
// therefore builds exactly the arrays, id maps and order a serial whole-file read builds: each
// holds the whole iteration space, and the executor decides which part of a parallel_for each one
// runs. Whole-file checks (no ratings, docword NNZ, duplicate keys) run on the gathered whole. A
// worker whose share fails still takes part in the all-gather and sends its error instead, so that
// every worker returns the same Status: the first failing worker's, i.e. the error a serial read
// would find first (a training-file error before a test_path error), located "path:byte OFFSET"
// (or "path:LINE" in worker 0's range). All workers must make the same load calls in the same
// order (SPMD). An explicit `range` is read as given, by this process alone, with no all-gather.
//
// Partitioned data: when tessc proved that only loops touch load_triples' `train` and `test`, or
// load_docword's `counts` (built with tessera_add_program), the records are not all-gathered:
// every worker gets the same id maps, shapes, nnz(), num_tokens and errors, but holds only the
// records of its users' (documents') key range, in file order, and loops move them as their
// schedules need (docs/runtime.md, "Partitioned data"). load_docword with max_docs below the
// header's D still gathers every record.
//
// Byte ranges: every reader takes ReadRange{begin, end}. A line belongs to the range that contains
// its first byte, so the ranges [0, b1), [b1, b2), ..., [bk, size) of one file together read every
// line exactly once, whatever the boundaries: a range that starts inside a line skips to the next
// line, and the last line of a range is read to its end even past `end`. Error locations are
// "path:LINE" when the range starts at byte 0 and "path:byte OFFSET" otherwise (a worker cannot
// know global line numbers). Headers (the docword D/W/NNZ lines, a CSV header) are always read from
// the start of the file, and so is the line that TripleFormat::kAuto detects the format from.
// Ids: load_triples maps external ids to dense 0-based indices in increasing id order, so a map
// built from all ids is independent of how the file was split. Within one call the map covers the
// ids seen in that call.
//
// gzip: a compressed file (gzip magic bytes; any name) is read as the text inside it; byte ranges
// and "byte OFFSET" locations then refer to the decompressed text, and every reader of the file
// decompresses all of it once per open (a split load: each worker, about three times).
//
// Thread safety: the functions are reentrant; results are owned by the caller.
#ifndef TESSERA_DATA_H_
#define TESSERA_DATA_H_

#include <cstdint>
#include <source_location>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tessera/common/status.h"
#include "tessera/context.h"
#include "tessera/dist_array.h"

namespace tessera {

struct ReadRange {
  int64_t begin = 0;  // Default: the start of the file.
  int64_t end = -1;   // Default: -1, the end of the file.
};

enum class TripleFormat {
  kAuto,         // detected from the first non-blank line: "::", then TAB, then ',', else spaces
  kTab,          // MovieLens u.data: user<TAB>item<TAB>rating[<TAB>timestamp]
  kDoubleColon,  // MovieLens 1M/10M ratings.dat: user::item::rating[::timestamp]
  kCsv,          // MovieLens ratings.csv: userId,movieId,rating[,timestamp], optional header line
  kWhitespace,   // plain "user item rating" triples separated by spaces or tabs
  // The Netflix prize files: a "MOVIE_ID:" line, then one "user,rating[,date]" line per rating of
  // that movie (item = the movie). Detected by kAuto from a first line "DIGITS:". In a split load
  // a share that starts after a movie line finds its movie by reading backwards from its start.
  kNetflix,
};

struct TripleOptions {
  // Default: kAuto.
  TripleFormat format = TripleFormat::kAuto;
  // Fraction of the ratings held out as `test`, chosen by a hash of (user id, item id, seed), so
  // the split does not depend on file order or byte ranges. Default: 0 (no split).
  // REQUIRES: 0 <= test_fraction < 1, and test_path empty when > 0.
  double test_fraction = 0.0;
  uint64_t split_seed = 1;  // Default: 1.
  // A separate file of held-out ratings (same format rules); ids are mapped together with the
  // training file's, so `train` and `test` have the same shape. Default: none.
  std::string test_path;
  // The share of `path` to read. Default: the whole file (split between the workers of a
  // distributed job; see the top of this file).
  ReadRange range;
  // Ids are strings (Amazon, Yelp: "A3SGXH7AUHU8GW"), not integers: every user and item id
  // becomes the external id string_id_key(id), so the maps order ids by key, and
  // read_id_names() gives the strings back. Default: false (a non-integer id is an error).
  bool string_ids = false;
};

// External id <-> dense index.
class IdMap {
 public:
  IdMap() = default;
  // Builds the map of the given ids (any order, duplicates allowed); index = rank among them.
  explicit IdMap(std::vector<int64_t> ids);
  int64_t size() const { return static_cast<int64_t>(external_.size()); }
  // REQUIRES: 0 <= index < size().
  int64_t external(int64_t index) const { return external_[static_cast<size_t>(index)]; }
  // -1 when the id is unknown.
  int64_t index(int64_t external_id) const;

 private:
  std::vector<int64_t> external_;  // sorted
  std::unordered_map<int64_t, int64_t> index_;  // empty when the ids have no gaps
};

// The external id of a string id under TripleOptions::string_ids: a stable 63-bit hash (>= 0),
// the same on every host. Two strings with one key are reported by read_id_names.
int64_t string_id_key(std::string_view id);

template <typename T>
struct TripleData {
  DistArray<T, 2> train;  // sparse, shape {users.size(), items.size()}, file order
  DistArray<T, 2> test;   // sparse, same shape; empty (nnz 0) without a split or test file
  IdMap users;            // key[0] <-> user id in the file
  IdMap items;            // key[1] <-> item id in the file
};

// Reads rating triples. T is float or double.
// Errors: NotFound (cannot open), InvalidArgument (malformed line, wrong field count, non-numeric
// or non-finite field, duplicate (user, item), no ratings in the whole file, bad options). A byte
// range holding no line start gives empty arrays, not an error. Distributed: also the all-gather's
// error (e.g. Unavailable when a peer is gone), the same on every worker that gets one.
// `loc` records the call as the origin of `train` and `test` (see internal::ArrayOrigin); leave
// it at its default.
template <typename T>
Result<TripleData<T>> load_triples(Context& ctx, const std::string& path,
                                   const TripleOptions& options = {},
                                   std::source_location loc = std::source_location::current());

// The id strings of a load with TripleOptions::string_ids, by dense index: users[u] is the string
// of index u of `users`. Reads `path` and options.test_path again, whole, in this process (run it
// where the strings are needed, e.g. where a model is saved). Errors: those of load_triples, and
// InvalidArgument when two different strings have one key (naming both) or when an index has
// no string in the files (they changed since the load).
struct IdNames {
  std::vector<std::string> users;
  std::vector<std::string> items;
};
Result<IdNames> read_id_names(const std::string& path, const TripleOptions& options,
                              const IdMap& users, const IdMap& items);

struct DocwordOptions {
  // Keep only documents with id <= max_docs (after validating the whole file). Default: 0 = all.
  int64_t max_docs = 0;
  // The share of the file's entry lines to read (the header is always read). Default: all
  // (split between the workers of a distributed job; see the top of this file).
  ReadRange range;
  // Return the corpus as tokens (Corpus::tokens) instead of entries: `counts` is then left
  // without elements. A distributed job keeps `tokens` partitioned by document when only loops
  // touch it, as it keeps `counts` (docs/runtime.md, "Partitioned data").
  bool tokens = false;
};

// A UCI bag-of-words corpus ("docword" format: D, W, NNZ header lines, then "docID wordID count"
// lines with 1-based ids).
struct Corpus {
  DistArray<int32_t, 2> counts;  // sparse, shape {num_docs, vocab_size}, key (doc, word) 0-based
  // With DocwordOptions::tokens: one element per token, key (doc, word, j) with j the token's
  // index in its document (the document's entries by word, each repeated `count` times), value
  // 0 (the caller's per-token state), stored in key order; shape {num_docs, vocab_size,
  // max(1, max_doc_length)}.
  DistArray<int64_t, 3> tokens;
  int64_t num_docs = 0;          // D from the header (or max_docs when smaller)
  int64_t vocab_size = 0;        // W from the header
  int64_t num_tokens = 0;        // sum of the counts read
  int64_t max_doc_length = 0;    // with DocwordOptions::tokens: the longest document's tokens
};

// Errors: NotFound, InvalidArgument (malformed header or line, id out of the header's range,
// count < 1, duplicate (doc, word)), DataLoss (fewer or more entry lines than the header's NNZ when
// the whole file is read).
// `loc`: the origin of `counts` and `tokens`, as for load_triples.
Result<Corpus> load_docword(Context& ctx, const std::string& path, const DocwordOptions& options = {},
                            std::source_location loc = std::source_location::current());

}  // namespace tessera

#endif  // TESSERA_DATA_H_
