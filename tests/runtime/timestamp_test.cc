// Timestamp columns of rating files: numbers and ISO 8601 dates pass (and are ignored), anything
// else is an error naming the line.
#include "input/timestamp.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "tessera/tessera.h"

namespace tessera {
namespace {

TEST(TimestampTest, NumbersAndIsoDatesAreTimestamps) {
  for (const char* ok :
       {"881250949", "+881250949", "881250949.25", "1.1e9", "0", "2005-09-06", "2005-09-06 13:45",
        "2005-09-06T13:45:07", "2005-09-06T13:45:07.125Z", "2005-09-06T13:45:07+02:00",
        "2005-09-06 13:45:07-0530", "2016-12-31T23:59:60Z"}) {
    EXPECT_TRUE(internal::IsTimestamp(ok)) << ok;
  }
  for (const char* bad : {"", "yesterday", "nan", "inf", "2005-13-01", "2005-09-32", "2005-9-6",
                          "2005-09-06T24:00", "2005-09-06T13", "2005-09-06T13:45:07.",
                          "2005-09-06 13:45 UTC", "2005-09-06T13:45+2", "12:30", "1e400"}) {
    EXPECT_FALSE(internal::IsTimestamp(bad)) << bad;
  }
}

TEST(TimestampTest, LoaderAcceptsNonIntegerTimestamps) {
  const auto dir = std::filesystem::path(::testing::TempDir()) /
                   ("tessera_timestamp_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string csv = (dir / "r.csv").string();
  std::ofstream(csv) << "user,item,rating,date\n1,10,4,2005-09-06\n2,10,3.5,2005-09-06 13:45:07\n"
                        "2,20,1,1.1e9\n";
  ContextOptions o;
  o.read_environment = false;
  Context ctx(std::move(o));
  auto d = load_triples<float>(ctx, csv);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->train.nnz(), 3);
  std::ofstream(csv) << "1,10,4,2005-09-06\n2,10,3,last tuesday\n";
  d = load_triples<float>(ctx, csv);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("r.csv:2: timestamp 'last tuesday' is neither a number nor "
                                      "an ISO 8601 date"),
            std::string::npos)
      << d.status().ToString();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessera
