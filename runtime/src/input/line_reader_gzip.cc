// LineReader over a gzip-compressed file: the same range rule as line_reader.cc, applied to the
// decompressed bytes while they stream past. Only the range's lines are kept in memory; the rest
// of the file is decompressed to learn its size.
#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "input/line_reader.h"

namespace tessera::internal {
namespace {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

}  // namespace

Result<LineReader> LineReader::OpenGzip(const std::string& path, ReadRange range,
                                        int64_t first_line) {
  std::unique_ptr<gzFile_s, GzCloser> gz(gzopen(path.c_str(), "rb"));
  if (gz == nullptr) return Status::NotFound(fmt::format("cannot open '{}'", path));
  gzbuffer(gz.get(), 1 << 17);
  const int64_t begin = range.begin;
  if (begin < 0 || (range.end >= 0 && range.end < begin)) {
    return Status::InvalidArgument(
        fmt::format("byte range [{}, {}) does not fit '{}'", range.begin, range.end, path));
  }
  const int64_t end = range.end < 0 ? INT64_MAX : range.end;
  // kSeek: looking for the first line start at or after `begin` (the byte after a newline at
  // begin - 1 or later); kCollect: keeping bytes up to `end`; kExtend: keeping the last line to
  // its newline; kDone: only counting.
  enum { kSeek, kCollect, kExtend, kDone } state = begin == 0 ? kCollect : kSeek;
  int64_t start = begin == 0 ? 0 : -1;
  LineReader r;
  std::string buf(1 << 20, '\0');
  int64_t off = 0;  // decompressed offset of buf[0]
  for (;;) {
    const int n = gzread(gz.get(), buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) break;  // reported below
    if (n == 0) break;
    int64_t i = 0;  // position in this chunk
    while (i < n && state != kDone) {
      if (state == kSeek) {
        i = std::max<int64_t>(i, begin - 1 - off);
        if (i >= n) break;
        const void* nl = std::memchr(buf.data() + i, '\n', static_cast<size_t>(n - i));
        if (nl == nullptr) {
          i = n;
          break;
        }
        i = static_cast<const char*>(nl) - buf.data() + 1;
        start = off + i;
        state = start < end ? kCollect : kDone;
      } else if (state == kCollect) {
        const int64_t stop = std::min<int64_t>(n, end - off);
        r.bytes_.append(buf.data() + i, static_cast<size_t>(stop - i));
        i = stop;
        if (off + i >= end) state = !r.bytes_.empty() && r.bytes_.back() != '\n' ? kExtend : kDone;
      } else {  // kExtend
        const void* nl = std::memchr(buf.data() + i, '\n', static_cast<size_t>(n - i));
        const int64_t stop = nl == nullptr ? n : static_cast<const char*>(nl) - buf.data() + 1;
        r.bytes_.append(buf.data() + i, static_cast<size_t>(stop - i));
        i = stop;
        if (nl != nullptr) state = kDone;
      }
    }
    off += n;
  }
  int err = Z_OK;
  const char* message = gzerror(gz.get(), &err);
  if (err != Z_OK && err != Z_STREAM_END) {
    return Status::DataLoss(
        fmt::format("'{}': corrupt gzip data after {} decompressed bytes: {}", path, off, message));
  }
  const int64_t size = off;
  if (begin > size) {
    return Status::InvalidArgument(fmt::format("byte range [{}, {}) does not fit '{}' ({} bytes)",
                                               range.begin, range.end, path, size));
  }
  r.path_ = path;
  r.file_size_ = size;
  r.base_ = start < 0 ? size : start;
  r.first_ = r.base_;
  r.next_read_ = size;
  r.end_ = INT64_MAX;  // bytes_ holds exactly the range's lines
  r.numbered_ = r.first_ == 0 || first_line > 0;
  r.line_no_ = r.first_ == 0 ? 0 : std::max<int64_t>(first_line - 1, 0);
  if (r.first_ == 0 && r.bytes_.compare(0, 3, "\xEF\xBB\xBF") == 0) r.pos_ = 3;
  return r;
}

}  // namespace tessera::internal
