// Reads the lines of one byte range of a file (the rule is documented in tessera/data.h).
#ifndef TESSERA_RUNTIME_SRC_INPUT_LINE_READER_H_
#define TESSERA_RUNTIME_SRC_INPUT_LINE_READER_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "tessera/common/status.h"
#include "tessera/data.h"

namespace tessera::internal {

class LineReader {
 public:
  // Opens the lines that start in `range` of `path`. A plain file is read in blocks of
  // kBlockBytes as the lines are taken (a reader holds one block and the line that crosses its
  // end, not the range), so that parsing a large file costs no memory per byte of it. A
  // gzip-compressed file (it starts with the gzip magic bytes) is read as its decompressed bytes:
  // ranges, offsets and file_size() are those of the decompressed text, so that every reader
  // works on .gz files unchanged; each Open then decompresses the whole file once and keeps the
  // range's text (line_reader_gzip.cc).
  // Errors: NotFound when the file cannot be opened, InvalidArgument for a bad range,
  // DataLoss on a read error.
  // `first_line`: the 1-based line number of the range's first line when the caller knows it
  // (0: unknown; locations are then byte offsets unless the range starts at byte 0).
  static Result<LineReader> Open(const std::string& path, ReadRange range, int64_t first_line = 0);

  // Next line without its "\n" / "\r\n"; false at the end of the range (or on a read error,
  // which status() then reports). The view is valid until the next call.
  bool Next(std::string_view* line) {
    if (pos_ < bytes_.size()) {
      const char* at = bytes_.data() + pos_;
      const void* nl = std::memchr(at, '\n', bytes_.size() - pos_);
      if (nl != nullptr && Offset(pos_) < end_) {
        const size_t stop = static_cast<size_t>(static_cast<const char*>(nl) - bytes_.data());
        line_start_ = pos_;
        *line = std::string_view(at, stop - pos_ - (stop > pos_ && bytes_[stop - 1] == '\r'));
        pos_ = stop + 1;
        ++line_no_;
        return true;
      }
    }
    return NextSlow(line);
  }
  // Ok, or DataLoss when reading the file failed part way.
  const Status& status() const { return status_; }
  // "path:LINE" (range from byte 0) or "path:byte OFFSET" of the line last returned.
  std::string Where() const;
  int64_t file_size() const { return file_size_; }
  // File offset just past the line last returned.
  int64_t offset() const { return Offset(pos_); }
  bool from_start() const { return first_ == 0; }

  // How much of a plain file one refill reads.
  static constexpr size_t kBlockBytes = size_t{4} << 20;

 private:
  struct FdCloser {
    void operator()(int* fd) const;
  };

  static Result<LineReader> OpenGzip(const std::string& path, ReadRange range, int64_t first_line);
  int64_t Offset(size_t pos) const { return base_ + static_cast<int64_t>(pos); }
  // Next() when the buffer holds no whole line: refills it, or returns the last line of the file
  // (no newline), or ends the range.
  bool NextSlow(std::string_view* line);
  // Moves the unread bytes to the front and appends up to kBlockBytes more of the file; false at
  // the end of the file (or on a read error, kept in status_).
  bool Refill();

  std::string path_;
  std::unique_ptr<int, FdCloser> fd_;  // null when every byte is in bytes_ (gzip)
  std::string bytes_;                  // file bytes [base_, base_ + bytes_.size())
  int64_t base_ = 0;                   // file offset of bytes_[0]
  int64_t next_read_ = 0;              // file offset of the next byte to read into bytes_
  int64_t first_ = 0;                  // file offset of the range's first line
  int64_t end_ = 0;  // lines that start at or after this offset belong to the next range
  int64_t file_size_ = 0;
  size_t pos_ = 0;
  size_t line_start_ = 0;
  int64_t line_no_ = 0;
  bool numbered_ = false;
  Status status_;
};

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_INPUT_LINE_READER_H_
