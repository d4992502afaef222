#include "distributed/local_inbox.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <system_error>
#include <utility>

namespace tessera::internal {
namespace {

constexpr char kIpcScheme[] = "ipc://";
constexpr char kSocketName[] = "/inbox";

}  // namespace

std::string HostIdentity() {
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  if (!std::getline(boot, boot_id) || boot_id.empty()) return "";
  std::string id = "boot " + boot_id;
  for (const char* ns : {"/proc/self/ns/mnt", "/proc/self/ns/net"}) {
    char link[128];
    const ssize_t n = ::readlink(ns, link, sizeof(link) - 1);
    if (n <= 0) return "";
    id += " " + std::string(link, static_cast<size_t>(n));
  }
  return fmt::format("{} uid {}", id, ::geteuid());
}

std::string IpcDirectory(const std::string& endpoint) {
  if (!endpoint.starts_with(kIpcScheme)) return "";
  const std::string path = endpoint.substr(sizeof(kIpcScheme) - 1);
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

bool PrivateToThisUser(const std::string& endpoint) {
  const std::string dir = IpcDirectory(endpoint);
  if (dir.empty()) return false;
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return false;
  return S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077) == 0;
}

std::string LocalInboxParent() {
  if (::access("/dev/shm", W_OK | X_OK) == 0) return "/dev/shm";
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

Result<LocalInbox> LocalInbox::Bind(zmq::socket_t& inbox, const std::string& parent) {
  std::string dir = fmt::format("{}/tessera-job-{}-XXXXXX", parent, ::getpid());
  if (::mkdtemp(dir.data()) == nullptr) {
    return Status::Unavailable(
        fmt::format("cannot create a directory {}: {}", dir, std::strerror(errno)));
  }
  LocalInbox local;
  local.dir_ = std::move(dir);
  local.endpoint_ = kIpcScheme + local.dir_ + kSocketName;
  try {
    inbox.set(zmq::sockopt::curve_server, 0);  // the NULL mechanism, for this bind only
    inbox.bind(local.endpoint_);
  } catch (const zmq::error_t& e) {
    // E.g. a path longer than a unix socket's 107 bytes.
    return Status::Unavailable(fmt::format("cannot bind {}: {}", local.endpoint_, e.what()));
  }
  return local;
}

LocalInbox::LocalInbox(LocalInbox&& other) noexcept
    : dir_(std::exchange(other.dir_, {})), endpoint_(std::exchange(other.endpoint_, {})) {}

LocalInbox& LocalInbox::operator=(LocalInbox&& other) noexcept {
  if (this != &other) {
    Remove();
    dir_ = std::exchange(other.dir_, {});
    endpoint_ = std::exchange(other.endpoint_, {});
  }
  return *this;
}

void LocalInbox::Remove() {
  if (dir_.empty()) return;
  std::error_code ignored;  // nothing to do about a file someone else already removed
  std::filesystem::remove_all(dir_, ignored);
  dir_.clear();
}

}  // namespace tessera::internal
