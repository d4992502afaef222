// How the data loaders (tessera/data.h) split a file between the workers of a distributed job:
// worker `rank` of W parses the rank-th byte range of the file into a share of records, the shares
// travel as proto::LoadedShare messages (tessera.capnp) through one all-gather, and every worker
// concatenates them in rank order -- file order -- so that it builds the same arrays as a serial
// read of the whole file. A share that fails to parse carries its first error instead of records;
// merged, the first failing rank's error wins (for load_triples: a training-file error before any
// held-out-file error, as in a serial read).
//
// The pieces are separate so that tests can run the split load with an in-memory gather.
#ifndef TESSERA_RUNTIME_SRC_INPUT_LOAD_SHARE_H_
#define TESSERA_RUNTIME_SRC_INPUT_LOAD_SHARE_H_

#include <cstdint>
#include <functional>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/common/status.h"
#include "tessera/context.h"
#include "tessera/data.h"

namespace tessera::internal {

struct RatingRecord {
  int64_t user;
  int64_t item;
  double value;
};

struct DocwordEntry {
  int64_t doc;   // 1-based, as in the file
  int64_t word;  // 1-based
  int32_t count;
};

// One worker's records of load_triples' files (or, merged, the whole files').
struct RatingShare {
  Status error;                // the first error; records are meaningless when set
  bool error_in_test = false;  // the error is in the held-out (test_path) file
  std::vector<RatingRecord> train;
  std::vector<RatingRecord> test;
};

// One worker's entry lines of a docword file (or, merged, the whole file's).
struct DocwordShare {
  Status error;
  std::vector<DocwordEntry> entries;
};

// A proto::LoadedShare message, flat (capnp::messageToFlatArray). Records of a failed share are
// not sent.
std::string EncodeShare(const RatingShare& share);
std::string EncodeShare(const DocwordShare& share);

// Appends the share in `bytes` to `into` (records in order) and keeps the first error: `into`'s
// own unless it has none (for ratings: unless it is a held-out-file error and the new one is a
// training-file error). Errors: DataLoss when `bytes` is not a LoadedShare of that kind.
Status MergeShare(std::string_view bytes, RatingShare* into);
Status MergeShare(std::string_view bytes, DocwordShare* into);

// Gives the whole pages of [begin, begin + bytes) back to the kernel (madvise MADV_DONTNEED):
// the loaders call it on the records of a large buffer they have stored and will not read
// again, so that the buffer's memory goes as the records are stored rather than when it is
// freed. REQUIRES: nothing reads those bytes again before the buffer is freed.
void ReleasePages(const void* begin, size_t bytes);

// The byte range worker `rank` of `num_workers` reads of a file of `size` bytes: near-equal
// consecutive ranges; the last one runs to the end of the file.
ReadRange WorkerRange(int64_t size, int rank, int num_workers);

// Where this process stands in a split load. `gather` is an all-gather of one byte string per
// worker in rank order (Context::AllGather); every worker calls it exactly once per file load.
struct LoadSplit {
  int rank = 0;
  int num_workers = 1;
  std::function<Result<std::vector<std::string>>(std::string)> gather;
  // Context::AllToAll, and whether the job may keep the array created at an origin partitioned
  // (Context::PartitionsLoadedArray); either may be empty (then every worker gets every record).
  std::function<Result<std::vector<std::string>>(std::vector<std::string>)> exchange;
  std::function<bool(const ArrayOrigin&)> keeps_partitioned;
};

// A split load_triples whose `train` and `test` the job keeps partitioned: `share` holds this
// worker's parsed records (the held-out split already made) or its first error. Only ids, counts
// and errors go to every worker; each record goes to the worker holding its user's key range
// (equal-count ranges of key[0]), so each worker ends with the elements of its range, in file
// order, and the same ids, shapes and errors as a whole-file read.
template <typename T>
Result<TripleData<T>> LoadTriplesPartitioned(Context& ctx, const std::string& path,
                                             const TripleOptions& options, const LoadSplit& split,
                                             RatingShare share, ArrayOrigin origin);

// What a docword file's header says.
struct DocwordShape {
  int64_t docs = 0;   // D
  int64_t vocab = 0;  // W
  int64_t nnz = 0;    // NNZ
};

// A split load_docword whose `counts` the job keeps partitioned: `share` holds this worker's
// parsed entries (1-based, all of the header's documents kept) or its first error. Only per-doc
// entry counts, totals and errors go to every worker; each entry goes to the worker holding its
// document's key range (equal-count ranges of key[0]), so each worker ends with the elements of
// its range, in file order, and the same shape, num_tokens and errors as a whole-file read.
// `second_occurrence(doc, word)` (1-based) names where the second entry of a duplicate is in the
// file, as the whole-file read names it; every worker calls it alike.
// With `tokens` (DocwordOptions::tokens) the ranges are equal-token ranges and the corpus comes
// back as ExpandTokens makes it, each worker holding the tokens of its range.
Result<Corpus> LoadDocwordPartitioned(
    Context& ctx, const std::string& path, const DocwordShape& shape, const LoadSplit& split,
    DocwordShare share, ArrayOrigin origin, bool tokens,
    const std::function<std::string(int64_t doc, int64_t word)>& second_occurrence);

// DocwordOptions::tokens: whether `tokens` tokens, 32 bytes each, split between `workers` workers,
// fit in this machine's memory. A count of 2e9 in a file must end with this message, not with
// std::bad_alloc: InvalidArgument naming `path`, the sizes and `what` (the largest count, when
// known).
Status CheckTokensFit(const std::string& path, uint64_t tokens, int workers,
                      const std::string& what);

// DocwordOptions::tokens of a whole corpus (a partitioned one makes its tokens as its entries
// arrive, LoadDocwordPartitioned): replaces the elements of corpus->counts (created at `origin`)
// by corpus->tokens, one element per token (data.h), and sets corpus->max_doc_length. The
// entries' memory goes before the tokens are built.
void ExpandTokens(Context& ctx, Corpus* corpus, const ArrayOrigin& origin);

// The loaders behind load_triples and load_docword: `split` null reads `options.range` alone
// (serial); otherwise this worker reads WorkerRange of each file and the shares are merged
// through split->gather (options.range is ignored).
template <typename T>
Result<TripleData<T>> LoadTriples(Context& ctx, const std::string& path,
                                  const TripleOptions& options, const LoadSplit* split,
                                  std::source_location loc = std::source_location::current());
Result<Corpus> LoadDocword(Context& ctx, const std::string& path, const DocwordOptions& options,
                           const LoadSplit* split,
                           std::source_location loc = std::source_location::current());

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_INPUT_LOAD_SHARE_H_
