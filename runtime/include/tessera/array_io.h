// Saving and loading DistArrays: a checksummed binary format and a text export.
//
//   TESSERA_RETURN_IF_ERROR(tessera::save_array(W, dir + "/W.tarr"));
//   auto W = tessera::load_array<float, 2>(ctx, dir + "/W.tarr");   // Result<DistArray<float, 2>>
//   TESSERA_RETURN_IF_ERROR(tessera::save_array_text(W, dir + "/W.txt"));
//
// The binary format (docs/array-format.md): a fixed header (magic, format version, element type,
// rank, dense or sparse, extents, element count), the sparse keys, the values, and a CRC-32 of
// everything before it; little-endian. Element types: int32_t, int64_t, float, double.
// save_array writes "<path>.tmp" and renames it over `path`, so a reader never sees a partial
// file under `path`. load_array verifies the magic, version, element type, rank, size and
// checksum, and that sparse keys are in range and unique, before it builds the array.
//
// The text export writes one line per row of a dense 1-D or 2-D array (values separated by one
// space), and one "k0 k1 ... value" line per stored element of a sparse array or a dense array of
// rank 3 or more (0-based keys). Floating-point values are written in the shortest form that
// reads back to the same value.
//
// Distributed jobs (docs/array-format.md, "Saving arrays in a distributed job"):
//   - save_array and save_array_text of an array the job keeps partitioned (tessc proved that
//     only loop bodies and such saves touch it) are COLLECTIVE: every worker must call them at
//     the same point of the program with the same path -- never under a rank-dependent
//     condition. The holders of the rows stream them to worker 0 in file order (chunks of at most
//     1 MiB, at most two per sender in flight), worker 0 writes the file -- byte for byte what a
//     save of a whole copy writes -- and every worker returns worker 0's result, so an error
//     creating or writing the file fails the call everywhere. The array stays partitioned; the
//     cost is sending the rows worker 0 lacks, once. A worker that does not take part makes the
//     call fail with an error saying so (tessc also warns about a save under a condition on
//     JobInfo::rank, and then keeps the array whole so that the save is local).
//     A partitioned sparse array (records only loops touch) is gathered whole on every worker
//     first (it stays whole), then written by worker 0.
//   - Of any other array (whole on every worker, because serial code uses it), and in a serial
//     run, they are local: this process writes its copy. Call them on one worker, or with a path
//     per worker (two workers writing one path race on "<path>.tmp").
//   - load_array is local: every worker that calls it reads the file.
//
// Thread safety: reentrant; do not save an array while a parallel_for writes it.
#ifndef TESSERA_ARRAY_IO_H_
#define TESSERA_ARRAY_IO_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <source_location>
#include <string>
#include <type_traits>
#include <vector>

#include "tessera/common/status.h"
#include "tessera/context.h"
#include "tessera/dist_array.h"

namespace tessera {

namespace internal {

// Element type codes of the binary format.
enum class ArrayElementType : uint8_t { kInt32 = 1, kInt64 = 2, kFloat32 = 3, kFloat64 = 4 };

template <typename T>
constexpr ArrayElementType ElementTypeOf() {
  static_assert(std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> ||
                    std::is_same_v<T, float> || std::is_same_v<T, double>,
                "array files hold int32_t, int64_t, float or double elements");
  if constexpr (std::is_same_v<T, int32_t>) return ArrayElementType::kInt32;
  if constexpr (std::is_same_v<T, int64_t>) return ArrayElementType::kInt64;
  if constexpr (std::is_same_v<T, float>) return ArrayElementType::kFloat32;
  return ArrayElementType::kFloat64;
}

enum class ArrayFileKind { kBinary, kText };

// A type-erased view of an array to write.
struct ArrayWriteView {
  ArrayElementType type;
  bool sparse = false;
  std::vector<int64_t> shape;    // rank = shape.size()
  int64_t count = 0;             // stored elements
  const void* values = nullptr;  // `count` elements
  // Sparse: writes the keys of elements [first, first + n) to out[0, n * rank).
  std::function<void(int64_t first, int64_t n, int64_t* out)> keys;
};

// A read and verified array file.
struct ArrayFileContents {
  bool sparse = false;
  std::vector<int64_t> shape;
  int64_t count = 0;
  std::vector<int64_t> keys;  // sparse: count * rank, in range and unique
  std::string values;         // count elements' bytes
};

// save_array and save_array_text: collective where the job keeps `array` partitioned
// (Context::SavePartitioned), otherwise written here from `view()`.
Status SaveArray(Context& ctx, const ArrayBase& array, const std::string& path, ArrayFileKind kind,
                 const std::function<ArrayWriteView()>& view);
Status WriteArrayFile(const std::string& path, const ArrayWriteView& view);
Status WriteArrayText(const std::string& path, const ArrayWriteView& view);
// Checks the file against the expected element type and rank.
Result<ArrayFileContents> ReadArrayFile(const std::string& path, ArrayElementType type, int rank);

template <typename T, int N>
ArrayWriteView ViewOf(const DistArray<T, N>& array) {
  ArrayWriteView v{ElementTypeOf<T>()};
  v.sparse = array.is_sparse();
  v.shape.assign(array.shape().begin(), array.shape().end());
  v.count = array.nnz();
  if (!v.sparse) {
    v.values = array.data();
    return v;
  }
  v.values = v.count > 0 ? &array.value_at(0) : nullptr;
  v.keys = [&array](int64_t first, int64_t n, int64_t* out) {
    for (int64_t p = first; p < first + n; ++p) {
      const Key<N>& k = array.key_at(p);
      for (int d = 0; d < N; ++d) *out++ = k.idx[d];
    }
  };
  return v;
}

}  // namespace internal

// Writes `array` to `path` in the binary format. Errors: NotFound (the directory does not exist),
// InvalidArgument (cannot create or rename the file: permissions, a directory in the way),
// DataLoss (a write failed, e.g. a full disk). Each message names the file and why. Of a
// partitioned array in a distributed job (collective, above) every worker returns worker 0's
// error, or FailedPrecondition / Aborted / Unavailable when a worker did not make the same call.
// REQUIRES: `array` is valid.
template <typename T, int N>
Status save_array(const DistArray<T, N>& array, const std::string& path) {
  return internal::SaveArray(array.context(), array.base(), path, internal::ArrayFileKind::kBinary,
                             [&array] { return internal::ViewOf(array); });
}

// Writes `array` to `path` as text (see the top of this file). Errors as for save_array.
template <typename T, int N>
Status save_array_text(const DistArray<T, N>& array, const std::string& path) {
  return internal::SaveArray(array.context(), array.base(), path, internal::ArrayFileKind::kText,
                             [&array] { return internal::ViewOf(array); });
}

// Reads an array that save_array wrote, as a new array of `ctx` (dense or sparse as saved; a
// sparse array keeps the saved storage order).
// Errors: NotFound (cannot open), InvalidArgument (not an array file, another format version,
// element type or rank than <T, N>, keys out of range or repeated), DataLoss (truncated, trailing
// bytes, checksum mismatch).
// `loc` records the call as the array's origin (see internal::ArrayOrigin); leave it at its
// default.
template <typename T, int N>
Result<DistArray<T, N>> load_array(Context& ctx, const std::string& path,
                                   std::source_location loc = std::source_location::current()) {
  auto read = internal::ReadArrayFile(path, internal::ElementTypeOf<T>(), N);
  if (!read.ok()) return read.status();
  internal::ArrayFileContents& c = read.value();
  std::array<int64_t, N> shape{};
  std::copy(c.shape.begin(), c.shape.end(), shape.begin());
  auto a = DistArray<T, N>::WithOrigin(ctx, shape, c.sparse, internal::OriginOf(loc));
  const char* values = c.values.data();
  if (!c.sparse) {
    if (c.count > 0) std::memcpy(a.data(), values, static_cast<size_t>(c.count) * sizeof(T));
    return a;
  }
  a.reserve(c.count);
  for (int64_t p = 0; p < c.count; ++p) {
    Key<N> k;
    for (int d = 0; d < N; ++d) k.idx[d] = c.keys[static_cast<size_t>(p * N + d)];
    T v;
    std::memcpy(&v, values + static_cast<size_t>(p) * sizeof(T), sizeof(T));
    a.append_unchecked(k, v);
  }
  return a;
}

}  // namespace tessera

#endif  // TESSERA_ARRAY_IO_H_
