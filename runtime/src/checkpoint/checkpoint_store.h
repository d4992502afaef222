// The checkpoint directory on disk (docs/faults.md, "Checkpoints"):
//
//   DIR/ckpt-000000000042/a7-w1.bin   array #7's elements held by worker 1 (raw, in ranges)
//   DIR/ckpt-000000000042/tables-s0.bin  server 0's shard of the relaxed arrays' tables,
//                                     written by that server (server/src/server_checkpoint.cc)
//   DIR/ckpt-000000000042/MANIFEST    written last, by worker 0: what the checkpoint holds
//
// 42 is the loop boundary: the checkpoint is the program's state just before its 43rd
// parallel_for (loop index 42). Every file is written under a temporary name, fsynced and renamed;
// the MANIFEST (which lists every file with its size and zlib crc32) is renamed into place only
// after every file of every worker is, so a checkpoint without a MANIFEST is incomplete and never
// used, and a file that does not match its crc32 is reported, never restored.
//
// Thread safety: none needed; functions touch only the paths they are given.
#ifndef TESSERA_RUNTIME_SRC_CHECKPOINT_CHECKPOINT_STORE_H_
#define TESSERA_RUNTIME_SRC_CHECKPOINT_CHECKPOINT_STORE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/common/status.h"

namespace tessera::internal::checkpoint {

// What one worker held of a sparse array the job kept partitioned (RecordPartition): its file
// holds `count` elements, in the serial order: their keys (rank components each, int64), then
// their values (element_bytes each), then their places in the serial order (RecordOrder, two
// uint64 each), all raw.
struct RecordShare {
  int worker = 0;  // who wrote it
  int dim = 0;     // the worker held the elements whose key[dim] is in [lo, hi)
  int64_t lo = 0;
  int64_t hi = 0;
  int64_t count = 0;
};

// One data file of a checkpoint: the elements [ranges[2i], ranges[2i+1]) of one array, in order,
// or one worker's share of a partitioned sparse array (`share`; `ranges` empty).
struct FileRecord {
  std::string name;  // inside the checkpoint's directory
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
  std::vector<int64_t> ranges;  // element ranges, as begin/end pairs
  std::optional<RecordShare> share;
  int worker = -1;  // who wrote a dense array's file (-1: not recorded)
};

// One array of the program, identified by its creation number (identical on every worker and in
// every replay of the program).
struct ArrayRecord {
  int64_t id = 0;
  int64_t element_bytes = 0;
  int64_t count = 0;  // elements (ArrayBase::value_count; all workers' when partitioned)
  int64_t rows = 0;   // extent(0); element ranges of dense arrays are whole rows
  bool sparse = false;
  // A relaxed array whose values are in the servers' tables (Manifest::server_files), not in
  // `files`.
  bool on_servers = false;
  // A sparse array the job kept partitioned: `files` are the workers' shares, one per worker.
  bool partitioned = false;
  // A dense array the job kept partitioned between loops (only loops touch it; some row was not
  // on every worker): each file holds rows its writer held.
  bool held = false;
  std::vector<FileRecord> files;
};

// A data-parallel loop's table of an array (distributed/server_arrays.h): the sum of every
// worker's updates to the array in data-parallel loops with this staleness. Its rows are in the
// servers' files; the workers create the table again on resume.
struct DataParallelTable {
  int64_t array = 0;
  int staleness = 0;
  bool operator==(const DataParallelTable&) const = default;
};

struct Manifest {
  int64_t loop = 0;  // loops completed before the checkpoint
  int workers = 1;   // workers of the job that wrote it (restoring needs no particular count)
  // The call site of every completed loop (indices into `sites`), checked while replaying.
  std::vector<std::string> sites;
  std::vector<int32_t> site_of_loop;
  // After every completed loop: the state of each live accumulator (in creation order), as
  // bytes (AccumulatorBase::State; a format-2 manifest holds values, which SetState takes too).
  std::vector<std::vector<std::string>> accumulators;
  std::vector<ArrayRecord> arrays;
  // Every server's file of its tables (`ranges` holds the server's rank), in server order.
  std::vector<FileRecord> server_files;
  // The data-parallel tables whose rows are in `server_files`.
  std::vector<DataParallelTable> data_parallel_tables;
};

std::string EncodeManifest(const Manifest& m);
// DataLoss (naming `where`) for anything that is not a manifest this code wrote.
Result<Manifest> DecodeManifest(std::string_view text, const std::string& where);

// DIR/ckpt-<loop, 12 digits>.
std::string CheckpointPath(const std::string& dir, int64_t loop);

// Creates `dir` (and missing parents) if needed and checks that files can be created in it.
// InvalidArgument naming the directory and the reason otherwise.
Status PrepareDirectory(const std::string& dir);

// Writes the concatenation of `pieces` as `dir/name` atomically (temporary name, fsync, rename)
// and returns its size and crc32 (`ranges` is left empty for the caller).
Result<FileRecord> WriteDataFile(const std::string& dir, const std::string& name,
                                 const std::vector<std::span<const char>>& pieces);
// Writes the manifest last: fsyncs `dir` (so that the data files' renames are durable), then the
// manifest under a temporary name, fsync, rename to MANIFEST, fsync `dir` again.
Status WriteManifest(const std::string& dir, const Manifest& m);

// Reads `dir/record.name` into `out` (resized), checking its size and crc32: DataLoss naming the
// file when it is missing, short or damaged.
Status ReadDataFile(const std::string& dir, const FileRecord& record, std::string* out);
// The same, straight into `pieces` (whose sizes must add up to record.bytes), in order, so that
// a large file is never held twice.
Status ReadDataFileInto(const std::string& dir, const FileRecord& record,
                        const std::vector<std::span<char>>& pieces);

struct Found {
  std::string path;  // the checkpoint's directory
  Manifest manifest;
};
// The complete checkpoint (a MANIFEST that decodes) with the most loops in `dir`, or nullopt.
// Incomplete or undecodable ones are skipped, each with a line in `notes`.
Result<std::optional<Found>> FindLatest(const std::string& dir, std::vector<std::string>* notes);
// Whether `dir` holds any checkpoint directory, complete or not.
bool HasCheckpoints(const std::string& dir);

// Removes every checkpoint directory of `dir` except the `keep` newest complete ones and the
// incomplete ones newer than all of those (possibly being written). Errors are ignored (a
// checkpoint left behind costs only disk space).
void Prune(const std::string& dir, int keep);
// Removes the checkpoint directories of loops after `loop` (left by a run that crashed after the
// checkpoint a resumed run starts from).
void RemoveAfter(const std::string& dir, int64_t loop);

}  // namespace tessera::internal::checkpoint

#endif  // TESSERA_RUNTIME_SRC_CHECKPOINT_CHECKPOINT_STORE_H_
