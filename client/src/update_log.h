// The client's update log: increments not sent yet, coalesced per row, and the writer of the
// update batches that carry them to a server.
//
// Contract: each stripe (client_table.h) keeps an OpLog of its rows' pending deltas and a list of
// the pending ones in the order they became pending; a flush moves every pending delta into one
// update batch per server (BatchWriter) and zeroes the entries, which stay for the next clock (a
// row updated every clock reuses its storage). Wire format: docs/parameter-server.md ("Wire
// format"). Nothing here locks: the stripe's mutex guards its log.
#ifndef TESSERA_CLIENT_SRC_UPDATE_LOG_H_
#define TESSERA_CLIENT_SRC_UPDATE_LOG_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>
#include <zmq.hpp>

#include "tessera/table/row_values.h"
#include "tessera/table/table_spec.h"
#include "tessera/table/wire.h"
#include "tessera/transport/message.h"

namespace tessera::client_internal {

// A row's coalesced updates not sent yet. An entry outlives the flush that sends it (zeroed, not
// pending) until the next one, so a row updated every clock reuses its storage.
struct PendingRow {
  RowValues delta;
  bool pending = false;   // delta holds updates not sent yet
  size_t slot = 0;        // its index in Stripe::pending while pending
  double importance = 0;  // accumulated sum |delta / value|, kept under kRelativeMagnitude
};

// A pending row and its update-log entry (entries stay put until erased from the log).
struct PendingRef {
  RowId row;
  PendingRow* entry;
};

using OpLog = std::unordered_map<RowId, PendingRow>;

// The importance of adding `delta` (`width` cells) to a row whose cached value is `base` (null:
// not cached): the sum of |delta / value| over its cells, |delta| where the value is 0.
template <typename T>
double RowImportance(const T* delta, size_t width, const RowValues* base) {
  auto cells = base == nullptr ? std::span<const T>() : base->dense<T>();
  double sum = 0;
  for (size_t i = 0; i < width; ++i) {
    double d = std::abs(static_cast<double>(delta[i]));
    double b = cells.empty() ? 0.0 : std::abs(static_cast<double>(cells[i]));
    sum += b == 0 ? d : d / b;
  }
  return sum;
}

// Writes one update batch: rows of dense tables packed in a DenseRows block per table, rows of
// sparse tables one by one. First every row is counted, so the message is sized (one segment,
// no copy) and each block allocated once; then the rows are written in any order.
class BatchWriter {
 public:
  void Count(const TableSpec& spec, const RowValues& delta) {
    if (spec.sparse) {
      ++sparse_rows_;
      sparse_bytes_ += delta.payload_bytes();
      return;
    }
    ++Block(spec).rows;
  }
  // REQUIRES: every row to be written was counted. `pool` (may be null) provides the buffer.
  void Start(uint32_t rank, uint64_t seq, int64_t clock, bool ack_wanted, FramePool* pool) {
    // Per sparse row a Row struct, a Values struct and list headers, about 8 words; per block
    // its cells, a row id per row, and headers.
    size_t words = sparse_bytes_ / sizeof(capnp::word) + sparse_rows_ * 8 + 16;
    for (const DenseBlockOut& b : blocks_) {
      words += (b.rows * b.row_bytes + 7) / sizeof(capnp::word) + b.rows + 16;
    }
    message_ = std::make_unique<OutgoingMessage>(rank, 0, static_cast<unsigned>(words), pool);
    auto update = message_->envelope().getBody().initUpdate();
    update.setSeq(seq);
    update.setClock(clock);
    update.setAckWanted(ack_wanted);
    if (sparse_rows_ > 0) sparse_ = update.initRows(static_cast<unsigned>(sparse_rows_));
    if (!blocks_.empty()) {
      auto dense = update.initDense(static_cast<unsigned>(blocks_.size()));
      for (unsigned i = 0; i < blocks_.size(); ++i) {
        DenseBlockOut& b = blocks_[i];
        dense[i].setTable(b.spec->id);
        b.ids = dense[i].initRows(static_cast<unsigned>(b.rows));
        b.cells = RowValues::InitDenseBlock(dense[i].initValues(), *b.spec, b.rows);
      }
    }
  }
  void Write(const TableSpec& spec, RowId row, const RowValues& delta) {
    ++written_;
    if (spec.sparse) {
      auto out = sparse_[sparse_filled_++];
      out.setTable(spec.id);
      out.setRow(row);
      delta.ToProto(out.initValues());
      return;
    }
    DenseBlockOut& b = Block(spec);
    b.ids.set(b.filled, row);
    delta.CopyDenseTo(b.cells + b.filled * b.row_bytes);
    ++b.filled;
  }
  size_t written() const { return written_; }
  zmq::message_t Finish() { return message_->ToFrame(); }

 private:
  struct DenseBlockOut {
    const TableSpec* spec;
    size_t row_bytes;
    size_t rows = 0;
    unsigned filled = 0;
    capnp::List<uint64_t>::Builder ids;
    std::byte* cells = nullptr;
  };
  // A batch holds rows of a few tables: a linear search beats a map.
  DenseBlockOut& Block(const TableSpec& spec) {
    for (DenseBlockOut& b : blocks_) {
      if (b.spec == &spec) return b;
    }
    blocks_.push_back({&spec, spec.width * ValueTypeSize(spec.value_type)});
    return blocks_.back();
  }

  std::vector<DenseBlockOut> blocks_;
  size_t sparse_rows_ = 0, sparse_bytes_ = 0, written_ = 0;
  unsigned sparse_filled_ = 0;
  capnp::List<proto::Row>::Builder sparse_{nullptr};
  std::unique_ptr<OutgoingMessage> message_;
};

}  // namespace tessera::client_internal

#endif  // TESSERA_CLIENT_SRC_UPDATE_LOG_H_
