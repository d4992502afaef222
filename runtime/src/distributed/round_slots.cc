#include "distributed/round_slots.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace tessera::internal {
namespace {

Status Errno(const std::string& what, const std::string& path) {
  return Status::Unavailable(fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

}  // namespace

Result<RoundSlots> RoundSlots::Create(const std::string& path, int num_workers) {
  const size_t bytes = static_cast<size_t>(num_workers) * kRegionBytes;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("cannot create", path);
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    Status s = Errno("cannot size", path);
    ::close(fd);
    ::unlink(path.c_str());
    return s;
  }
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) {
    Status s = Errno("cannot map", path);
    ::unlink(path.c_str());
    return s;
  }
  return RoundSlots(static_cast<char*>(base), bytes);
}

Result<RoundSlots> RoundSlots::Open(const std::string& path, int rank, int num_workers) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Errno("cannot open", path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Status s = Errno("cannot stat", path);
    ::close(fd);
    return s;
  }
  const size_t expected = static_cast<size_t>(num_workers) * kRegionBytes;
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      static_cast<size_t>(st.st_size) != expected) {
    ::close(fd);
    return Status::Unavailable(
        fmt::format("{} is not a round-slot file of this user for {} workers", path, num_workers));
  }
  void* base = ::mmap(nullptr, kRegionBytes, PROT_READ, MAP_SHARED, fd,
                      static_cast<off_t>(static_cast<size_t>(rank) * kRegionBytes));
  ::close(fd);
  if (base == MAP_FAILED) return Errno("cannot map", path);
  return RoundSlots(static_cast<char*>(base), kRegionBytes);
}

RoundSlots::RoundSlots(RoundSlots&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

RoundSlots& RoundSlots::operator=(RoundSlots&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) ::munmap(base_, bytes_);
    base_ = std::exchange(other.base_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

RoundSlots::~RoundSlots() {
  if (base_ != nullptr) ::munmap(base_, bytes_);
}

}  // namespace tessera::internal
