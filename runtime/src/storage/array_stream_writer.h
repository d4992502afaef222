// ArrayStreamWriter: writes an array's file (binary or text, the formats of array_io.h) from its
// elements given in storage order, a chunk at a time, so that a writer never needs the whole
// array in memory. save_array uses it for a local array and for the collective save of an array
// a distributed job keeps partitioned (distributed/array_save.h, record_save.h), so both write
// the same bytes.
//
// Thread safety: none; one writer per file.
#ifndef TESSERA_RUNTIME_SRC_STORAGE_ARRAY_STREAM_WRITER_H_
#define TESSERA_RUNTIME_SRC_STORAGE_ARRAY_STREAM_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/array_io.h"
#include "tessera/common/status.h"

namespace tessera::internal {

class ArrayStreamWriter {
 public:
  // Creates "<path>.tmp" and writes the header. Errors as for save_array (NotFound,
  // InvalidArgument).
  static Result<std::unique_ptr<ArrayStreamWriter>> Create(const std::string& path,
                                                           ArrayFileKind kind,
                                                           ArrayElementType type,
                                                           std::vector<int64_t> shape);
  // A sparse array's file of `count` stored elements. A binary file takes every key first
  // (AppendKeys), then every value (Append), as the format stores them; a text file takes whole
  // elements (AppendElements).
  static Result<std::unique_ptr<ArrayStreamWriter>> CreateSparse(const std::string& path,
                                                                 ArrayFileKind kind,
                                                                 ArrayElementType type,
                                                                 std::vector<int64_t> shape,
                                                                 int64_t count);
  ~ArrayStreamWriter();  // removes the temporary file unless Finish renamed it
  ArrayStreamWriter(const ArrayStreamWriter&) = delete;
  ArrayStreamWriter& operator=(const ArrayStreamWriter&) = delete;

  // The next `count` elements' values in storage order (row-major when dense). A write error is
  // remembered and reported by Finish. REQUIRES: not a sparse text file; a sparse binary file's
  // keys all given.
  void Append(const void* values, int64_t count);
  // Sparse binary files: the next `count` elements' keys (rank components each).
  void AppendKeys(const int64_t* keys, int64_t count);
  // Sparse text files: the next `count` elements, keys (rank components each) and values.
  void AppendElements(const int64_t* keys, const void* values, int64_t count);
  // Elements given so far.
  int64_t written() const { return next_; }
  // Writes the trailer, syncs and renames the file over `path`. DataLoss when a write failed;
  // Internal when fewer or more elements (or keys) than the file holds were given.
  Status Finish();

  class Impl;

 private:
  explicit ArrayStreamWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  int64_t next_ = 0;
};

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_STORAGE_ARRAY_STREAM_WRITER_H_
