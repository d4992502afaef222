// A server's shard of one table: the rows written so far with their readers and their state for
// the next push, the readers of rows nobody has written, and how rows are written into replies.
//
// Contract: a row is stored from its first write on (RowToUpdate) and never erased, so pointers
// to it stay valid (the push lists hold them); a row nobody has written is answered as zeros
// without being stored. Not thread-safe: the server's loop owns its tables.
#ifndef TESSERA_SERVER_SRC_SHARD_TABLE_H_
#define TESSERA_SERVER_SRC_SHARD_TABLE_H_

#include <cstddef>
#include <cstdint>

#include "row_readers.h"
#include "tessera/proto/tessera.capnp.h"
#include "tessera/table/row_index.h"
#include "tessera/table/row_values.h"
#include "tessera/table/table_spec.h"

namespace tessera::server_internal {

// StoredRow::dirty_epoch of a row with no change to push.
constexpr int64_t kClean = -1;
// StoredRow::dirty_epoch of a row still listed for the next push but sent early since.
constexpr int64_t kPushedEarly = -2;

// A written row of a shard. What an unsubscription checks comes first, on the entry's first
// cache line.
struct StoredRow {
  RowId id = 0;
  Subscribers subscribers;
  TableId table = 0;
  RowValues values;
  // kClean, or kPushedEarly (still listed in dirty_ but sent since), or the clock at which it
  // changed and was listed in dirty_ for the next push.
  int64_t dirty_epoch = -1;
  double change = 0;  // sum |delta / value| since last sent (kRelativeMagnitude only)
};

struct ShardTable {
  TableSpec spec;
  // Rows written so far. They stay put (dirty_ points at them) and are never erased.
  RowIndex<StoredRow> rows;
  // The readers of rows nobody has written yet (all zeros, so nothing to store but who to push
  // them to once written), by block (UnwrittenBlock::BlockOf). Kept apart from `rows` and erased
  // when a block's last reader unsubscribes, so a worker streaming through rows nobody wrote
  // keeps a small, cache-resident index busy rather than a large one, and does not grow it
  // either. A row's readers move to its StoredRow when it is first written.
  RowIndex<UnwrittenBlock> unwritten_readers;

  // The row with its values, for an update; created (all zeros) on the first.
  StoredRow& RowToUpdate(RowId id) {
    auto [row, inserted] = rows.FindOrAdd(id);
    if (inserted) {
      row->table = spec.id;
      row->id = id;
      row->values = RowValues::Zero(spec);
      const uint64_t block = UnwrittenBlock::BlockOf(id);
      if (UnwrittenBlock* readers = unwritten_readers.Find(block)) {
        readers->MoveReaders(id, row->subscribers);
        if (readers->empty()) unwritten_readers.Erase(block);
      }
    }
    return *row;
  }
  // Writes the row's values; a null `row` is one nobody has written, all zeros (a cold read of
  // it costs no allocation and no copy of zeros).
  void WriteValues(const StoredRow* row, proto::Values::Builder out) const {
    if (row != nullptr) {
      row->values.ToProto(out);
    } else {
      RowValues::ZeroToProto(spec, out);
    }
  }
  // Words `n` of this table's rows take in a RowBatch: dense rows packed in one block (the
  // cells, a row id each, headers); sparse rows, per row a Row and a Values struct and list
  // headers, about 8 words, and the message grows for their cells as needed.
  size_t MessageWords(size_t n) const {
    if (spec.sparse) return n * 8 + 16;
    return (n * spec.width * ValueTypeSize(spec.value_type) + 7) / sizeof(capnp::word) + n + 24;
  }
  // Writes `n` rows of this dense table into `block`, packed: row i is `id_of(i)`, with the
  // cells of `row_of(i)` (null: a row nobody has written, all zeros as the block starts out).
  // REQUIRES: !spec.sparse.
  template <typename IdOf, typename RowOf>
  void WriteDenseBlock(size_t n, IdOf id_of, RowOf row_of, proto::DenseRows::Builder block) {
    block.setTable(spec.id);
    auto ids = block.initRows(static_cast<unsigned>(n));
    std::byte* cells = RowValues::InitDenseBlock(block.initValues(), spec, n);
    const size_t row_bytes = spec.width * ValueTypeSize(spec.value_type);
    for (unsigned i = 0; i < n; ++i) {
      ids.set(i, id_of(i));
      if (const StoredRow* row = row_of(i)) row->values.CopyDenseTo(cells + i * row_bytes);
    }
  }
};

}  // namespace tessera::server_internal

#endif  // TESSERA_SERVER_SRC_SHARD_TABLE_H_
