// Conversions between table descriptions and their wire form.
#ifndef TESSERA_TABLE_WIRE_H_
#define TESSERA_TABLE_WIRE_H_

#include "tessera/proto/tessera.capnp.h"
#include "tessera/table/table_spec.h"

namespace tessera {

TableSpec TableSpecFromProto(proto::TableSpec::Reader wire);
void TableSpecToProto(const TableSpec& spec, proto::TableSpec::Builder out);

// Row placement: the server that holds (table, row). Stable across processes and runs.
uint32_t ServerOfRow(TableId table, RowId row, uint32_t num_servers);

}  // namespace tessera

#endif  // TESSERA_TABLE_WIRE_H_
