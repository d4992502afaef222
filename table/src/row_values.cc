#include "tessera/table/row_values.h"

#include <capnp/any.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "tessera/common/prefetch.h"

namespace tessera {
namespace {

// The wire list of type T inside a Values union.
template <typename T>
auto GetList(proto::Values::Reader v) {
  if constexpr (std::is_same_v<T, float>)
    return v.getF32();
  else if constexpr (std::is_same_v<T, double>)
    return v.getF64();
  else if constexpr (std::is_same_v<T, int32_t>)
    return v.getI32();
  else
    return v.getI64();
}

template <typename T>
auto InitList(proto::Values::Builder v, unsigned n) {
  if constexpr (std::is_same_v<T, float>)
    return v.initF32(n);
  else if constexpr (std::is_same_v<T, double>)
    return v.initF64(n);
  else if constexpr (std::is_same_v<T, int32_t>)
    return v.initI32(n);
  else
    return v.initI64(n);
}

template <typename T>
proto::Values::Which WhichOf() {
  if constexpr (std::is_same_v<T, float>)
    return proto::Values::F32;
  else if constexpr (std::is_same_v<T, double>)
    return proto::Values::F64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return proto::Values::I32;
  else
    return proto::Values::I64;
}

// OK if the wire list is of the table's value type T.
template <typename T>
Status CheckValueType(proto::Values::Reader wire, const TableSpec& spec) {
  if (wire.which() == WhichOf<T>()) return Status::Ok();
  return Status::InvalidArgument(fmt::format("table '{}' holds {} values; message has another type",
                                             spec.name, ValueTypeName(spec.value_type)));
}

// Cap'n Proto lays out a list of primitives as a packed little-endian array. On a little-endian
// machine its bytes are exactly a T[], so whole rows move with one memcpy instead of one bounds-
// checked get()/set() per cell; the layout is still Cap'n Proto's own.
static_assert(std::endian::native == std::endian::little, "Tessera assumes a little-endian host");

template <typename T>
const T* RawCells(typename capnp::List<T>::Reader list) {
  return reinterpret_cast<const T*>(capnp::AnyList::Reader(list).getRawBytes().begin());
}

template <typename T>
T* RawCells(typename capnp::List<T>::Builder list) {
  // The bytes belong to the message being built, so writing them is writing the list.
  return const_cast<T*>(
      reinterpret_cast<const T*>(capnp::AnyList::Reader(list.asReader()).getRawBytes().begin()));
}

}  // namespace

RowValues RowValues::Zero(const TableSpec& spec) {
  RowValues r;
  r.sparse_ = spec.sparse;
  VisitValueType(spec.value_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    r.values_ = std::vector<T>(spec.sparse ? 0 : spec.width, T{});
  });
  return r;
}

ValueType RowValues::value_type() const {
  return std::visit(
      [](const auto& v) { return ValueTypeOf<typename std::decay_t<decltype(v)>::value_type>(); },
      values_);
}

size_t RowValues::size() const {
  return std::visit([](const auto& v) { return v.size(); }, values_);
}

size_t RowValues::payload_bytes() const {
  size_t value_bytes = std::visit(
      [](const auto& v) {
        return v.size() * sizeof(typename std::decay_t<decltype(v)>::value_type);
      },
      values_);
  return value_bytes + columns_.size() * sizeof(uint32_t);
}

bool RowValues::IsZero() const {
  return std::visit(
      [](const auto& v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        return std::all_of(v.begin(), v.end(), [](T x) { return x == T{}; });
      },
      values_);
}

Status RowValues::CheckProto(proto::Values::Reader wire, const TableSpec& spec) {
  return VisitValueType(spec.value_type, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    TESSERA_RETURN_IF_ERROR(CheckValueType<T>(wire, spec));
    auto list = GetList<T>(wire);
    auto cols = wire.getColumns();
    if (!spec.sparse) {
      if (cols.size() != 0 || list.size() != spec.width) {
        return Status::InvalidArgument(fmt::format(
            "dense row of table '{}' must have {} values, message has {} values and {} columns",
            spec.name, spec.width, list.size(), cols.size()));
      }
      return Status::Ok();
    }
    if (cols.size() != list.size()) {
      return Status::InvalidArgument(
          fmt::format("sparse row of table '{}': {} columns but {} values", spec.name, cols.size(),
                      list.size()));
    }
    for (unsigned i = 0; i < cols.size(); ++i) {
      if (cols[i] >= spec.width) {
        return Status::OutOfRange(fmt::format("column {} out of range for table '{}' (width {})",
                                              cols[i], spec.name, spec.width));
      }
      if (i > 0 && cols[i] <= cols[i - 1]) {
        return Status::InvalidArgument(
            fmt::format("sparse row of table '{}': columns not strictly increasing", spec.name));
      }
    }
    return Status::Ok();
  });
}

Result<RowValues> RowValues::FromProto(proto::Values::Reader wire, const TableSpec& spec) {
  TESSERA_RETURN_IF_ERROR(CheckProto(wire, spec));
  RowValues r;
  r.sparse_ = spec.sparse;
  VisitValueType(spec.value_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto list = GetList<T>(wire);
    std::vector<T> values(list.size());
    if (!values.empty()) std::memcpy(values.data(), RawCells<T>(list), values.size() * sizeof(T));
    r.values_ = std::move(values);
    if (spec.sparse) {
      auto cols = wire.getColumns();
      r.columns_.resize(cols.size());
      for (unsigned i = 0; i < cols.size(); ++i) r.columns_[i] = cols[i];
    }
  });
  return r;
}

void RowValues::AddProto(proto::Values::Reader wire, const TableSpec& spec) {
  if (sparse_) {
    auto delta = FromProto(wire, spec);
    TESSERA_CHECK(delta.ok());
    Add(*delta);
    return;
  }
  std::visit(
      [&](auto& v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        auto list = GetList<T>(wire);
        TESSERA_CHECK(list.size() == v.size());
        const T* cells = RawCells<T>(list);
        AddCells(v.data(), cells, v.size());
      },
      values_);
}

void RowValues::ToProto(proto::Values::Builder out) const {
  if (sparse_) {
    auto cols = out.initColumns(static_cast<unsigned>(columns_.size()));
    for (unsigned i = 0; i < columns_.size(); ++i) cols.set(i, columns_[i]);
  }
  std::visit(
      [&](const auto& v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        auto list = InitList<T>(out, static_cast<unsigned>(v.size()));
        if (!v.empty()) std::memcpy(RawCells<T>(list), v.data(), v.size() * sizeof(T));
      },
      values_);
}

void RowValues::ZeroToProto(const TableSpec& spec, proto::Values::Builder out) {
  if (spec.sparse) out.initColumns(0);
  VisitValueType(spec.value_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    InitList<T>(out, spec.sparse ? 0 : spec.width);  // Cap'n Proto lists start out zeroed
  });
}

void RowValues::AssignProto(proto::Values::Reader wire, const TableSpec& spec) {
  sparse_ = spec.sparse;
  VisitValueType(spec.value_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto list = GetList<T>(wire);
    if (!std::holds_alternative<std::vector<T>>(values_)) values_ = std::vector<T>();
    auto& v = std::get<std::vector<T>>(values_);
    v.resize(list.size());
    if (!v.empty()) std::memcpy(v.data(), RawCells<T>(list), v.size() * sizeof(T));
    if (spec.sparse) {
      auto cols = wire.getColumns();
      columns_.resize(cols.size());
      for (unsigned i = 0; i < cols.size(); ++i) columns_[i] = cols[i];
    } else {
      columns_.clear();
    }
  });
}

void DenseBlock::CopyRow(size_t i, std::byte* dst) const { std::memcpy(dst, row(i), row_bytes_); }

Result<DenseBlock> DenseBlock::Check(proto::Values::Reader wire, size_t rows,
                                     const TableSpec& spec) {
  if (spec.sparse) {
    return Status::InvalidArgument(
        fmt::format("table '{}' has sparse rows; a packed block holds dense rows", spec.name));
  }
  return VisitValueType(spec.value_type, [&](auto tag) -> Result<DenseBlock> {
    using T = typename decltype(tag)::type;
    TESSERA_RETURN_IF_ERROR(CheckValueType<T>(wire, spec));
    auto list = GetList<T>(wire);
    auto cols = wire.getColumns();
    if (cols.size() != 0 || list.size() != rows * spec.width) {
      return Status::InvalidArgument(
          fmt::format("a block of {} rows of table '{}' must have {} values, message has {} "
                      "values and {} columns",
                      rows, spec.name, rows * spec.width, list.size(), cols.size()));
    }
    const T* cells = list.size() > 0 ? RawCells<T>(list) : nullptr;
    return DenseBlock(reinterpret_cast<const std::byte*>(cells), spec.width * sizeof(T));
  });
}

std::byte* RowValues::InitDenseBlock(proto::Values::Builder out, const TableSpec& spec,
                                     size_t rows) {
  TESSERA_CHECK(!spec.sparse);
  return VisitValueType(spec.value_type, [&](auto tag) -> std::byte* {
    using T = typename decltype(tag)::type;
    // Cap'n Proto lists start out zeroed: rows never written need no copy.
    auto list = InitList<T>(out, static_cast<unsigned>(rows * spec.width));
    return list.size() > 0 ? reinterpret_cast<std::byte*>(RawCells<T>(list)) : nullptr;
  });
}

void RowValues::CopyDenseTo(std::byte* dst) const {
  TESSERA_CHECK(!sparse_);
  std::visit(
      [&](const auto& v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        if (!v.empty()) std::memcpy(dst, v.data(), v.size() * sizeof(T));
      },
      values_);
}

void RowValues::AssignDense(const std::byte* cells, const TableSpec& spec) {
  TESSERA_CHECK(!spec.sparse);
  sparse_ = false;
  columns_.clear();
  VisitValueType(spec.value_type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (!std::holds_alternative<std::vector<T>>(values_)) values_ = std::vector<T>();
    auto& v = std::get<std::vector<T>>(values_);
    v.resize(spec.width);
    if (!v.empty()) std::memcpy(v.data(), cells, v.size() * sizeof(T));
  });
}

void RowValues::AddDense(const std::byte* cells) {
  TESSERA_CHECK(!sparse_);
  std::visit(
      [&](auto& v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        // A row of a block starts at a multiple of sizeof(T) from the word-aligned list.
        const T* src = reinterpret_cast<const T*>(cells);
        AddCells(v.data(), src, v.size());
      },
      values_);
}

void RowValues::AddDenseTo(std::byte* dst) const {
  TESSERA_CHECK(!sparse_);
  std::visit(
      [&](const auto& v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        AddCells(reinterpret_cast<T*>(dst), v.data(), v.size());
      },
      values_);
}

void RowValues::PrefetchCellsForWrite() const {
  if (sparse_) return;
  std::visit(
      [](const auto& v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        // The capacity, not the size: a reserved row has none yet.
        PrefetchForWrite(v.data(), v.capacity() * sizeof(T));
      },
      values_);
}

void RowValues::SetZero() {
  columns_.clear();
  std::visit(
      [&](auto& v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        if (sparse_) {
          v.clear();
        } else {
          std::fill(v.begin(), v.end(), T{});
        }
      },
      values_);
}

void RowValues::Add(const RowValues& delta) {
  TESSERA_CHECK(sparse_ == delta.sparse_ && values_.index() == delta.values_.index());
  std::visit(
      [&](auto& v) {
        using V = std::decay_t<decltype(v)>;
        using T = typename V::value_type;
        const auto& d = std::get<V>(delta.values_);
        if (!sparse_) {
          TESSERA_CHECK(v.size() == d.size());
          AddCells(v.data(), d.data(), v.size());
          return;
        }
        // Merge two sorted sparse rows, dropping cells that cancel to zero.
        std::vector<uint32_t> cols;
        std::vector<T> vals;
        cols.reserve(columns_.size() + delta.columns_.size());
        vals.reserve(cols.capacity());
        size_t i = 0, j = 0;
        while (i < columns_.size() || j < delta.columns_.size()) {
          uint32_t c;
          T x;
          if (j == delta.columns_.size() ||
              (i < columns_.size() && columns_[i] < delta.columns_[j])) {
            c = columns_[i];
            x = v[i++];
          } else if (i == columns_.size() || delta.columns_[j] < columns_[i]) {
            c = delta.columns_[j];
            x = d[j++];
          } else {
            c = columns_[i];
            x = v[i++] + d[j++];
          }
          if (x != T{}) {
            cols.push_back(c);
            vals.push_back(x);
          }
        }
        columns_ = std::move(cols);
        v = std::move(vals);
      },
      values_);
}

double RowValues::CellAsDouble(uint32_t col) const {
  return std::visit(
      [&](const auto& v) -> double {
        if (!sparse_) return col < v.size() ? static_cast<double>(v[col]) : 0.0;
        auto it = std::lower_bound(columns_.begin(), columns_.end(), col);
        if (it == columns_.end() || *it != col) return 0.0;
        return static_cast<double>(v[it - columns_.begin()]);
      },
      values_);
}

double RowValues::RelativeMagnitude(const RowValues& base) const {
  double sum = 0;
  std::visit(
      [&](const auto& v) {
        for (size_t i = 0; i < v.size(); ++i) {
          uint32_t col = sparse_ ? columns_[i] : static_cast<uint32_t>(i);
          double d = std::abs(static_cast<double>(v[i]));
          double b = std::abs(base.CellAsDouble(col));
          sum += b == 0 ? d : d / b;
        }
      },
      values_);
  return sum;
}

}  // namespace tessera
