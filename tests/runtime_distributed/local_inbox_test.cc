// LocalInbox's checks (runtime/src/distributed/local_inbox.h): which unix-socket endpoints a peer
// connects to without CURVE, and what names a host. The mesh over them: peer_mesh_test.cc.
#include "distributed/local_inbox.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <zmq.hpp>

namespace tessera::internal {
namespace {

namespace fs = std::filesystem;

// A fresh directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "tessera-local-inbox-XXXXXX").string();
    EXPECT_NE(::mkdtemp(pattern.data()), nullptr);
    path_ = pattern;
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(LocalInboxTest, OnlyADirectoryOfThisUserClosedToOthersIsPrivate) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "d";
  fs::create_directory(dir);
  const std::string endpoint = "ipc://" + (dir / "inbox").string();
  ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);
  EXPECT_TRUE(PrivateToThisUser(endpoint));
  ASSERT_EQ(::chmod(dir.c_str(), 0750), 0);
  EXPECT_FALSE(PrivateToThisUser(endpoint)) << "group may enter";
  ASSERT_EQ(::chmod(dir.c_str(), 0701), 0);
  EXPECT_FALSE(PrivateToThisUser(endpoint)) << "others may enter";
  ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);
  fs::create_directory_symlink(dir, tmp.path() / "link");
  EXPECT_FALSE(PrivateToThisUser("ipc://" + (tmp.path() / "link" / "inbox").string()))
      << "a symlink";
  EXPECT_FALSE(PrivateToThisUser("ipc://" + (tmp.path() / "missing" / "inbox").string()));
  EXPECT_FALSE(PrivateToThisUser("tcp://127.0.0.1:5555"));
  EXPECT_FALSE(PrivateToThisUser("ipc://inbox"));
}

TEST(LocalInboxTest, BindMakesAPrivateDirectoryAndRemoveTakesItAway) {
  TempDir tmp;
  ASSERT_EQ(::setenv("TMPDIR", tmp.path().c_str(), 1), 0);
  zmq::context_t zmq;
  zmq::socket_t inbox(zmq, zmq::socket_type::pull);
  inbox.set(zmq::sockopt::linger, 0);
  Result<LocalInbox> local = LocalInbox::Bind(inbox);
  ::unsetenv("TMPDIR");
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  const fs::path dir = local->directory();
  EXPECT_EQ(dir.parent_path(), tmp.path());
  EXPECT_TRUE(dir.filename().string().starts_with("tessera-job-" + std::to_string(::getpid())));
  EXPECT_EQ(local->endpoint(), "ipc://" + (dir / "inbox").string());
  EXPECT_TRUE(PrivateToThisUser(local->endpoint()));
  EXPECT_TRUE(fs::exists(dir / "inbox"));
  // Reachable without CURVE.
  zmq::socket_t out(zmq, zmq::socket_type::push);
  out.set(zmq::sockopt::linger, 0);
  out.connect(local->endpoint());
  out.send(zmq::str_buffer("hello"), zmq::send_flags::none);
  zmq::message_t got;
  ASSERT_TRUE(inbox.recv(got));
  EXPECT_EQ(got.to_string(), "hello");
  local->Remove();
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_EQ(local->directory(), "");
  local->Remove();  // idempotent
}

TEST(LocalInboxTest, ABindThatCannotBeMadeIsAnErrorLeavingNothing) {
  TempDir tmp;
  // Longer than a unix socket's path may be.
  const fs::path deep = tmp.path() / std::string(120, 'x');
  fs::create_directory(deep);
  ASSERT_EQ(::setenv("TMPDIR", deep.c_str(), 1), 0);
  zmq::context_t zmq;
  zmq::socket_t inbox(zmq, zmq::socket_type::pull);
  Result<LocalInbox> local = LocalInbox::Bind(inbox);
  ::unsetenv("TMPDIR");
  ASSERT_FALSE(local.ok());
  EXPECT_NE(local.status().message().find("cannot bind ipc://"), std::string::npos)
      << local.status().ToString();
  EXPECT_TRUE(fs::is_empty(deep));
  ASSERT_EQ(::setenv("TMPDIR", (tmp.path() / "missing").c_str(), 1), 0);
  local = LocalInbox::Bind(inbox);
  ::unsetenv("TMPDIR");
  ASSERT_FALSE(local.ok());
  EXPECT_NE(local.status().message().find("cannot create a directory"), std::string::npos)
      << local.status().ToString();
}

TEST(LocalInboxTest, TheHostIsThisBootNamespacesAndUser) {
  const std::string host = HostIdentity();
  ASSERT_FALSE(host.empty()) << "Linux has /proc/sys/kernel/random/boot_id and /proc/self/ns";
  EXPECT_NE(host.find("mnt:["), std::string::npos) << host;
  EXPECT_NE(host.find("net:["), std::string::npos) << host;
  EXPECT_TRUE(host.ends_with(" uid " + std::to_string(::geteuid()))) << host;
  EXPECT_EQ(HostIdentity(), host);
}

}  // namespace
}  // namespace tessera::internal
