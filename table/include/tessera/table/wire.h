// Conversions between table descriptions and their wire form.
#ifndef TESSERA_TABLE_WIRE_H_
#define TESSERA_TABLE_WIRE_H_

#include "tessera/proto/tessera.capnp.h"
#include "tessera/table/table_spec.h"

namespace tessera {

TableSpec TableSpecFromProto(proto::TableSpec::Reader wire);
void TableSpecToProto(const TableSpec& spec, proto::TableSpec::Builder out);

// Row placement: the server that holds (table, row). Stable across processes and runs.
// Inline: clients and servers place every row of every batch (a call per row showed in profiles).
inline uint32_t ServerOfRow(TableId table, RowId row, uint32_t num_servers) {
  if (num_servers == 1) return 0;
  // splitmix64 finalizer: consecutive rows spread evenly, unlike a plain modulo of the row id
  // (which would put every k-th row of a strided access pattern on one server).
  uint64_t x = row ^ (uint64_t{table} << 40) ^ 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return static_cast<uint32_t>(x % num_servers);
}

}  // namespace tessera

#endif  // TESSERA_TABLE_WIRE_H_
