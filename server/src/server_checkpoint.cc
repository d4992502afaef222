// A server's part of checkpoints (docs/faults.md, "Checkpoints, resume and restarts"): it
// writes its own shard of the tables a checkpoint names (SaveTables) into
// DIR/ckpt-N/tables-s<rank>.bin, atomically (temporary name, fsync, rename) and answers with the
// file's size and crc32 for the checkpoint's MANIFEST; a resumed job's servers load every
// server's file of the checkpoint (RestoreTables), checking sizes and crc32s, and fill each table
// from it when the table is created again, keeping the rows that hash to them under the new job's
// table id and server count.
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "server_impl.h"
#include "tessera/common/checked_file.h"
#include "tessera/table/wire.h"
#include "tessera/transport/message.h"

namespace tessera {
namespace {

// A checkpoint's directory name as the runtime makes it (checkpoint_store.h): nothing that could
// leave the checkpoint directory.
bool IsCheckpointName(const std::string& name) {
  static const std::regex kName("ckpt-[0-9]{12}");
  return std::regex_match(name, kName);
}

// A file name a RestoreTables may list: one this code writes.
bool IsTablesFileName(const std::string& name) {
  static const std::regex kName("tables-s[0-9]{1,6}\\.bin");
  return std::regex_match(name, kName);
}

}  // namespace

Result<std::string> Server::Impl::CheckpointDirectory(const std::string& checkpoint) const {
  if (options_.checkpoint_dir.empty()) {
    return Status::FailedPrecondition(fmt::format(
        "server {} has no checkpoint directory (TESSERA_CHECKPOINT_DIR)", options_.rank));
  }
  if (!IsCheckpointName(checkpoint)) {
    return Status::InvalidArgument(fmt::format("'{}' is not a checkpoint's name", checkpoint));
  }
  return options_.checkpoint_dir + "/" + checkpoint;
}

void Server::Impl::OnSaveTables(const std::string& identity, uint64_t request_id,
                                proto::SaveTables::Reader save) {
  if (save.getSecret() != proof_) {
    Reject(identity, request_id, proto::ErrorCode::UNAUTHENTICATED, "wrong job secret");
    return;
  }
  Result<std::string> dir = CheckpointDirectory(save.getCheckpoint().cStr());
  if (!dir.ok()) {
    Reject(identity, request_id, dir.status());
    return;
  }
  std::vector<const ShardTable*> chosen;
  for (const auto name : save.getTables()) {
    for (const auto& [id, t] : tables_) {
      if (t.spec.name == name.cStr()) chosen.push_back(&t);
    }
  }
  std::sort(chosen.begin(), chosen.end(),
            [](const ShardTable* a, const ShardTable* b) { return a->spec.id < b->spec.id; });
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<proto::SavedTables>();
  root.setServer(static_cast<uint32_t>(options_.rank));
  root.setNumServers(num_servers_);
  auto tables = root.initTables(static_cast<unsigned>(chosen.size()));
  uint64_t rows_written = 0;
  for (unsigned i = 0; i < chosen.size(); ++i) {
    const ShardTable& t = *chosen[i];
    TableSpecToProto(t.spec, tables[i].initSpec());
    auto rows = tables[i].initRows(static_cast<unsigned>(t.rows.size()));
    unsigned r = 0;
    t.rows.ForEach([&](uint64_t id, const StoredRow& row) {
      rows[r].setTable(t.spec.id);
      rows[r].setRow(id);
      row.values.ToProto(rows[r].initValues());
      ++r;
    });
    rows_written += r;
  }
  const kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  const auto bytes = words.asChars();
  const std::string name = fmt::format("tables-s{}.bin", options_.rank);
  const std::string path = *dir + "/" + name;
  if (Status s = WriteFileAtomically(path, {std::span<const char>(bytes.begin(), bytes.size())});
      !s.ok()) {
    Reject(identity, request_id, s);
    return;
  }
  log_->info("checkpoint {}: {} table(s), {} rows ({} B) written to {}",
             save.getCheckpoint().cStr(), chosen.size(), rows_written, bytes.size(), path);
  OutgoingMessage reply(options_.rank, request_id);
  auto file = reply.envelope().getBody().initTablesFile();
  file.setServer(static_cast<uint32_t>(options_.rank));
  file.setName(name);
  file.setBytes(bytes.size());
  file.setCrc32(Crc32(std::span<const char>(bytes.begin(), bytes.size())));
  Send(identity, reply);
}

Status Server::Impl::LoadTablesFile(const std::string& dir, proto::TablesFile::Reader file) {
  const std::string name = file.getName().cStr();
  if (!IsTablesFileName(name)) {
    return Status::InvalidArgument(fmt::format("'{}' is not a tables file's name", name));
  }
  const std::string path = dir + "/" + name;
  Result<std::string> text = ReadCheckedFile(path, file.getBytes(), file.getCrc32());
  if (!text.ok()) return text.status();
  if (text->size() % sizeof(capnp::word) != 0) {
    return Status::DataLoss(fmt::format("{}: not a tables file", path));
  }
  kj::Array<capnp::word> words = kj::heapArray<capnp::word>(text->size() / sizeof(capnp::word));
  std::memcpy(words.begin(), text->data(), text->size());
  capnp::ReaderOptions limits;
  // Each row's values are read twice (checked, then copied): a table of many rows reads the
  // file's words about twice over.
  limits.traversalLimitInWords = 4 * words.size() + 1024;
  capnp::FlatArrayMessageReader reader(words, limits);
  auto saved = reader.getRoot<proto::SavedTables>();
  for (auto table : saved.getTables()) {
    const TableSpec spec = TableSpecFromProto(table.getSpec());
    if (Status s = spec.Validate(); !s.ok()) {
      return Status::DataLoss(fmt::format("{}: {}", path, s.message()));
    }
    auto [it, fresh] = restored_.try_emplace(spec.name);
    RestoredTable& r = it->second;
    if (fresh) {
      r.spec = spec;
    } else if (r.spec.value_type != spec.value_type || r.spec.num_rows != spec.num_rows ||
               r.spec.width != spec.width || r.spec.sparse != spec.sparse) {
      return Status::DataLoss(
          fmt::format("{}: table '{}' differs from another server's file", path, spec.name));
    }
    for (auto row : table.getRows()) {
      Result<RowValues> values = RowValues::FromProto(row.getValues(), spec);
      if (!values.ok() || row.getRow() >= spec.num_rows) {
        return Status::DataLoss(fmt::format("{}: a malformed row of table '{}'", path, spec.name));
      }
      r.rows.emplace_back(row.getRow(), std::move(values).value());
    }
  }
  return Status::Ok();
}

void Server::Impl::OnRestoreTables(const std::string& identity, uint64_t request_id,
                                   proto::RestoreTables::Reader restore) {
  if (restore.getSecret() != proof_) {
    Reject(identity, request_id, proto::ErrorCode::UNAUTHENTICATED, "wrong job secret");
    return;
  }
  Result<std::string> dir = CheckpointDirectory(restore.getCheckpoint().cStr());
  if (!dir.ok()) {
    Reject(identity, request_id, dir.status());
    return;
  }
  restored_.clear();
  for (auto file : restore.getFiles()) {
    Status s;
    try {
      s = LoadTablesFile(*dir, file);
    } catch (const kj::Exception& e) {
      s = Status::DataLoss(fmt::format("{}/{}: not a tables file ({})", *dir, file.getName().cStr(),
                                       e.getDescription().cStr()));
    }
    if (!s.ok()) {
      restored_.clear();
      Reject(identity, request_id, s);
      return;
    }
  }
  // Tables created before the restore (none in the runtime's order of things) are filled now.
  uint32_t loaded = 0;
  for (auto& [id, t] : tables_) loaded += FillRestored(t) ? 1 : 0;
  log_->info("checkpoint {}: {} table(s) to restore, {} filled at once",
             restore.getCheckpoint().cStr(), restored_.size() + loaded, loaded);
  OutgoingMessage reply(options_.rank, request_id);
  reply.envelope().getBody().initTableAck().setId(static_cast<uint32_t>(restored_.size() + loaded));
  Send(identity, reply);
}

bool Server::Impl::FillRestored(ShardTable& t) {
  auto it = restored_.find(t.spec.name);
  if (it == restored_.end()) return false;
  const TableSpec& was = it->second.spec;
  if (was.value_type != t.spec.value_type || was.num_rows != t.spec.num_rows ||
      was.width != t.spec.width || was.sparse != t.spec.sparse) {
    log_->error(
        "table '{}' was created with another shape or type than in the checkpoint; not restored",
        t.spec.name);
    restored_.erase(it);
    return false;
  }
  uint64_t kept = 0;
  for (auto& [row, values] : it->second.rows) {
    if (ServerOfRow(t.spec.id, row, num_servers_) != static_cast<uint32_t>(options_.rank)) continue;
    t.RowToUpdate(row).values = std::move(values);
    ++kept;
  }
  log_->info("table {} '{}': {} rows restored from the checkpoint", t.spec.id, t.spec.name, kept);
  restored_.erase(it);
  return true;
}

}  // namespace tessera
