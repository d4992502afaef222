// What the distributed executor learns from a schedule about the arrays a loop writes
// (LoopSchedule::written, space_written, writes_unknown): it decides which elements a step
// compares and sends, so a wrong reading would silently drop changes.
#include <gtest/gtest.h>

#include <string>

#include "schedule/loop_schedule.h"

namespace tessera::internal {
namespace {

std::string Site(const std::string& arrays, const std::string& conservative = "[]") {
  return R"({"version": 1, "strategy": "2d", "space": {"rank": 2}, "space_dim": 0, "time_dim": 1,
             "skew": null, "data_parallel": {"permitted": false}, "staleness": 0,
             "dependences": [], "conservative": )" +
         conservative + R"(, "arrays": )" + arrays + "}";
}

TEST(WrittenArraysTest, LocalAndRotatingArraysAreWrittenInTheirBlocksRowsWithTheHalo) {
  auto s = ParseLoopSchedule(Site(R"([
    {"name": "R", "placement": "local", "kind": "dist_array", "element_bytes": 4, "rank": 2,
     "array_dim": 0, "key_dim": 0, "halo": [0, 0], "read": true, "write": false},
    {"name": "W", "placement": "local", "kind": "dist_array", "element_bytes": 4, "rank": 2,
     "array_dim": 0, "key_dim": 0, "halo": [-1, 2], "read": true, "write": true},
    {"name": "H", "placement": "rotating", "kind": "dist_array", "element_bytes": 8, "rank": 1,
     "array_dim": 0, "key_dim": 1, "halo": [0, 0], "read": true, "write": true},
    {"name": "t", "placement": "servers", "kind": "relaxed", "element_bytes": 8, "rank": 1,
     "read": true, "write": true}])"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_FALSE(s->writes_unknown);
  EXPECT_FALSE(s->space_written);
  ASSERT_EQ(s->written.size(), 2u);  // relaxed arrays live on the servers, not in patches
  EXPECT_EQ(s->written[0].element_bytes, 4);
  EXPECT_EQ(s->written[0].row_key_dim, 0);
  EXPECT_EQ(s->written[0].halo_lo, -1);
  EXPECT_EQ(s->written[0].halo_hi, 2);
  EXPECT_EQ(s->written[1].element_bytes, 8);
  EXPECT_EQ(s->written[1].row_key_dim, 1);
}

TEST(WrittenArraysTest, ArraysNotPartitionedAlongTheirRowsAreWrittenAnywhere) {
  auto s = ParseLoopSchedule(Site(R"([
    {"name": "S", "placement": "local", "kind": "dist_array", "element_bytes": 4, "rank": 2,
     "array_dim": 0, "key_dim": 0, "halo": [0, 0], "read": true, "write": true},
    {"name": "C", "placement": "local", "kind": "dist_array", "element_bytes": 4, "rank": 2,
     "array_dim": 1, "key_dim": 0, "halo": [0, 0], "read": true, "write": true},
    {"name": "G", "placement": "servers", "kind": "dist_array", "element_bytes": 4, "rank": 1,
     "read": true, "write": true}])"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->space_written);
  ASSERT_EQ(s->written.size(), 3u);
  EXPECT_EQ(s->written[1].row_key_dim, -1);  // partitioned along its columns: rows anywhere
  EXPECT_EQ(s->written[2].row_key_dim, -1);  // on the servers
}

TEST(WrittenArraysTest, MayAliasNamesOrUnknownSizesMakeEveryArrayCount) {
  auto alias = ParseLoopSchedule(Site(R"([
    {"name": "R", "placement": "local", "kind": "dist_array", "element_bytes": 4, "rank": 2,
     "array_dim": 0, "key_dim": 0, "halo": [0, 0], "read": true, "write": false},
    {"name": "ref", "placement": "servers", "kind": "may_alias", "element_bytes": 4, "rank": 2,
     "read": true, "write": true}])"));
  ASSERT_TRUE(alias.ok());
  EXPECT_TRUE(alias->writes_unknown);
  auto unknown_size = ParseLoopSchedule(Site(R"([
    {"name": "R", "placement": "local", "kind": "dist_array", "element_bytes": 4, "rank": 2,
     "array_dim": 0, "key_dim": 0, "halo": [0, 0], "read": true, "write": false},
    {"name": "X", "placement": "local", "kind": "dist_array", "element_bytes": 0, "rank": 2,
     "array_dim": 0, "key_dim": 0, "halo": [0, 0], "read": true, "write": true}])"));
  ASSERT_TRUE(unknown_size.ok());
  EXPECT_TRUE(unknown_size->writes_unknown);
  auto no_list = ParseLoopSchedule(R"({"version": 1, "strategy": "1d", "space": {"rank": 1},
      "space_dim": 0, "time_dim": null, "skew": null, "data_parallel": {"permitted": false},
      "staleness": 0, "dependences": []})");
  ASSERT_TRUE(no_list.ok()) << no_list.status().ToString();
  EXPECT_TRUE(no_list->writes_unknown);
}

TEST(WrittenArraysTest, ConservativeNotesAreAlreadyRecordedAccessesAndChangeNothing) {
  auto s = ParseLoopSchedule(Site(R"([
    {"name": "R", "placement": "local", "kind": "dist_array", "element_bytes": 4, "rank": 2,
     "array_dim": 0, "key_dim": 0, "halo": [0, 0], "read": true, "write": false}])",
                                  R"(["the DataParallel staleness is not a compile-time constant"])"));
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->writes_unknown);
  EXPECT_TRUE(s->written.empty());
}

}  // namespace
}  // namespace tessera::internal
