// Checkpoints of sparse arrays a distributed job keeps partitioned (RecordPartition,
// docs/runtime.md "Partitioned data"): each worker writes the elements it holds -- keys, values and
// places in the serial order, straight from the array's storage -- as one file of the checkpoint
// (RecordShare in checkpoint_store.h), and on resume reads back its own share, or with another
// number of workers every share, keeping the elements of its key range.
//
// Thread safety: none needed; functions touch only the array and paths they are given.
#ifndef TESSERA_RUNTIME_SRC_CHECKPOINT_RECORD_SHARES_H_
#define TESSERA_RUNTIME_SRC_CHECKPOINT_RECORD_SHARES_H_

#include <optional>
#include <string>

#include "checkpoint/checkpoint_store.h"
#include "tessera/common/status.h"
#include "tessera/executor.h"

namespace tessera::internal::checkpoint {

// Bytes per element of a share file of `a`: its keys, its value and its place.
int64_t ShareElementBytes(const ArrayBase& a);

// Writes what this worker (`worker`) holds of `a` as `dir/name`, atomically.
// REQUIRES: a.record_partition().
Result<FileRecord> WriteRecordShare(const std::string& dir, const std::string& name,
                                    const ArrayBase& a, int worker);

// The elements of the share `file` (of `dir`) whose key[keep->dim] is in [keep->lo, keep->hi)
// (all of them without `keep`), in the serial order, checked against `a`'s shape. DataLoss
// naming the file when it is damaged or does not fit `a`.
Result<RecordBatch> ReadRecordShare(const std::string& dir, const FileRecord& file,
                                    const ArrayBase& a,
                                    const std::optional<RecordPartition>& keep);

}  // namespace tessera::internal::checkpoint

#endif  // TESSERA_RUNTIME_SRC_CHECKPOINT_RECORD_SHARES_H_
