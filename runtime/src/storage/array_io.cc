#include "tessera/array_io.h"

#include "storage/array_stream_writer.h"

#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string_view>

namespace tessera::internal {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the array format is little-endian; a big-endian build needs byte swapping here");

constexpr char kMagic[8] = {'T', 'E', 'S', 'S', 'A', 'R', 'R', '\0'};
constexpr uint32_t kVersion = 1;
constexpr int kMaxRank = 8;
constexpr size_t kFixedHeader = 16;  // magic, version, type, rank, storage, reserved

size_t ElementBytes(ArrayElementType t) {
  switch (t) {
    case ArrayElementType::kInt32:
    case ArrayElementType::kFloat32:
      return 4;
    case ArrayElementType::kInt64:
    case ArrayElementType::kFloat64:
      return 8;
  }
  return 0;
}

const char* TypeName(uint8_t t) {
  switch (static_cast<ArrayElementType>(t)) {
    case ArrayElementType::kInt32:
      return "int32";
    case ArrayElementType::kInt64:
      return "int64";
    case ArrayElementType::kFloat32:
      return "float32";
    case ArrayElementType::kFloat64:
      return "float64";
  }
  return "unknown";
}

uint32_t Crc(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const Bytef*>(data);
  while (n > 0) {  // zlib takes uInt lengths
    const uInt chunk = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    crc = static_cast<uint32_t>(crc32(crc, p, chunk));
    p += chunk;
    n -= chunk;
  }
  return crc;
}

Status OpenError(const std::string& path, int err) {
  std::string msg = fmt::format("cannot create '{}': {}", path, std::strerror(err));
  if (err == ENOENT) return Status::NotFound(std::move(msg));
  return Status::InvalidArgument(std::move(msg));
}

// Writes "<path>.tmp", with a running CRC, and renames it over `path` on Commit. A writer that
// is not committed removes its temporary file.
class AtomicFile {
 public:
  static Result<std::unique_ptr<AtomicFile>> Create(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      return Status::InvalidArgument(fmt::format("cannot write '{}': it is a directory", path));
    }
    auto f = std::unique_ptr<AtomicFile>(new AtomicFile(path));
    f->file_ = std::fopen(f->tmp_.c_str(), "wb");
    if (f->file_ == nullptr) return OpenError(path, errno);
    return f;
  }
  ~AtomicFile() {
    if (file_ != nullptr) {
      std::fclose(file_);
      std::remove(tmp_.c_str());
    }
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void Write(const void* data, size_t n) {
    if (n == 0 || failed_) return;
    crc_ = Crc(crc_, data, n);
    if (std::fwrite(data, 1, n, file_) != n) {
      failed_ = true;
      errno_ = errno;
    }
  }
  void Write(std::string_view s) { Write(s.data(), s.size()); }
  uint32_t crc() const { return crc_; }

  Status Commit() {
    if (!failed_ && std::fflush(file_) != 0) failed_ = true, errno_ = errno;
    if (!failed_ && ::fsync(::fileno(file_)) != 0) failed_ = true, errno_ = errno;
    const bool closed = std::fclose(file_) == 0;
    file_ = nullptr;
    if (failed_ || !closed) {
      std::remove(tmp_.c_str());
      return Status::DataLoss(
          fmt::format("writing '{}' failed: {}", path_, std::strerror(failed_ ? errno_ : errno)));
    }
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
      const int err = errno;
      std::remove(tmp_.c_str());
      return Status::InvalidArgument(
          fmt::format("cannot rename '{}' to '{}': {}", tmp_, path_, std::strerror(err)));
    }
    return Status::Ok();
  }

 private:
  explicit AtomicFile(const std::string& path) : path_(path), tmp_(path + ".tmp") {}

  std::string path_, tmp_;
  std::FILE* file_ = nullptr;
  uint32_t crc_ = 0;
  bool failed_ = false;
  int errno_ = 0;
};

template <typename V>
void Put(std::string* out, V v) {
  char b[sizeof(V)];
  std::memcpy(b, &v, sizeof(V));
  out->append(b, sizeof(V));
}

template <typename V>
V Get(const std::string& in, size_t at) {
  V v;
  std::memcpy(&v, in.data() + at, sizeof(V));
  return v;
}

Status CheckView(const ArrayWriteView& v) {
  if (v.shape.empty() || v.shape.size() > kMaxRank) {
    return Status::InvalidArgument(
        fmt::format("arrays of rank {} cannot be saved", v.shape.size()));
  }
  return Status::Ok();
}

// The keys of the sparse elements [first, first + n), in chunks, to `sink`.
template <typename Sink>
void ForEachKeyChunk(const ArrayWriteView& v, Sink&& sink) {
  constexpr int64_t kChunk = 4096;
  const int64_t rank = static_cast<int64_t>(v.shape.size());
  std::vector<int64_t> keys(static_cast<size_t>(kChunk * rank));
  for (int64_t first = 0; first < v.count; first += kChunk) {
    const int64_t n = std::min(kChunk, v.count - first);
    v.keys(first, n, keys.data());
    sink(first, n, keys.data());
  }
}

// Appends element p of `values` (of type t) as text.
void FormatValue(ArrayElementType t, const void* values, int64_t p, fmt::memory_buffer* buf) {
  const char* at = static_cast<const char*>(values);
  switch (t) {
    case ArrayElementType::kInt32:
      fmt::format_to(std::back_inserter(*buf), "{}", reinterpret_cast<const int32_t*>(at)[p]);
      break;
    case ArrayElementType::kInt64:
      fmt::format_to(std::back_inserter(*buf), "{}", reinterpret_cast<const int64_t*>(at)[p]);
      break;
    case ArrayElementType::kFloat32:
      fmt::format_to(std::back_inserter(*buf), "{}", reinterpret_cast<const float*>(at)[p]);
      break;
    case ArrayElementType::kFloat64:
      fmt::format_to(std::back_inserter(*buf), "{}", reinterpret_cast<const double*>(at)[p]);
      break;
  }
}

std::string BinaryHeader(ArrayElementType type, bool sparse, const std::vector<int64_t>& shape,
                         int64_t count) {
  std::string header(kMagic, sizeof kMagic);
  Put<uint32_t>(&header, kVersion);
  Put<uint8_t>(&header, static_cast<uint8_t>(type));
  Put<uint8_t>(&header, static_cast<uint8_t>(shape.size()));
  Put<uint8_t>(&header, sparse ? 1 : 0);
  Put<uint8_t>(&header, 0);
  for (int64_t e : shape) Put<int64_t>(&header, e);
  Put<int64_t>(&header, count);
  return header;
}

int64_t ElementCount(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

}  // namespace

class ArrayStreamWriter::Impl {
 public:
  // count < 0: dense, every element of the shape; otherwise sparse with `count` elements.
  Impl(std::unique_ptr<AtomicFile> file, ArrayFileKind kind, ArrayElementType type,
       std::vector<int64_t> shape, int64_t count)
      : file_(std::move(file)), kind_(kind), type_(type), shape_(std::move(shape)),
        sparse_(count >= 0), count_(sparse_ ? count : ElementCount(shape_)),
        key_(shape_.size(), 0) {}

  void Append(const void* values, int64_t n) {
    if (kind_ == ArrayFileKind::kBinary) {
      if (sparse_ && keys_ != count_) {
        misuse_ = "values before every key";
        return;
      }
      file_->Write(values, static_cast<size_t>(n) * ElementBytes(type_));
      return;
    }
    if (sparse_) {
      misuse_ = "values without their keys";
      return;
    }
    const size_t rank = shape_.size();
    if (rank <= 2) {
      // One line per row: a 1-D array is a column.
      const int64_t width = std::max<int64_t>(rank == 2 ? shape_[1] : 1, 1);
      for (int64_t i = 0; i < n; ++i, ++at_) {
        FormatValue(type_, values, i, &buf_);
        buf_.push_back((at_ + 1) % width == 0 ? '\n' : ' ');
        Flush(false);
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i, ++at_) {
      for (int64_t k : key_) fmt::format_to(std::back_inserter(buf_), "{} ", k);
      FormatValue(type_, values, i, &buf_);
      buf_.push_back('\n');
      for (size_t d = rank; d-- > 0;) {  // odometer, row-major
        if (++key_[d] < shape_[d]) break;
        key_[d] = 0;
      }
      Flush(false);
    }
  }

  void AppendKeys(const int64_t* keys, int64_t n) {
    if (!sparse_ || kind_ != ArrayFileKind::kBinary) {
      misuse_ = "keys given to a file that stores none apart";
      return;
    }
    file_->Write(keys, static_cast<size_t>(n) * shape_.size() * sizeof(int64_t));
    keys_ += n;
  }

  void AppendElements(const int64_t* keys, const void* values, int64_t n) {
    if (!sparse_ || kind_ != ArrayFileKind::kText) {
      misuse_ = "whole elements given to a binary or dense file";
      return;
    }
    const size_t rank = shape_.size();
    for (int64_t i = 0; i < n; ++i) {
      for (size_t d = 0; d < rank; ++d) {
        fmt::format_to(std::back_inserter(buf_), "{} ", keys[static_cast<size_t>(i) * rank + d]);
      }
      FormatValue(type_, values, i, &buf_);
      buf_.push_back('\n');
      Flush(false);
    }
  }

  Status Finish(int64_t given) {
    if (!misuse_.empty()) return Status::Internal("array file writer given " + misuse_);
    if (given != count_ || (sparse_ && kind_ == ArrayFileKind::kBinary && keys_ != count_)) {
      return Status::Internal(fmt::format("an array file of {} elements was given {}", count_,
                                          given != count_ ? given : keys_));
    }
    if (kind_ == ArrayFileKind::kBinary) {
      std::string trailer;
      Put<uint32_t>(&trailer, file_->crc());
      file_->Write(trailer);
    } else {
      Flush(true);
    }
    return file_->Commit();
  }

 private:
  void Flush(bool force) {
    if (force || buf_.size() > (1 << 20)) {
      file_->Write(buf_.data(), buf_.size());
      buf_.clear();
    }
  }

  std::unique_ptr<AtomicFile> file_;
  ArrayFileKind kind_;
  ArrayElementType type_;
  std::vector<int64_t> shape_;
  bool sparse_;
  int64_t count_;
  int64_t keys_ = 0;          // sparse binary: keys written so far
  std::vector<int64_t> key_;  // dense text, rank >= 3: the next element's key
  int64_t at_ = 0;            // dense text: elements formatted so far
  std::string misuse_;        // the first call that did not fit the file, reported by Finish
  fmt::memory_buffer buf_;
};

namespace {

Result<std::unique_ptr<AtomicFile>> CreateArrayFile(const std::string& path, ArrayFileKind kind,
                                                    ArrayElementType type,
                                                    const std::vector<int64_t>& shape, bool sparse,
                                                    int64_t count) {
  ArrayWriteView v{type};
  v.shape = shape;
  TESSERA_RETURN_IF_ERROR(CheckView(v));
  auto created = AtomicFile::Create(path);
  if (!created.ok()) return created.status();
  if (kind == ArrayFileKind::kBinary) (*created)->Write(BinaryHeader(type, sparse, shape, count));
  return created;
}

}  // namespace

Result<std::unique_ptr<ArrayStreamWriter>> ArrayStreamWriter::Create(const std::string& path,
                                                                      ArrayFileKind kind,
                                                                      ArrayElementType type,
                                                                      std::vector<int64_t> shape) {
  auto file = CreateArrayFile(path, kind, type, shape, /*sparse=*/false, ElementCount(shape));
  if (!file.ok()) return file.status();
  return std::unique_ptr<ArrayStreamWriter>(new ArrayStreamWriter(
      std::make_unique<Impl>(std::move(file).value(), kind, type, std::move(shape), -1)));
}

Result<std::unique_ptr<ArrayStreamWriter>> ArrayStreamWriter::CreateSparse(
    const std::string& path, ArrayFileKind kind, ArrayElementType type,
    std::vector<int64_t> shape, int64_t count) {
  auto file = CreateArrayFile(path, kind, type, shape, /*sparse=*/true, count);
  if (!file.ok()) return file.status();
  return std::unique_ptr<ArrayStreamWriter>(new ArrayStreamWriter(
      std::make_unique<Impl>(std::move(file).value(), kind, type, std::move(shape), count)));
}

ArrayStreamWriter::ArrayStreamWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ArrayStreamWriter::~ArrayStreamWriter() = default;

void ArrayStreamWriter::Append(const void* values, int64_t count) {
  if (count <= 0) return;
  impl_->Append(values, count);
  next_ += count;
}

void ArrayStreamWriter::AppendKeys(const int64_t* keys, int64_t count) {
  if (count > 0) impl_->AppendKeys(keys, count);
}

void ArrayStreamWriter::AppendElements(const int64_t* keys, const void* values, int64_t count) {
  if (count <= 0) return;
  impl_->AppendElements(keys, values, count);
  next_ += count;
}

Status ArrayStreamWriter::Finish() { return impl_->Finish(next_); }

namespace {

// A dense array through the stream writer, in chunks (the text writer formats as it goes).
Status WriteDense(const std::string& path, const ArrayWriteView& v, ArrayFileKind kind) {
  auto w = ArrayStreamWriter::Create(path, kind, v.type, v.shape);
  if (!w.ok()) return w.status();
  (*w)->Append(v.values, v.count);
  return (*w)->Finish();
}

// A sparse array through the stream writer: keys in chunks, then the values (binary), or whole
// elements in chunks (text).
Status WriteSparse(const std::string& path, const ArrayWriteView& v, ArrayFileKind kind) {
  auto w = ArrayStreamWriter::CreateSparse(path, kind, v.type, v.shape, v.count);
  if (!w.ok()) return w.status();
  const size_t e = ElementBytes(v.type);
  const char* values = static_cast<const char*>(v.values);
  ForEachKeyChunk(v, [&](int64_t first, int64_t n, const int64_t* keys) {
    if (kind == ArrayFileKind::kBinary) {
      (*w)->AppendKeys(keys, n);
    } else {
      (*w)->AppendElements(keys, values + static_cast<size_t>(first) * e, n);
    }
  });
  if (kind == ArrayFileKind::kBinary) (*w)->Append(v.values, v.count);
  return (*w)->Finish();
}

}  // namespace

Status SaveArray(Context& ctx, const ArrayBase& array, const std::string& path, ArrayFileKind kind,
                 const std::function<ArrayWriteView()>& view) {
  if (std::optional<Status> collective =
          ctx.SavePartitioned(array, path, kind == ArrayFileKind::kText)) {
    return *collective;
  }
  const ArrayWriteView v = view();
  return kind == ArrayFileKind::kText ? WriteArrayText(path, v) : WriteArrayFile(path, v);
}

Status WriteArrayFile(const std::string& path, const ArrayWriteView& v) {
  TESSERA_RETURN_IF_ERROR(CheckView(v));
  return v.sparse ? WriteSparse(path, v, ArrayFileKind::kBinary)
                  : WriteDense(path, v, ArrayFileKind::kBinary);
}

Status WriteArrayText(const std::string& path, const ArrayWriteView& v) {
  TESSERA_RETURN_IF_ERROR(CheckView(v));
  return v.sparse ? WriteSparse(path, v, ArrayFileKind::kText)
                  : WriteDense(path, v, ArrayFileKind::kText);
}

Result<ArrayFileContents> ReadArrayFile(const std::string& path, ArrayElementType type, int rank) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::InvalidArgument(fmt::format("'{}' is a directory, not an array file", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Status::DataLoss(fmt::format("cannot read '{}'", path));
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    return Status::InvalidArgument(
        fmt::format("'{}' is not a Tessera array file (it does not start with TESSARR)", path));
  }
  if (bytes.size() < kFixedHeader) {
    return Status::DataLoss(fmt::format("'{}' is truncated inside its header", path));
  }
  const uint32_t version = Get<uint32_t>(bytes, 8);
  if (version != kVersion) {
    return Status::InvalidArgument(fmt::format(
        "'{}' is array format version {}; this build reads version {}", path, version, kVersion));
  }
  const uint8_t file_type = Get<uint8_t>(bytes, 12);
  const int file_rank = Get<uint8_t>(bytes, 13);
  const uint8_t storage = Get<uint8_t>(bytes, 14);
  if (file_rank < 1 || file_rank > kMaxRank || storage > 1 ||
      ElementBytes(static_cast<ArrayElementType>(file_type)) == 0) {
    return Status::DataLoss(
        fmt::format("'{}': corrupt header (element type {}, rank {}, storage {})", path, file_type,
                    file_rank, storage));
  }
  const size_t header_bytes = kFixedHeader + 8 * static_cast<size_t>(file_rank) + 8;
  if (bytes.size() < header_bytes + 4) {
    return Status::DataLoss(fmt::format("'{}' is truncated inside its header", path));
  }
  ArrayFileContents c;
  c.sparse = storage == 1;
  int64_t elements = 1;
  bool overflow = false;
  for (int d = 0; d < file_rank; ++d) {
    const int64_t e = Get<int64_t>(bytes, kFixedHeader + 8 * static_cast<size_t>(d));
    c.shape.push_back(e);
    overflow |= e < 0 || __builtin_mul_overflow(elements, std::max<int64_t>(e, 1), &elements);
  }
  c.count = Get<int64_t>(bytes, header_bytes - 8);
  const size_t value_bytes = ElementBytes(static_cast<ArrayElementType>(file_type));
  const size_t per_element = value_bytes + (c.sparse ? 8 * static_cast<size_t>(file_rank) : 0);
  size_t body = 0;
  overflow |= c.count < 0 || (c.sparse ? c.count > elements : c.count != elements) ||
              __builtin_mul_overflow(static_cast<size_t>(std::max<int64_t>(c.count, 0)),
                                     per_element, &body);
  if (overflow) {
    return Status::DataLoss(fmt::format("'{}': corrupt header (extents or element count)", path));
  }
  const size_t expected = header_bytes + body + 4;
  if (bytes.size() != expected) {
    return Status::DataLoss(fmt::format("'{}' has {} bytes; its header describes {} ({})", path,
                                        bytes.size(), expected,
                                        bytes.size() < expected ? "truncated" : "trailing bytes"));
  }
  const uint32_t stored = Get<uint32_t>(bytes, expected - 4);
  const uint32_t computed = Crc(0, bytes.data(), expected - 4);
  if (stored != computed) {
    return Status::DataLoss(fmt::format("'{}': checksum mismatch (stored {:08x}, computed {:08x})",
                                        path, stored, computed));
  }
  if (file_type != static_cast<uint8_t>(type) || file_rank != rank) {
    return Status::InvalidArgument(
        fmt::format("'{}' holds a rank-{} array of {}; expected a rank-{} array of {}", path,
                    file_rank, TypeName(file_type), rank, TypeName(static_cast<uint8_t>(type))));
  }
  size_t at = header_bytes;
  if (c.sparse) {
    const size_t n = static_cast<size_t>(c.count) * static_cast<size_t>(rank);
    c.keys.resize(n);
    if (n > 0) std::memcpy(c.keys.data(), bytes.data() + at, n * 8);
    at += n * 8;
    std::vector<int64_t> linear(static_cast<size_t>(c.count));
    for (int64_t p = 0; p < c.count; ++p) {
      int64_t l = 0;
      for (int d = 0; d < rank; ++d) {
        const int64_t k = c.keys[static_cast<size_t>(p * rank + d)];
        if (k < 0 || k >= c.shape[static_cast<size_t>(d)]) {
          return Status::InvalidArgument(
              fmt::format("'{}': element {} has key component {} = {} outside [0, {})", path, p, d,
                          k, c.shape[static_cast<size_t>(d)]));
        }
        l = l * c.shape[static_cast<size_t>(d)] + k;
      }
      linear[static_cast<size_t>(p)] = l;
    }
    std::sort(linear.begin(), linear.end());
    if (std::adjacent_find(linear.begin(), linear.end()) != linear.end()) {
      return Status::InvalidArgument(fmt::format("'{}': a key is stored twice", path));
    }
  }
  c.values.assign(bytes, at, static_cast<size_t>(c.count) * value_bytes);
  return c;
}

}  // namespace tessera::internal
