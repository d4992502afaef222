#include "input/line_reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace tessera::internal {
namespace {

// Reads up to n bytes at `offset` into out; returns the bytes read (short only at the end of the
// file), or -1 with errno set.
int64_t ReadAt(int fd, int64_t offset, size_t n, char* out) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r =
        ::pread(fd, out + got, n - got, static_cast<off_t>(offset) + static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return static_cast<int64_t>(got);
}

}  // namespace

void LineReader::FdCloser::operator()(int* fd) const {
  ::close(*fd);
  delete fd;
}

Result<LineReader> LineReader::Open(const std::string& path, ReadRange range, int64_t first_line) {
  // A directory opens as a stream whose "size" is absurd; say what it is instead.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::InvalidArgument(fmt::format("'{}' is a directory, not a data file", path));
  }
  const int raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (raw < 0) {
    return Status::NotFound(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  }
  std::unique_ptr<int, FdCloser> fd(new int(raw));
  char magic[2] = {0, 0};
  if (ReadAt(raw, 0, 2, magic) == 2 && magic[0] == '\x1f' && magic[1] == '\x8b') {
    fd.reset();
    return OpenGzip(path, range, first_line);
  }
  struct stat st;
  if (::fstat(raw, &st) != 0 || st.st_size < 0) {
    return Status::DataLoss(fmt::format("cannot determine the size of '{}'", path));
  }
  const int64_t size = st.st_size;
  const int64_t begin = range.begin;
  const int64_t end = range.end < 0 ? size : std::min(range.end, size);
  if (begin < 0 || begin > size || (range.end >= 0 && range.end < begin)) {
    return Status::InvalidArgument(fmt::format("byte range [{}, {}) does not fit '{}' ({} bytes)",
                                               range.begin, range.end, path, size));
  }
  // A line belongs to the range holding its first byte: unless the byte before `begin` ends a
  // line, the line under `begin` belongs to the previous range; skip it.
  int64_t start = begin;
  if (begin > 0) {
    constexpr size_t kChunk = 1 << 16;
    std::string probe(kChunk, '\0');
    for (int64_t at = begin - 1;;) {
      const int64_t got = ReadAt(raw, at, kChunk, probe.data());
      if (got < 0)
        return Status::DataLoss(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
      if (got == 0) {
        start = size;
        break;
      }
      const void* nl = std::memchr(probe.data(), '\n', static_cast<size_t>(got));
      if (nl != nullptr) {
        start = at + (static_cast<const char*>(nl) - probe.data()) + 1;
        break;
      }
      at += got;
    }
  }
  LineReader r;
  r.path_ = path;
  r.fd_ = std::move(fd);
  r.file_size_ = size;
  r.base_ = start;
  r.next_read_ = start;
  r.first_ = start;
  r.end_ = std::max(start, end);
  r.numbered_ = start == 0 || first_line > 0;
  r.line_no_ = start == 0 ? 0 : std::max<int64_t>(first_line - 1, 0);
  if (start < end) {
    r.Refill();
    if (!r.status_.ok()) return r.status_;
  }
  // A UTF-8 byte-order mark (spreadsheet exports) is not part of the first field.
  if (r.first_ == 0 && r.bytes_.compare(0, 3, "\xEF\xBB\xBF") == 0) r.pos_ = 3;
  return r;
}

bool LineReader::Refill() {
  if (fd_ == nullptr || next_read_ >= file_size_ || !status_.ok()) return false;
  bytes_.erase(0, pos_);
  base_ += static_cast<int64_t>(pos_);
  pos_ = 0;
  const size_t old = bytes_.size();
  const size_t want = static_cast<size_t>(
      std::min<int64_t>(static_cast<int64_t>(kBlockBytes), file_size_ - next_read_));
  bytes_.resize(old + want);
  const int64_t got = ReadAt(*fd_, next_read_, want, bytes_.data() + old);
  if (got != static_cast<int64_t>(want)) {
    status_ = Status::DataLoss(
        got < 0 ? fmt::format("cannot read '{}' at byte {}: {}", path_, next_read_,
                              std::strerror(errno))
                : fmt::format("short read of '{}' at byte {} (did the file shrink?)", path_,
                              next_read_));
    bytes_.resize(old);
    return false;
  }
  next_read_ += got;
  return true;
}

bool LineReader::NextSlow(std::string_view* line) {
  for (;;) {
    if (Offset(pos_) >= end_ || (pos_ >= bytes_.size() && !Refill())) return false;
    const void* nl = std::memchr(bytes_.data() + pos_, '\n', bytes_.size() - pos_);
    size_t stop;
    if (nl != nullptr) {
      stop = static_cast<size_t>(static_cast<const char*>(nl) - bytes_.data());
    } else if (Refill()) {
      continue;
    } else if (!status_.ok()) {
      return false;
    } else {
      stop = bytes_.size();  // the file's last line, without a newline
    }
    line_start_ = pos_;
    *line = std::string_view(bytes_).substr(
        pos_, stop - pos_ - (stop > pos_ && bytes_[stop - 1] == '\r'));
    pos_ = stop + 1;
    ++line_no_;
    return true;
  }
}

std::string LineReader::Where() const {
  if (numbered_) return fmt::format("{}:{}", path_, line_no_);
  return fmt::format("{}:byte {}", path_, Offset(line_start_));
}

}  // namespace tessera::internal
