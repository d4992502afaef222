#include "distributed/array_save.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>

#include "distributed/partitioned_arrays.h"
#include "distributed/partitioned_records.h"
#include "internal/array_stream_writer.h"
#include "tessera/transport/message.h"

namespace tessera::internal {
namespace {

// Steps of the save's exchange (its own tag): 0 the prologue (an all-gather), 1 + j the j-th
// chunk a sender sends and rank 0's credit for it, kResultStep rank 0's result.
constexpr int64_t kResultStep = -1;
constexpr std::string_view kPrologueMagic = "tessera-save-rows/1";

ArrayElementType TypeOf(const ArrayBase& a) {
  switch (a.table_value_type()) {
    case 0:
      return ArrayElementType::kFloat32;
    case 1:
      return ArrayElementType::kFloat64;
    case 2:
      return ArrayElementType::kInt32;
    default:
      return ArrayElementType::kInt64;
  }
}

// What every worker must agree on: the call (array, path, format) and the plan's inputs.
std::string Describe(const ArrayBase& a, const std::vector<SavedRows>& rows,
                     const RowSaveOptions& o) {
  std::string shape;
  for (int d = 0; d < a.rank(); ++d) shape += fmt::format("{}{}", d > 0 ? "x" : "", a.extent(d));
  uint64_t plan = 1469598103934665603ULL;  // FNV-1a over the row pieces
  auto mix = [&plan](uint64_t v) {
    for (int i = 0; i < 8; ++i, v >>= 8) plan = (plan ^ (v & 0xff)) * 1099511628211ULL;
  };
  for (const SavedRows& r : rows) {
    mix(static_cast<uint64_t>(r.lo));
    mix(static_cast<uint64_t>(r.hi));
    mix(r.holders);
  }
  return fmt::format(
      "{} array #{} {} of {}-byte elements, {} to '{}', chunks {} window {} plan {:x}",
      kPrologueMagic, a.id(), shape, a.element_bytes(), o.text ? "as text" : "binary", o.path,
      o.chunk_bytes, o.window, plan);
}

// The prologue: the description, then (rank 0) whether the file could be created.
std::string Prologue(const std::string& description, const Status& created) {
  std::string p = description;
  p.push_back('\0');
  p += std::to_string(static_cast<int>(created.code()));
  p.push_back('\0');
  p += created.message();
  return p;
}

// The error of a save some worker did not take part in.
std::string NotCollective(const std::string& path, const std::string& what) {
  return fmt::format(
      "save_array('{}') of an array the job keeps partitioned is collective: every worker must "
      "call it at the same point of the program, not under a rank-dependent condition "
      "(docs/programming-model.md); {}",
      path, what);
}

// One message of a chunk or credit: tag, step and the bytes.
Status SendPayload(PeerMesh& mesh, int to, uint64_t tag, int64_t step, const char* data, size_t n) {
  OutgoingMessage msg(static_cast<uint32_t>(mesh.rank()), 0,
                      static_cast<unsigned>(n / sizeof(capnp::word) + 16));
  auto peer = msg.envelope().getBody().initPeer();
  peer.setTag(tag);
  peer.setStep(step);
  peer.setPayload(kj::arrayPtr(reinterpret_cast<const kj::byte*>(data), n));
  return mesh.Send(to, msg);
}

Result<std::string> ReceivePayload(PeerMesh& mesh, int from, uint64_t tag, int64_t step) {
  auto msg = mesh.Receive(from, tag, step);
  if (!msg.ok()) return msg.status();
  try {
    auto payload = (*msg)->envelope().getBody().getPeer().getPayload();
    return std::string(reinterpret_cast<const char*>(payload.begin()), payload.size());
  } catch (const kj::Exception& e) {
    return Status::DataLoss(fmt::format("malformed save_array message from worker {}: {}", from,
                                        e.getDescription().cStr()));
  }
}

struct Chunk {
  int64_t lo = 0;
  int64_t hi = 0;
  int source = 0;         // the worker that sends it (0: rank 0 has it or computes it)
  bool computed = false;  // nobody holds it: computed from the factory's recipe
  int64_t index = 0;      // its number among its source's chunks
};

// The same on every worker: the rows in file order, in chunks, each from the lowest-ranked
// holder (rank 0 itself when it holds them).
std::vector<Chunk> Plan(const std::vector<SavedRows>& rows, int64_t row_bytes, size_t chunk_bytes,
                        int workers, std::vector<int64_t>* per_source) {
  const int64_t per_chunk =
      std::max<int64_t>(1, static_cast<int64_t>(chunk_bytes) / std::max<int64_t>(row_bytes, 1));
  per_source->assign(static_cast<size_t>(workers), 0);
  std::vector<Chunk> plan;
  for (const SavedRows& r : rows) {
    int source = 0;
    if (r.holders != 0 && (r.holders & 1) == 0) source = __builtin_ctzll(r.holders);
    for (int64_t lo = r.lo; lo < r.hi; lo += per_chunk) {
      Chunk c{lo, std::min(r.hi, lo + per_chunk), source, r.holders == 0, 0};
      c.index = (*per_source)[static_cast<size_t>(source)]++;
      plan.push_back(c);
    }
  }
  return plan;
}

Status ResultFrom(const std::string& bytes) {
  const size_t sep = bytes.find('\0');
  if (sep == std::string::npos) return Status::DataLoss("malformed save_array result");
  const int code = std::atoi(bytes.substr(0, sep).c_str());
  if (code == 0) return Status::Ok();
  return Status(static_cast<StatusCode>(code), bytes.substr(sep + 1));
}

std::string ResultBytes(const Status& s) {
  std::string out = std::to_string(static_cast<int>(s.code()));
  out.push_back('\0');
  out += s.message();
  return out;
}

// Rank 0: writes the file from its own rows, the computed ones and the peers' chunks.
Status WriteAsRankZero(PeerMesh& mesh, uint64_t tag, const ArrayBase& a,
                       const std::vector<Chunk>& plan, const std::vector<int64_t>& per_source,
                       const RowSaveOptions& o, ArrayStreamWriter* writer, int64_t row_elems) {
  const size_t e = a.element_bytes();
  const char* own = static_cast<const char*>(const_cast<ArrayBase&>(a).value_data());
  std::vector<char> computed;
  for (const Chunk& c : plan) {
    const int64_t n = (c.hi - c.lo) * row_elems;
    if (c.source == 0 && !c.computed) {
      writer->Append(own + static_cast<size_t>(c.lo * row_elems) * e, n);
      continue;
    }
    if (c.computed) {
      computed.resize(static_cast<size_t>(n) * e);
      a.ComputeInitialElements(c.lo * row_elems, n, computed.data());
      writer->Append(computed.data(), n);
      continue;
    }
    Result<std::string> rows = ReceivePayload(mesh, c.source, tag, 1 + c.index);
    if (!rows.ok()) {
      return Status(rows.status().code(),
                    NotCollective(o.path, fmt::format("worker {} sent no rows: {}", c.source,
                                                      rows.status().message())));
    }
    if (rows->size() != static_cast<size_t>(n) * e) {
      return Status::DataLoss(
          fmt::format("save_array('{}'): worker {} sent {} bytes of rows "
                      "[{}, {}); expected {}",
                      o.path, c.source, rows->size(), c.lo, c.hi, static_cast<size_t>(n) * e));
    }
    writer->Append(rows->data(), n);
    if (c.index + o.window < per_source[static_cast<size_t>(c.source)]) {
      TESSERA_RETURN_IF_ERROR(SendPayload(mesh, c.source, tag, 1 + c.index, nullptr, 0));
    }
  }
  return writer->Finish();
}

// Another worker: sends its chunks to rank 0, at most `window` ahead of rank 0's credits.
Status SendRows(PeerMesh& mesh, uint64_t tag, const ArrayBase& a, const std::vector<Chunk>& plan,
                const RowSaveOptions& o, int64_t row_elems) {
  const size_t e = a.element_bytes();
  const char* own = static_cast<const char*>(const_cast<ArrayBase&>(a).value_data());
  for (const Chunk& c : plan) {
    if (c.source != mesh.rank()) continue;
    if (c.index >= o.window) {
      Result<std::string> credit = ReceivePayload(mesh, 0, tag, 1 + c.index - o.window);
      if (!credit.ok()) {
        return Status(
            credit.status().code(),
            NotCollective(o.path, "worker 0 stopped taking rows: " + credit.status().message()));
      }
    }
    const size_t begin = static_cast<size_t>(c.lo * row_elems) * e;
    const size_t bytes = static_cast<size_t>((c.hi - c.lo) * row_elems) * e;
    TESSERA_RETURN_IF_ERROR(SendPayload(mesh, 0, tag, 1 + c.index, own + begin, bytes));
  }
  return Status::Ok();
}

}  // namespace

Status SaveRows(PeerMesh& mesh, uint64_t tag, const ArrayBase& a,
                const std::vector<SavedRows>& rows, const RowSaveOptions& o) {
  const int me = mesh.rank();
  const int64_t row_elems = a.extent(0) > 0 ? a.value_count() / a.extent(0) : 0;
  std::vector<int64_t> shape;
  for (int d = 0; d < a.rank(); ++d) shape.push_back(a.extent(d));
  // Rank 0 creates the file first, so that a path it cannot write fails every worker before any
  // row moves.
  std::unique_ptr<ArrayStreamWriter> writer;
  Status created;
  if (me == 0) {
    auto w = ArrayStreamWriter::Create(
        o.path, o.text ? ArrayFileKind::kText : ArrayFileKind::kBinary, TypeOf(a), shape);
    if (w.ok()) {
      writer = std::move(w).value();
    } else {
      created = w.status();
    }
  }
  const std::string description = Describe(a, rows, o);
  Result<std::vector<std::string>> all = mesh.AllGather(tag, Prologue(description, created));
  if (!all.ok()) {
    return Status(all.status().code(), NotCollective(o.path, all.status().message()));
  }
  for (int r = 0; r < mesh.size(); ++r) {
    const std::string& p = (*all)[static_cast<size_t>(r)];
    const std::string theirs = p.substr(0, p.find('\0'));
    if (theirs == description) continue;
    if (theirs.rfind(kPrologueMagic, 0) != 0) {
      return Status::FailedPrecondition(NotCollective(
          o.path, fmt::format("worker {} reached another collective exchange at this point", r)));
    }
    return Status::FailedPrecondition(fmt::format(
        "save_array: the workers disagree on the save: worker {} has '{}', worker {} '{}'", me,
        description, r, theirs));
  }
  // Rank 0 could not create the file: every worker fails alike, nothing moves.
  {
    const std::string& p0 = (*all)[0];
    const Status zero = ResultFrom(p0.substr(p0.find('\0') + 1));
    if (!zero.ok()) return zero;
  }
  std::vector<int64_t> per_source;
  const std::vector<Chunk> plan = Plan(rows, row_elems * static_cast<int64_t>(a.element_bytes()),
                                       o.chunk_bytes, mesh.size(), &per_source);
  if (me == 0) {
    Status result = WriteAsRankZero(mesh, tag, a, plan, per_source, o, writer.get(), row_elems);
    writer.reset();  // an unfinished file is removed before the others hear the result
    const std::string bytes = ResultBytes(result);
    for (int r = 1; r < mesh.size(); ++r) {
      Status sent = SendPayload(mesh, r, tag, kResultStep, bytes.data(), bytes.size());
      if (result.ok() && !sent.ok()) result = sent;
    }
    return result;
  }
  TESSERA_RETURN_IF_ERROR(SendRows(mesh, tag, a, plan, o, row_elems));
  Result<std::string> result = ReceivePayload(mesh, 0, tag, kResultStep);
  if (!result.ok()) {
    return Status(
        result.status().code(),
        fmt::format("save_array('{}'): no result from worker 0, which writes the file: {}", o.path,
                    result.status().message()));
  }
  return ResultFrom(*result);
}

namespace {

// A whole sparse array's view, from its type-erased storage.
ArrayWriteView SparseView(const ArrayBase& a) {
  ArrayWriteView v{TypeOf(a)};
  v.sparse = true;
  for (int d = 0; d < a.rank(); ++d) v.shape.push_back(a.extent(d));
  v.count = a.size();
  v.values = const_cast<ArrayBase&>(a).value_data();
  const int64_t* keys = a.key_data();
  const int rank = a.rank();
  v.keys = [keys, rank](int64_t first, int64_t n, int64_t* out) {
    std::memcpy(out, keys + first * rank, static_cast<size_t>(n * rank) * sizeof(int64_t));
  };
  return v;
}

}  // namespace

std::optional<Status> SavePartitionedArray(PeerMesh& mesh, uint64_t* tag, PartitionedArrays& arrays,
                                           PartitionedRecords& records, const ArrayBase& array,
                                           const std::string& path, bool text) {
  if (mesh.size() < 2) return std::nullopt;
  if (array.is_sparse()) {
    if (array.record_partition() == nullptr) return std::nullopt;
    // Whole on every worker (collective), then written by worker 0 alone.
    records.GatherWhole(const_cast<ArrayBase&>(array));
    Status written;
    if (mesh.rank() == 0) {
      const ArrayWriteView v = SparseView(array);
      written = text ? WriteArrayText(path, v) : WriteArrayFile(path, v);
    }
    Result<std::vector<std::string>> all = mesh.AllGather(++*tag, ResultBytes(written));
    if (!all.ok()) return Status(all.status().code(), NotCollective(path, all.status().message()));
    return ResultFrom((*all)[0]);
  }
  std::vector<SavedRows> rows;
  int64_t next = 0;
  const bool partitioned = arrays.HeldRows(array, [&](int64_t lo, int64_t hi, uint64_t holders) {
    if (next < lo) rows.push_back({next, lo, 0});  // not computed by anyone yet
    rows.push_back({lo, hi, holders});
    next = hi;
  });
  if (!partitioned) return std::nullopt;
  if (next < array.extent(0)) rows.push_back({next, array.extent(0), 0});
  RowSaveOptions options;
  options.path = path;
  options.text = text;
  return SaveRows(mesh, ++*tag, array, rows, options);
}

}  // namespace tessera::internal
