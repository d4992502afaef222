#include "internal/line_reader.h"

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace tessera::internal {
namespace {

// Reads [offset, offset + n) of an open stream into out (appending). Returns bytes read.
int64_t ReadAt(std::ifstream& in, int64_t offset, int64_t n, std::string* out) {
  const size_t old = out->size();
  out->resize(old + static_cast<size_t>(n));
  in.clear();
  in.seekg(offset);
  in.read(out->data() + old, n);
  const int64_t got = in.gcount();
  out->resize(old + static_cast<size_t>(got));
  return got;
}

}  // namespace

Result<LineReader> LineReader::Open(const std::string& path, ReadRange range, int64_t first_line) {
  // A directory opens as a stream whose "size" is absurd; say what it is instead.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::InvalidArgument(fmt::format("'{}' is a directory, not a data file", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::NotFound(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  }
  char magic[2] = {0, 0};
  if (in.read(magic, 2) && magic[0] == '\x1f' && magic[1] == '\x8b') {
    return OpenGzip(path, range, first_line);
  }
  in.clear();
  in.seekg(0, std::ios::end);
  const int64_t size = in.tellg();
  if (size < 0) return Status::DataLoss(fmt::format("cannot determine the size of '{}'", path));
  int64_t begin = range.begin;
  int64_t end = range.end < 0 ? size : std::min(range.end, size);
  if (begin < 0 || begin > size || (range.end >= 0 && range.end < begin)) {
    return Status::InvalidArgument(fmt::format("byte range [{}, {}) does not fit '{}' ({} bytes)",
                                               range.begin, range.end, path, size));
  }
  LineReader r;
  r.path_ = path;
  r.file_size_ = size;
  // A line belongs to the range holding its first byte: unless the byte before `begin` ends a
  // line, the line under `begin` belongs to the previous range; skip it.
  int64_t start = begin;
  if (begin > 0) {
    std::string probe;
    constexpr int64_t kChunk = 1 << 16;
    int64_t at = begin - 1;
    for (;;) {
      probe.clear();
      const int64_t got = ReadAt(in, at, kChunk, &probe);
      if (got <= 0) {
        start = size;
        break;
      }
      const size_t nl = probe.find('\n');
      if (nl != std::string::npos) {
        start = at + static_cast<int64_t>(nl) + 1;
        break;
      }
      at += got;
    }
  }
  r.start_ = start;
  r.numbered_ = start == 0 || first_line > 0;
  r.line_no_ = start == 0 ? 0 : std::max<int64_t>(first_line - 1, 0);
  if (start < end) {
    if (ReadAt(in, start, end - start, &r.bytes_) != end - start) {
      return Status::DataLoss(fmt::format("short read of '{}'", path));
    }
    // The last line of the range runs to its newline, even past `end`.
    constexpr int64_t kChunk = 1 << 12;
    int64_t at = end;
    while (!r.bytes_.empty() && r.bytes_.back() != '\n' && at < size) {
      std::string more;
      const int64_t got = ReadAt(in, at, kChunk, &more);
      if (got <= 0) break;
      const size_t nl = more.find('\n');
      if (nl != std::string::npos) {
        r.bytes_.append(more, 0, nl + 1);
        break;
      }
      r.bytes_ += more;
      at += got;
    }
  }
  // A UTF-8 byte-order mark (spreadsheet exports) is not part of the first field.
  if (r.start_ == 0 && r.bytes_.compare(0, 3, "\xEF\xBB\xBF") == 0) r.pos_ = 3;
  return r;
}

bool LineReader::Next(std::string_view* line) {
  if (pos_ >= bytes_.size()) return false;
  line_start_ = pos_;
  size_t nl = bytes_.find('\n', pos_);
  if (nl == std::string::npos) nl = bytes_.size();
  size_t stop = nl;
  if (stop > pos_ && bytes_[stop - 1] == '\r') --stop;
  *line = std::string_view(bytes_).substr(pos_, stop - pos_);
  pos_ = nl + 1;
  ++line_no_;
  return true;
}

std::string LineReader::Where() const {
  if (numbered_) return fmt::format("{}:{}", path_, line_no_);
  return fmt::format("{}:byte {}", path_, start_ + static_cast<int64_t>(line_start_));
}

}  // namespace tessera::internal
