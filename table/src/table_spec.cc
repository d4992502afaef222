#include "tessera/table/table_spec.h"

#include <fmt/format.h>

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
  return Status::Ok();
}

bool TableSpec::SameAs(const TableSpec& o) const {
  return id == o.id && name == o.name && value_type == o.value_type && num_rows == o.num_rows &&
         width == o.width && sparse == o.sparse && staleness == o.staleness;
}

}  // namespace tessera
