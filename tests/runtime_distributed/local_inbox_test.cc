// LocalInbox's checks (runtime/src/distributed/local_inbox.h): which unix-socket endpoints a peer
// connects to without CURVE, and what names a host; and the round slots shared next to it
// (round_slots.h). The mesh over them: peer_mesh_test.cc.
#include "distributed/local_inbox.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "distributed/round_slots.h"

namespace tessera::internal {
namespace {

namespace fs = std::filesystem;

// A fresh directory in `parent`, removed with everything in it.
class TempDir {
 public:
  explicit TempDir(const fs::path& parent = fs::temp_directory_path()) {
    std::string pattern = (parent / "tessera-local-inbox-XXXXXX").string();
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
  EXPECT_EQ(IpcDirectory(endpoint), dir.string());
  EXPECT_EQ(IpcDirectory("tcp://127.0.0.1:5555"), "");
  EXPECT_EQ(IpcDirectory("ipc://inbox"), "");
  EXPECT_FALSE(PrivateToThisUser("tcp://127.0.0.1:5555"));
  EXPECT_FALSE(PrivateToThisUser("ipc://inbox"));
}

TEST(LocalInboxTest, BindMakesAPrivateDirectoryAndRemoveTakesItAway) {
  TempDir tmp;
  zmq::context_t zmq;
  zmq::socket_t inbox(zmq, zmq::socket_type::pull);
  inbox.set(zmq::sockopt::linger, 0);
  Result<LocalInbox> local = LocalInbox::Bind(inbox, tmp.path().string());
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
  std::ofstream(dir / "another file") << "x";  // Remove takes the directory's files too
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
  zmq::context_t zmq;
  zmq::socket_t inbox(zmq, zmq::socket_type::pull);
  Result<LocalInbox> local = LocalInbox::Bind(inbox, deep.string());
  ASSERT_FALSE(local.ok());
  EXPECT_NE(local.status().message().find("cannot bind ipc://"), std::string::npos)
      << local.status().ToString();
  EXPECT_TRUE(fs::is_empty(deep));
  local = LocalInbox::Bind(inbox, (tmp.path() / "missing").string());
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

// Where a mesh puts them (/dev/shm where there is one).
TEST(RoundSlotsTest, APeerReadsItsRegionOfTheSlotsWritten) {
  TempDir tmp(LocalInboxParent());
  const std::string path = (tmp.path() / "rounds").string();
  Result<RoundSlots> out = RoundSlots::Create(path, 3);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(fs::file_size(path), 3 * RoundSlots::kRegionBytes);
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  Result<RoundSlots> in = RoundSlots::Open(path, 2, 3);
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_blocks) * 512, 3 * RoundSlots::kHeaderBytes)
      << "no memory but the headers' before a slot is reserved";
  for (uint64_t n = 0; n < RoundSlots::kSlots; ++n) {
    EXPECT_TRUE(out->Reserve(2, n, RoundSlots::kSlotBytes));
  }
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_GE(static_cast<size_t>(st.st_blocks) * 512,
            3 * RoundSlots::kHeaderBytes + RoundSlots::kSlots * RoundSlots::kSlotBytes);
  EXPECT_FALSE(out->Reserve(2, 0, RoundSlots::kSlotBytes + 1)) << "more than a slot";
  EXPECT_FALSE(in->Reserve(0, 0, 1)) << "an opened region is read-only";
  fs::remove(path);  // mappings outlive the file
  for (uint64_t n = 0; n < 2 * RoundSlots::kSlots; ++n) {
    std::string text = "round " + std::to_string(n);
    std::copy(text.begin(), text.end(), out->slot(2, n));
    out->slot(2, n)[RoundSlots::kSlotBytes - 1] = static_cast<char>(n);
    EXPECT_EQ(std::string(in->slot(0, n), text.size()), text);
    EXPECT_EQ(in->slot(0, n)[RoundSlots::kSlotBytes - 1], static_cast<char>(n));
    if (n >= RoundSlots::kSlots) {
      EXPECT_EQ(in->slot(0, n), in->slot(0, n - RoundSlots::kSlots));
    }
  }
  EXPECT_NE(out->slot(1, 0), out->slot(2, 0));
}

// Rounds are posted in order; the peer sees each post (its size, or that it went in a message)
// once it is made, and a wait for a round returns when it is posted.
TEST(RoundSlotsTest, APeerSeesTheRoundsPostedToItsRegion) {
  TempDir tmp(LocalInboxParent());
  const std::string path = (tmp.path() / "rounds").string();
  Result<RoundSlots> out = RoundSlots::Create(path, 2);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  Result<RoundSlots> in = RoundSlots::Open(path, 1, 2);
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  uint64_t bytes = 0;
  EXPECT_FALSE(in->Posted(0, &bytes));
  in->Wait(0, std::chrono::microseconds(1000));  // times out: nothing posted
  EXPECT_FALSE(in->Posted(0, &bytes));
  out->Post(0, 0, 5);  // to the other region: not this peer's
  EXPECT_FALSE(in->Posted(0, &bytes));
  out->Post(1, 0, 123);
  ASSERT_TRUE(in->Posted(0, &bytes));
  EXPECT_EQ(bytes, 123u);
  EXPECT_FALSE(in->Posted(1, &bytes));
  out->Post(1, 1, RoundSlots::kInMessage);
  out->Post(1, 2, 0);
  ASSERT_TRUE(in->Posted(1, &bytes));
  EXPECT_EQ(bytes, RoundSlots::kInMessage);
  ASSERT_TRUE(in->Posted(2, &bytes));
  EXPECT_EQ(bytes, 0u);
  // A waiter for round 3 wakes when it is posted (the wait's timeout is far longer).
  std::thread poster([&out] { out->Post(1, 3, 77); });
  const auto start = std::chrono::steady_clock::now();
  while (!in->Posted(3, &bytes)) in->Wait(3, std::chrono::microseconds(10000000));
  poster.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(bytes, 77u);
  // Counted over every exchange, past 2^32 rounds (the count is a 32-bit futex word).
  const uint64_t far = (uint64_t{1} << 32) + 4;
  out->Post(1, far, 9);
  ASSERT_TRUE(in->Posted(far, &bytes));
  EXPECT_EQ(bytes, 9u);
  EXPECT_FALSE(in->Posted(far + 1, &bytes));
}

TEST(RoundSlotsTest, OnlyANewFileOrARoundSlotFileOfTheRightSizeIsMapped) {
  TempDir tmp(LocalInboxParent());
  const std::string path = (tmp.path() / "rounds").string();
  ASSERT_TRUE(RoundSlots::Create(path, 2).ok());
  Result<RoundSlots> again = RoundSlots::Create(path, 2);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("cannot create"), std::string::npos);
  Result<RoundSlots> wrong = RoundSlots::Open(path, 0, 3);  // made for 2 workers
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("is not a round-slot file"), std::string::npos)
      << wrong.status().ToString();
  fs::create_symlink(path, tmp.path() / "link");
  Result<RoundSlots> link = RoundSlots::Open((tmp.path() / "link").string(), 0, 2);
  ASSERT_FALSE(link.ok());
  EXPECT_NE(link.status().message().find("cannot open"), std::string::npos);
  Result<RoundSlots> missing = RoundSlots::Open((tmp.path() / "missing").string(), 0, 2);
  EXPECT_FALSE(missing.ok());
  EXPECT_FALSE(RoundSlots().mapped());
}

}  // namespace
}  // namespace tessera::internal
