// RowValues: the cells of one table row, dense or sparse, in the table's value type.
//
// Used for stored rows (server shards, client cache) and for additive deltas (update logs).
// Sparse rows keep columns sorted and never store zeros, so a count that returns to zero
// disappears. Not thread-safe: callers synchronize.
#ifndef TESSERA_TABLE_ROW_VALUES_H_
#define TESSERA_TABLE_ROW_VALUES_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <variant>
#include <vector>

#include "tessera/common/check.h"
#include "tessera/common/status.h"
#include "tessera/proto/tessera.capnp.h"
#include "tessera/table/table_spec.h"

namespace tessera {

// dst[i] += src[i] for i < n, for whole dense rows. REQUIRES: the ranges do not overlap.
// Written as fixed blocks of 8 so that the compiler vectorizes it at -O2 (its cheapest cost model
// does not vectorize a loop of unknown length, nor one whose pointers may alias).
template <typename T>
inline void AddCells(T* __restrict dst, const T* __restrict src, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (size_t j = 0; j < 8; ++j) dst[i + j] += src[i + j];
  }
  for (; i < n; ++i) dst[i] += src[i];
}

// The cells of a wire DenseRows block: whole rows of one dense table packed in one list, row i
// at cells [i * width, (i + 1) * width). Checked once, then read row by row without further
// checks. Points into the message it was read from: valid while that message is.
class DenseBlock {
 public:
  // InvalidArgument unless `values` holds exactly `rows` rows of dense table `spec` (its value
  // type, no columns).
  static Result<DenseBlock> Check(proto::Values::Reader values, size_t rows, const TableSpec& spec);
  // The bytes of row i's cells. REQUIRES: i < the block's rows.
  const std::byte* row(size_t i) const { return cells_ + i * row_bytes_; }
  // Copies row i's cells to `dst` (room for a row). REQUIRES: i < the block's rows.
  void CopyRow(size_t i, std::byte* dst) const;

 private:
  DenseBlock(const std::byte* cells, size_t row_bytes) : cells_(cells), row_bytes_(row_bytes) {}
  const std::byte* cells_;
  size_t row_bytes_;
};

class RowValues {
 public:
  // An all-zero row of `spec`'s type and layout.
  static RowValues Zero(const TableSpec& spec);

  // Decodes wire values, checking type, layout and column bounds against `spec`.
  static Result<RowValues> FromProto(proto::Values::Reader values, const TableSpec& spec);
  // The checks of FromProto without decoding, so a batch can be validated before any of it is
  // applied.
  static Status CheckProto(proto::Values::Reader values, const TableSpec& spec);
  // Adds wire values to this row without an intermediate copy for dense rows.
  // REQUIRES: CheckProto(values, spec of this row) is OK.
  void AddProto(proto::Values::Reader values, const TableSpec& spec);
  void ToProto(proto::Values::Builder out) const;
  // Writes an all-zero row of `spec`, as ToProto(Zero(spec)) would, without building it.
  static void ZeroToProto(const TableSpec& spec, proto::Values::Builder out);
  // Overwrites this row with wire values, reusing its storage when the layout matches.
  // REQUIRES: CheckProto(values, spec) is OK.
  void AssignProto(proto::Values::Reader values, const TableSpec& spec);

  // Packed dense rows (DenseBlock). Starts a block of `rows` all-zero rows of dense table `spec`
  // in `out` and returns where its cells begin (row i at i * width cells on), for CopyDenseTo.
  static std::byte* InitDenseBlock(proto::Values::Builder out, const TableSpec& spec, size_t rows);
  // Writes this row's cells to `dst`, a row of InitDenseBlock. REQUIRES: a dense row of that
  // block's table.
  void CopyDenseTo(std::byte* dst) const;
  // Overwrites this row with `cells`, a row of a DenseBlock of `spec`, reusing its storage.
  // REQUIRES: `spec` is dense.
  void AssignDense(const std::byte* cells, const TableSpec& spec);
  // Adds `cells`, a row of a DenseBlock of this row's table. REQUIRES: a dense row.
  void AddDense(const std::byte* cells);
  // Adds this row's cells to `dst`, a row of cells of this row's type (aligned for it).
  // REQUIRES: a dense row.
  void AddDenseTo(std::byte* dst) const;

  RowValues() = default;

  bool sparse() const { return sparse_; }
  ValueType value_type() const;
  // Stored cells: the width for dense rows, the non-zeros for sparse rows.
  size_t size() const;
  // Bytes of cell payload, for bandwidth accounting.
  size_t payload_bytes() const;
  bool IsZero() const;

  // Asks the CPU to bring the storage of a dense row's cells into its cache, for a write soon:
  // storage reused from rows dropped long ago is out of the caches, and writing it cold stalls
  // the writer (and the next lock it takes) on one cache miss after another.
  void PrefetchCellsForWrite() const;

  // Sets every cell to zero, keeping the storage (sparse rows drop their cells).
  void SetZero();

  // REQUIRES: same value type and layout as this row; not this row itself.
  void Add(const RowValues& delta);
  // REQUIRES: T is the row's value type; col < width for dense rows.
  template <typename T>
  void AddCell(uint32_t col, T delta);

  // REQUIRES: dense row of type T.
  template <typename T>
  std::span<const T> dense() const {
    return std::get<std::vector<T>>(values_);
  }
  template <typename T>
  std::span<T> mutable_dense() {
    return std::get<std::vector<T>>(values_);
  }
  // Sparse rows: sorted columns and their values. REQUIRES: sparse row of type T.
  std::span<const uint32_t> columns() const { return columns_; }
  template <typename T>
  std::span<const T> values() const {
    return std::get<std::vector<T>>(values_);
  }

  // Cell `col` converted to double (0 for an absent sparse column).
  double CellAsDouble(uint32_t col) const;

  // Sum over cells of |delta| / |base| (|delta| where base is 0): how much this delta changes
  // `base`. Used to rank pending updates by importance.
  double RelativeMagnitude(const RowValues& base) const;

  friend bool operator==(const RowValues&, const RowValues&) = default;

 private:
  using Storage = std::variant<std::vector<float>, std::vector<double>, std::vector<int32_t>,
                               std::vector<int64_t>>;
  bool sparse_ = false;
  std::vector<uint32_t> columns_;  // sparse only
  Storage values_;
};

template <typename T>
void RowValues::AddCell(uint32_t col, T delta) {
  auto& v = std::get<std::vector<T>>(values_);
  if (!sparse_) {
    TESSERA_CHECK(col < v.size());
    v[col] += delta;
    return;
  }
  auto it = std::lower_bound(columns_.begin(), columns_.end(), col);
  size_t pos = it - columns_.begin();
  if (it != columns_.end() && *it == col) {
    v[pos] += delta;
    if (v[pos] == T{}) {
      columns_.erase(it);
      v.erase(v.begin() + static_cast<ptrdiff_t>(pos));
    }
  } else if (delta != T{}) {
    columns_.insert(it, col);
    v.insert(v.begin() + static_cast<ptrdiff_t>(pos), delta);
  }
}

}  // namespace tessera

#endif  // TESSERA_TABLE_ROW_VALUES_H_
