#include "distributed/round_slots.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>

namespace tessera::internal {
namespace {

Status Errno(const std::string& what, const std::string& path) {
  return Status::Unavailable(fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

// Makes the file's memory behind [offset, offset + bytes) exist. Mode 0 within the file's size:
// allocates, never changes the size; tmpfs supports it.
bool Allocate(int fd, size_t offset, size_t bytes) {
  int rc;
  do {
    rc = ::fallocate(fd, 0, static_cast<off_t>(offset), static_cast<off_t>(bytes));
  } while (rc != 0 && errno == EINTR);
  return rc == 0;
}

// Whether a region's count of posted rounds covers its n-th round: the count is n + 1 or a few
// rounds beyond (mod 2^32).
bool Covers(uint32_t count, uint64_t n) {
  return static_cast<int32_t>(count - static_cast<uint32_t>(n + 1)) >= 0;
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
  // The headers' memory now, so that posting a round cannot fault (a full /dev/shm would kill the
  // writer with SIGBUS).
  for (int region = 0; region < num_workers; ++region) {
    if (!Allocate(fd, static_cast<size_t>(region) * kRegionBytes, kHeaderBytes)) {
      Status s = Errno("cannot allocate the headers of", path);
      ::close(fd);
      ::unlink(path.c_str());
      return s;
    }
  }
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    Status s = Errno("cannot map", path);
    ::close(fd);
    ::unlink(path.c_str());
    return s;
  }
  return RoundSlots(static_cast<char*>(base), bytes, fd, num_workers);
}

RoundSlots::RoundSlots(char* base, size_t bytes, int fd, int num_workers)
    : base_(base), bytes_(bytes), fd_(fd) {
  if (fd_ >= 0) reserved_.assign(static_cast<size_t>(num_workers) * kSlots, 0);
}

bool RoundSlots::Reserve(int region, uint64_t n, size_t bytes) {
  const size_t i = static_cast<size_t>(region) * kSlots + n % kSlots;
  if (fd_ < 0 || i >= reserved_.size() || bytes > kSlotBytes) return false;
  if (reserved_[i] >= bytes) return true;
  if (!Allocate(fd_, static_cast<size_t>(slot(region, n) - base_), bytes)) return false;
  reserved_[i] = bytes;
  return true;
}

void RoundSlots::Post(int region, uint64_t n, uint64_t bytes) {
  std::atomic_ref<uint64_t>(*post(region, n)).store(bytes, std::memory_order_relaxed);
  std::atomic_ref<uint32_t>(*posted(region))
      .store(static_cast<uint32_t>(n + 1), std::memory_order_release);
  // Not FUTEX_PRIVATE_FLAG: the peer waits on its own mapping of the file.
  ::syscall(SYS_futex, posted(region), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

bool RoundSlots::Posted(uint64_t n, uint64_t* bytes) const {
  const uint32_t count = std::atomic_ref<uint32_t>(*posted(0)).load(std::memory_order_acquire);
  if (!Covers(count, n)) return false;
  *bytes = std::atomic_ref<uint64_t>(*post(0, n)).load(std::memory_order_relaxed);
  return true;
}

void RoundSlots::Wait(uint64_t n, std::chrono::microseconds timeout) const {
  const uint32_t count = std::atomic_ref<uint32_t>(*posted(0)).load(std::memory_order_acquire);
  if (Covers(count, n)) return;
  const timespec wait{static_cast<time_t>(timeout.count() / 1000000),
                      static_cast<long>(timeout.count() % 1000000) * 1000};
  // Returns at once if the count moved since it was read (EAGAIN).
  ::syscall(SYS_futex, posted(0), FUTEX_WAIT, count, &wait, nullptr, 0);
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
  return RoundSlots(static_cast<char*>(base), kRegionBytes, -1, 0);
}

RoundSlots::RoundSlots(RoundSlots&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      fd_(std::exchange(other.fd_, -1)),
      reserved_(std::move(other.reserved_)) {}

RoundSlots& RoundSlots::operator=(RoundSlots&& other) noexcept {
  if (this != &other) {
    Release();
    base_ = std::exchange(other.base_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    fd_ = std::exchange(other.fd_, -1);
    reserved_ = std::move(other.reserved_);
  }
  return *this;
}

RoundSlots::~RoundSlots() { Release(); }

void RoundSlots::Release() {
  if (base_ != nullptr) ::munmap(base_, bytes_);
  if (fd_ >= 0) ::close(fd_);
  base_ = nullptr;
  fd_ = -1;
}

}  // namespace tessera::internal
