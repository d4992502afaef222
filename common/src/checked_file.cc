#include "tessera/common/checked_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tessera {
namespace {

std::string Errno(const std::string& what, const std::string& path) {
  return fmt::format("{} {}: {}", what, path, std::strerror(errno));
}

}  // namespace

Status WriteFileAtomically(const std::string& path,
                           const std::vector<std::span<const char>>& pieces) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Unavailable(Errno("cannot create", tmp));
  auto fail = [&](const std::string& what, const std::string& name) {
    Status s = Status::Unavailable(Errno(what, name));
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  };
  for (std::span<const char> piece : pieces) {
    const char* p = piece.data();
    size_t left = piece.size();
    while (left > 0) {
      const ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return fail("cannot write", tmp);
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  if (::fsync(fd) != 0) return fail("cannot fsync", tmp);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = Status::Unavailable(Errno("cannot rename into place", path));
    ::unlink(tmp.c_str());
    return s;
  }
  return Status::Ok();
}

Result<std::string> ReadWholeFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::NotFound(Errno("cannot open", path));
  std::string text;
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status s = Status::DataLoss(Errno("cannot read", path));
      ::close(fd);
      return s;
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

uint32_t Crc32(std::span<const char> bytes, uint32_t crc) {
  // zlib takes uInt lengths: feed large pieces in chunks.
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const size_t n = std::min<size_t>(left, size_t{1} << 30);
    crc = static_cast<uint32_t>(
        ::crc32(crc, reinterpret_cast<const Bytef*>(p), static_cast<uInt>(n)));
    p += n;
    left -= n;
  }
  return crc;
}

Result<std::string> ReadCheckedFile(const std::string& path, uint64_t bytes, uint32_t crc32) {
  Result<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return Status::DataLoss(text.status().message());
  if (text->size() != bytes) {
    return Status::DataLoss(
        fmt::format("{}: {} bytes, the manifest says {}", path, text->size(), bytes));
  }
  if (const uint32_t crc = Crc32(*text); crc != crc32) {
    return Status::DataLoss(fmt::format(
        "{}: crc32 {:08x}, the manifest says {:08x} (the file is damaged)", path, crc, crc32));
  }
  return text;
}

}  // namespace tessera
