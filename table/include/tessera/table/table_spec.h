// TableSpec: the shape and consistency contract of one parameter-server table.
#ifndef TESSERA_TABLE_TABLE_SPEC_H_
#define TESSERA_TABLE_TABLE_SPEC_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "tessera/common/status.h"

namespace tessera {

enum class ValueType : uint8_t { kFloat32, kFloat64, kInt32, kInt64 };

std::string_view ValueTypeName(ValueType t);

template <typename T>
constexpr ValueType ValueTypeOf();
template <>
constexpr ValueType ValueTypeOf<float>() {
  return ValueType::kFloat32;
}
template <>
constexpr ValueType ValueTypeOf<double>() {
  return ValueType::kFloat64;
}
template <>
constexpr ValueType ValueTypeOf<int32_t>() {
  return ValueType::kInt32;
}
template <>
constexpr ValueType ValueTypeOf<int64_t>() {
  return ValueType::kInt64;
}

// Calls f(std::type_identity<T>{}) with the C++ type of `t`.
template <typename F>
decltype(auto) VisitValueType(ValueType t, F&& f) {
  switch (t) {
    case ValueType::kFloat32:
      return f(std::type_identity<float>{});
    case ValueType::kFloat64:
      return f(std::type_identity<double>{});
    case ValueType::kInt32:
      return f(std::type_identity<int32_t>{});
    case ValueType::kInt64:
      break;
  }
  return f(std::type_identity<int64_t>{});
}

// Bytes of one cell of type `t`.
inline size_t ValueTypeSize(ValueType t) {
  return VisitValueType(t, [](auto tag) { return sizeof(typename decltype(tag)::type); });
}

using TableId = uint32_t;
using RowId = uint64_t;

// Bounds on what one table and one read may take (docs/security.md). A table's
// spec comes in a message, so its sizes are checked before anything is allocated from them.
//
// A dense row's cells (width x cell size): a row travels whole in one message and a server
// answers a read of it in one; 256 MiB is 32M doubles, far wider than any model row.
inline constexpr uint64_t kMaxDenseRowBytes = uint64_t{1} << 28;
// The cells one read's answer may carry (rows x row bytes). A Client splits larger reads of a
// dense table into several requests; a server refuses a request whose answer would exceed it
// (a read names a row in 8 bytes, its answer may be a whole row: without the bound a small
// request could make the server build an arbitrarily large answer).
inline constexpr uint64_t kMaxReadReplyBytes = uint64_t{1} << 28;

struct TableSpec {
  TableId id = 0;    // chosen by the program; the same id names the same table everywhere
  std::string name;  // for messages and logs
  ValueType value_type = ValueType::kFloat32;
  uint64_t num_rows = 0;   // rows 0 .. num_rows-1 exist, initially zero
  uint32_t width = 0;      // columns per row; for sparse rows the bound on column ids
  bool sparse = false;     // sparse rows (column -> value), for count tables
  uint32_t staleness = 0;  // SSP bound s. Default: 0 (bulk-synchronous)

  // InvalidArgument unless num_rows and width are positive, the name is not empty and a dense
  // row takes at most kMaxDenseRowBytes.
  Status Validate() const;
  // Bytes of one dense row's cells (width x cell size). REQUIRES: !sparse.
  uint64_t DenseRowBytes() const;
  // The most rows one read request may name so that its answer fits kMaxReadReplyBytes: at
  // least 1 for a valid dense table; no bound for a sparse one (its rows' sizes vary: a server
  // refuses a read whose rows exceed the bound). REQUIRES: Validate().ok().
  uint64_t MaxRowsPerRead() const;
  // True when both describe the same table (creating a table twice with equal specs is allowed).
  bool SameAs(const TableSpec& other) const;
};

}  // namespace tessera

#endif  // TESSERA_TABLE_TABLE_SPEC_H_
