#include "tessera/launcher/hostfile.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace tessera::launcher {
namespace {

TEST(HostfileTest, ParsesHostsSlotsCommentsAndBlankLines) {
  Result<std::vector<HostEntry>> hosts = ParseHostfile(
      "# the cluster\n"
      "node1 slots=4\n"
      "\n"
      "   10.0.0.2   # one slot\n"
      "node3\tslots=2\r\n",
      "hosts");
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  ASSERT_EQ(hosts->size(), 3u);
  EXPECT_EQ((*hosts)[0].host, "node1");
  EXPECT_EQ((*hosts)[0].slots, 4);
  EXPECT_EQ((*hosts)[1].host, "10.0.0.2");
  EXPECT_EQ((*hosts)[1].slots, 1);
  EXPECT_EQ((*hosts)[2].host, "node3");
  EXPECT_EQ((*hosts)[2].slots, 2);
}

TEST(HostfileTest, ErrorsNameTheFileAndLine) {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"a\nb\nc slot=2\n", "my.hosts:3: unknown field 'slot=2'"},
      {"a slots=0\n", "my.hosts:1: slots must be a positive integer, got '0'"},
      {"# x\na slots=two\n", "my.hosts:2: slots must be a positive integer, got 'two'"},
      {"a slots=3x\n", "my.hosts:1: slots must be a positive integer"},
      {"a\nslots=2\n", "my.hosts:2: expected a host name first"},
      {"# only comments\n\n", "my.hosts: no hosts"},
      {"", "my.hosts: no hosts"},
  };
  for (const Case& c : cases) {
    Result<std::vector<HostEntry>> hosts = ParseHostfile(c.text, "my.hosts");
    ASSERT_FALSE(hosts.ok()) << c.text;
    EXPECT_EQ(hosts.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(hosts.status().message().find(c.expected), std::string::npos)
        << "got: " << hosts.status().message() << "\nwanted: " << c.expected;
  }
}

TEST(HostfileTest, ReadsAFileAndReportsUnreadableOnes) {
  char dir[] = "/tmp/tessera-hostfile-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string path = std::string(dir) + "/hosts";
  std::ofstream(path) << "h1 slots=2\nh2\n";
  Result<std::vector<HostEntry>> hosts = ReadHostfile(path);
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  EXPECT_EQ(hosts->size(), 2u);

  Result<std::vector<HostEntry>> missing = ReadHostfile(std::string(dir) + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot read hostfile"), std::string::npos);
  // A directory is not a hostfile either.
  Result<std::vector<HostEntry>> directory = ReadHostfile(dir);
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.status().message().find("cannot read hostfile"), std::string::npos);
  unlink(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace tessera::launcher
