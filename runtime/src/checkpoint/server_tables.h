// ServerTables: the checkpoint writer's line to the parameter servers, so that each server
// writes (and on resume reads back) its own shard of the tables a checkpoint holds -- the
// relaxed arrays' tables -- instead of a worker gathering them (docs/faults.md,
// "Checkpoints, resume and restarts").
//
// It is a connection of its own (the worker's parameter-server client belongs to the executor
// that runs the loops): it asks the coordinator for the servers' endpoints (MembershipQuery),
// then sends SaveTables / RestoreTables to every server, each carrying the job secret's proof,
// and waits for every answer.
//
// Thread safety: none; the thread that writes checkpoints.
#ifndef TESSERA_RUNTIME_SRC_CHECKPOINT_SERVER_TABLES_H_
#define TESSERA_RUNTIME_SRC_CHECKPOINT_SERVER_TABLES_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "tessera/common/status.h"

namespace tessera::internal::checkpoint {

// The name the distributed executor gives a relaxed array's table (distributed/server_arrays.cc):
// how a checkpoint names the tables it asks the servers for.
std::string RelaxedTableName(int64_t array_id);
// The same for a data-parallel table (DataParallelTable in checkpoint_store.h).
std::string DataParallelTableName(int64_t array_id, int staleness);

class ServerTables {
 public:
  // The coordinator's endpoint and the job secret (as in the worker's JobEnvironment).
  // `timeout`: for each answer (writing a large table takes a while).
  static Result<std::unique_ptr<ServerTables>> Connect(const std::string& coordinator,
                                                       const std::string& secret,
                                                       std::chrono::milliseconds timeout);
  ~ServerTables();

  // Every server writes its shard of `tables` into the checkpoint `checkpoint` ("ckpt-N", a
  // directory of its TESSERA_CHECKPOINT_DIR, which must be the workers' directory): one file
  // each, returned in server order (FileRecord::ranges holds the server's rank).
  Result<std::vector<FileRecord>> Save(const std::string& checkpoint,
                                       const std::vector<std::string>& tables);
  // Every server loads `files` (every server's of `checkpoint`), checking sizes and crc32s, and
  // fills each table from them when it is created next. DataLoss naming a damaged file.
  Status Restore(const std::string& checkpoint, const std::vector<FileRecord>& files);

  class Impl;

 private:
  explicit ServerTables(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::internal::checkpoint

#endif  // TESSERA_RUNTIME_SRC_CHECKPOINT_SERVER_TABLES_H_
