#include "tessera/table/wire.h"

namespace tessera {

TableSpec TableSpecFromProto(proto::TableSpec::Reader wire) {
  TableSpec spec;
  spec.id = wire.getId();
  spec.name = wire.getName();
  spec.value_type = static_cast<ValueType>(static_cast<uint16_t>(wire.getValueType()));
  spec.num_rows = wire.getNumRows();
  spec.width = wire.getWidth();
  spec.sparse = wire.getSparse();
  spec.staleness = wire.getStaleness();
  return spec;
}

void TableSpecToProto(const TableSpec& spec, proto::TableSpec::Builder out) {
  out.setId(spec.id);
  out.setName(spec.name);
  out.setValueType(static_cast<proto::ValueType>(static_cast<uint16_t>(spec.value_type)));
  out.setNumRows(spec.num_rows);
  out.setWidth(spec.width);
  out.setSparse(spec.sparse);
  out.setStaleness(spec.staleness);
}

}  // namespace tessera
