// The servers' side of checkpoints (server/src/server_checkpoint.cc) through the runtime's line to
// them (checkpoint/server_tables.h): each server writes its own shard of the named tables, with
// the size and crc32 the manifest records; a job with another number of servers, whose table has
// another id, loads every file and ends with the same values; damage, foreign names and a server
// without a checkpoint directory are clear errors.
#include "checkpoint/server_tables.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "tests/ps/in_process_cluster.h"

namespace tessera::internal::checkpoint {
namespace {

using tessera::testing::ClusterOptions;
using tessera::testing::InProcessCluster;
using tessera::testing::TestTable;

constexpr uint64_t kRows = 100;
constexpr uint32_t kWidth = 4;
constexpr char kCheckpoint[] = "ckpt-000000000007";

class ServerTablesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/server_tables_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_EQ(mkdir((dir_ + "/" + kCheckpoint).c_str(), 0755), 0);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  ClusterOptions Options(int servers) const {
    ClusterOptions o;
    o.num_servers = servers;
    o.num_workers = 1;
    o.tcp = true;  // the line to the servers has a ZeroMQ context of its own
    o.checkpoint_dir = dir_;
    return o;
  }

  static std::unique_ptr<ServerTables> Connect(InProcessCluster& job) {
    auto tables = ServerTables::Connect(job.coordinator().endpoint(), job.options().secret,
                                        std::chrono::seconds(30));
    EXPECT_TRUE(tables.ok()) << tables.status().ToString();
    return tables.ok() ? std::move(tables).value() : nullptr;
  }

  std::string dir_;
};

TEST_F(ServerTablesTest, EachServerWritesItsShardAndAnotherJobRestoresIt) {
  std::vector<int64_t> want(kRows * kWidth);
  std::iota(want.begin(), want.end(), 1);
  std::vector<FileRecord> files;
  {
    InProcessCluster job(Options(2));
    Client& c = job.client(0);
    ASSERT_TRUE(
        c.CreateTable(TestTable(3, "relaxed-array-5", ValueType::kInt64, kRows, kWidth)).ok());
    ASSERT_TRUE(c.CreateTable(TestTable(4, "not-saved", ValueType::kInt64, kRows, kWidth)).ok());
    std::vector<RowId> rows(kRows);
    std::iota(rows.begin(), rows.end(), RowId{0});
    ASSERT_TRUE(c.IncRows<int64_t>(3, rows, want).ok());
    ASSERT_TRUE(c.IncRows<int64_t>(4, rows, want).ok());
    ASSERT_TRUE(c.Clock(0).ok());
    std::vector<int64_t> seen(kRows * kWidth);
    ASSERT_TRUE(c.GetRows<int64_t>(0, 3, rows, seen).ok());  // applied everywhere
    ASSERT_EQ(seen, want);

    auto tables = Connect(job);
    ASSERT_NE(tables, nullptr);
    auto saved = tables->Save(kCheckpoint, {"relaxed-array-5"});
    ASSERT_TRUE(saved.ok()) << saved.status().ToString();
    files = *saved;
  }
  ASSERT_EQ(files.size(), 2u);
  for (size_t i = 0; i < files.size(); ++i) {
    EXPECT_EQ(files[i].name, "tables-s" + std::to_string(i) + ".bin");
    std::string bytes;
    EXPECT_TRUE(ReadDataFile(dir_ + "/" + kCheckpoint, files[i], &bytes).ok());  // size, crc32
    EXPECT_FALSE(std::filesystem::exists(dir_ + "/" + kCheckpoint + "/" + files[i].name + ".tmp"));
  }

  // Three servers now, and the table has another id: the rows hash elsewhere.
  InProcessCluster job(Options(3));
  auto tables = Connect(job);
  ASSERT_NE(tables, nullptr);
  Status restored = tables->Restore(kCheckpoint, files);
  ASSERT_TRUE(restored.ok()) << restored.ToString();
  Client& c = job.client(0);
  ASSERT_TRUE(
      c.CreateTable(TestTable(9, "relaxed-array-5", ValueType::kInt64, kRows, kWidth)).ok());
  ASSERT_TRUE(c.CreateTable(TestTable(4, "not-saved", ValueType::kInt64, kRows, kWidth)).ok());
  std::vector<RowId> rows(kRows);
  std::iota(rows.begin(), rows.end(), RowId{0});
  std::vector<int64_t> got(kRows * kWidth);
  ASSERT_TRUE(c.GetRows<int64_t>(0, 9, rows, got).ok());
  EXPECT_EQ(got, want);
  ASSERT_TRUE(c.GetRows<int64_t>(0, 4, rows, got).ok());
  EXPECT_EQ(got, std::vector<int64_t>(kRows * kWidth, 0));  // not part of the checkpoint
}

TEST_F(ServerTablesTest, DamageForeignNamesAndMissingDirectoriesAreClearErrors) {
  std::vector<FileRecord> files;
  {
    InProcessCluster job(Options(1));
    ASSERT_TRUE(job.client(0)
                    .CreateTable(TestTable(0, "relaxed-array-1", ValueType::kFloat64, kRows, 1))
                    .ok());
    ASSERT_TRUE(job.client(0).Inc<double>(0, 3, 0, 2.5).ok());
    ASSERT_TRUE(job.client(0).Clock(0).ok());
    auto tables = Connect(job);
    ASSERT_NE(tables, nullptr);
    auto saved = tables->Save(kCheckpoint, {"relaxed-array-1"});
    ASSERT_TRUE(saved.ok()) << saved.status().ToString();
    files = *saved;
    // A name that is not a checkpoint's (it could leave the directory) is refused.
    auto escaped = tables->Save("../elsewhere", {"relaxed-array-1"});
    EXPECT_EQ(escaped.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(escaped.status().message().find("is not a checkpoint's name"), std::string::npos);
  }
  const std::string path = dir_ + "/" + kCheckpoint + "/" + files[0].name;
  {
    std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(files[0].bytes / 2));
    io.put('\x7f');
  }
  InProcessCluster job(Options(1));
  auto tables = Connect(job);
  ASSERT_NE(tables, nullptr);
  Status damaged = tables->Restore(kCheckpoint, files);
  EXPECT_EQ(damaged.code(), StatusCode::kDataLoss) << damaged.ToString();
  EXPECT_NE(damaged.message().find(path + ": crc32"), std::string::npos) << damaged.ToString();
  EXPECT_NE(damaged.message().find("the file is damaged"), std::string::npos);

  std::vector<FileRecord> foreign = files;
  foreign[0].name = "../../etc/passwd";
  Status refused = tables->Restore(kCheckpoint, foreign);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.ToString();

  ClusterOptions none = Options(1);
  none.checkpoint_dir.clear();
  InProcessCluster without(none);
  auto line = Connect(without);
  ASSERT_NE(line, nullptr);
  auto saved = line->Save(kCheckpoint, {"relaxed-array-1"});
  EXPECT_EQ(saved.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(saved.status().message().find("has no checkpoint directory"), std::string::npos)
      << saved.status().ToString();
}

}  // namespace
}  // namespace tessera::internal::checkpoint
