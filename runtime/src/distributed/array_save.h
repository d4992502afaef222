// The collective save of an array the distributed executor keeps partitioned
// (tessera::save_array and save_array_text in a distributed job; docs/programming-model.md,
// "What lives where and what it costs"): a dense array's rows (SaveRows) or a sparse array's
// records (SaveRecords).
//
// Every worker calls SaveRows at the same point of the program with the same layout (the
// executor's RowLayout is identical on every worker). Rank 0 writes the file through
// ArrayStreamWriter -- the same bytes, checksum included, as a save of a whole copy -- while the
// holders of the rows it lacks stream them to it in file order, in chunks of at most
// `chunk_bytes`, each sender at most `window` chunks ahead of what rank 0 consumed. Rows no
// worker has computed yet (a deferred factory's) are computed on rank 0 from the recipe. So rank
// 0 holds at most (workers - 1) * window chunks besides its own rows, and a sender one chunk per
// message in flight.
//
// Every worker returns rank 0's result: an error creating or writing the file fails the call on
// every worker. The first exchange checks that every worker is saving the same array to the same
// path; a worker that reached another collective instead, or left the program, fails the call
// with an error saying that save_array must be called by every worker.
//
// Thread safety: none; the thread that owns the Context.
#ifndef TESSERA_RUNTIME_SRC_DISTRIBUTED_ARRAY_SAVE_H_
#define TESSERA_RUNTIME_SRC_DISTRIBUTED_ARRAY_SAVE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "distributed/peer_mesh.h"
#include "tessera/common/status.h"
#include "tessera/executor.h"

namespace tessera::internal {

// Rows [lo, hi) of the array and the workers holding them (a bit per worker); holders == 0:
// nobody computed them yet (ArrayBase::deferred_init), rank 0 computes them.
struct SavedRows {
  int64_t lo = 0;
  int64_t hi = 0;
  uint64_t holders = 0;
};

struct RowSaveOptions {
  std::string path;
  bool text = false;  // save_array_text's format instead of save_array's
  // Largest message of rows. Default: 1 MiB (at least one row).
  size_t chunk_bytes = size_t{1} << 20;
  // Chunks a sender may send before rank 0 has taken the first of them. Default: 2.
  int window = 2;
};

// REQUIRES: `rows` covers [0, array.extent(0)) in order; every worker passes the same `rows`,
// `tag` (unused by any other exchange) and options; `array` is dense and not written meanwhile.
Status SaveRows(PeerMesh& mesh, uint64_t tag, const ArrayBase& array,
                const std::vector<SavedRows>& rows, const RowSaveOptions& options);

// The collective save of a sparse array the job keeps partitioned (RecordPartition): each worker
// holds its share in serial order; rank 0 merges the shares by place into the file, which is byte
// for byte a local save's of the whole array. A binary file takes two passes over the shares
// (places and keys, then values), a text file one; each worker sends messages of at most
// `chunk_bytes`, at most `window` ahead of rank 0's credits, so rank 0 holds at most a few chunks
// per worker besides 8 bytes per run of consecutive elements from one worker. Results and errors
// as SaveRows. REQUIRES: `array` sparse and partitioned, not written meanwhile.
Status SaveRecords(PeerMesh& mesh, uint64_t tag, const ArrayBase& array,
                   const RowSaveOptions& options);

class PartitionedArrays;

// save_array of `array` in a distributed job (Context::SavePartitioned): SaveRows for a dense
// array kept partitioned, SaveRecords for a sparse one; nullopt when the array is whole here.
// `tag` is the executor's exchange counter (advanced as every worker advances it). Collective for
// partitioned arrays.
std::optional<Status> SavePartitionedArray(PeerMesh& mesh, uint64_t* tag, PartitionedArrays& arrays,
                                           const ArrayBase& array, const std::string& path,
                                           bool text);

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_DISTRIBUTED_ARRAY_SAVE_H_
