#include "tessera/table/table_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace tessera {

std::string_view ValueTypeName(ValueType t) {
  switch (t) {
    case ValueType::kFloat32:
      return "float32";
    case ValueType::kFloat64:
      return "float64";
    case ValueType::kInt32:
      return "int32";
    case ValueType::kInt64:
      return "int64";
  }
  return "unknown";
}

Status TableSpec::Validate() const {
  if (name.empty()) return Status::InvalidArgument(fmt::format("table {} has no name", id));
  if (num_rows == 0) return Status::InvalidArgument(fmt::format("table '{}' has no rows", name));
  if (static_cast<uint8_t>(value_type) > static_cast<uint8_t>(ValueType::kInt64)) {
    return Status::InvalidArgument(fmt::format("table '{}' has an unknown value type", name));
  }
  if (width == 0) return Status::InvalidArgument(fmt::format("table '{}' has width 0", name));
  if (!sparse && DenseRowBytes() > kMaxDenseRowBytes) {
    return Status::InvalidArgument(
        fmt::format("table '{}': a row of {} {} cells takes {} bytes, more than the limit of {}",
                    name, width, ValueTypeName(value_type), DenseRowBytes(), kMaxDenseRowBytes));
  }
  return Status::Ok();
}

uint64_t TableSpec::DenseRowBytes() const { return uint64_t{width} * ValueTypeSize(value_type); }

uint64_t TableSpec::MaxRowsPerRead() const {
  if (sparse) return std::numeric_limits<uint64_t>::max();
  return std::max<uint64_t>(1, kMaxReadReplyBytes / DenseRowBytes());
}

bool TableSpec::SameAs(const TableSpec& o) const {
  return id == o.id && name == o.name && value_type == o.value_type && num_rows == o.num_rows &&
         width == o.width && sparse == o.sparse && staleness == o.staleness;
}

}  // namespace tessera
