// Reads the lines of one byte range of a file (the rule is documented in tessera/data.h).
#ifndef TESSERA_RUNTIME_SRC_INTERNAL_LINE_READER_H_
#define TESSERA_RUNTIME_SRC_INTERNAL_LINE_READER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "tessera/common/status.h"
#include "tessera/data.h"

namespace tessera::internal {

class LineReader {
 public:
  // Reads the bytes of the lines that start in `range` of `path` into memory. A gzip-compressed
  // file (it starts with the gzip magic bytes) is read as its decompressed bytes: ranges, offsets
  // and file_size() are those of the decompressed text, so that every reader works on .gz files
  // unchanged; each Open then decompresses the whole file once (line_reader_gzip.cc).
  // Errors: NotFound when the file cannot be opened, InvalidArgument for a bad range,
  // DataLoss on a read error.
  // `first_line`: the 1-based line number of the range's first line when the caller knows it
  // (0: unknown; locations are then byte offsets unless the range starts at byte 0).
  static Result<LineReader> Open(const std::string& path, ReadRange range, int64_t first_line = 0);

  // Next line without its "\n" / "\r\n"; false at the end of the range.
  bool Next(std::string_view* line);
  // "path:LINE" (range from byte 0) or "path:byte OFFSET" of the line last returned.
  std::string Where() const;
  int64_t file_size() const { return file_size_; }
  // File offset just past the line last returned.
  int64_t offset() const { return start_ + static_cast<int64_t>(pos_); }
  bool from_start() const { return start_ == 0; }

 private:
  static Result<LineReader> OpenGzip(const std::string& path, ReadRange range, int64_t first_line);

  std::string path_;
  std::string bytes_;
  int64_t start_ = 0;  // file offset of bytes_[0]
  int64_t file_size_ = 0;
  size_t pos_ = 0;
  size_t line_start_ = 0;
  int64_t line_no_ = 0;
  bool numbered_ = false;
};

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_INTERNAL_LINE_READER_H_
