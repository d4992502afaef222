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

uint32_t ServerOfRow(TableId table, RowId row, uint32_t num_servers) {
  // splitmix64 finalizer: consecutive rows spread evenly, unlike a plain modulo of the row id
  // (which would put every k-th row of a strided access pattern on one server).
  uint64_t x = row ^ (uint64_t{table} << 40) ^ 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return static_cast<uint32_t>(x % num_servers);
}

}  // namespace tessera
