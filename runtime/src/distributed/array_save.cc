#include "distributed/array_save.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "distributed/partitioned_arrays.h"
#include "storage/array_stream_writer.h"
#include "tessera/common/check.h"
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

// Checks that every worker's prologue (the all-gather's parts) begins with this worker's
// description of the call: the same array, path and format.
Status CheckAgreement(const std::vector<std::string>& all, const std::string& description,
                      std::string_view magic, const std::string& path, int me) {
  for (size_t r = 0; r < all.size(); ++r) {
    const std::string theirs = all[r].substr(0, all[r].find('\0'));
    if (theirs == description) continue;
    if (theirs.rfind(magic, 0) != 0) {
      return Status::FailedPrecondition(NotCollective(
          path, fmt::format("worker {} reached another collective exchange at this point", r)));
    }
    return Status::FailedPrecondition(fmt::format(
        "save_array: the workers disagree on the save: worker {} has '{}', worker {} '{}'", me,
        description, r, theirs));
  }
  return Status::Ok();
}

// The save's end. Rank 0 sends its result (`mine`: the file's) to every worker and returns it;
// another worker, whose part (`mine`) went well, returns the result it receives.
Status ShareResult(PeerMesh& mesh, uint64_t tag, const std::string& path, Status mine) {
  if (mesh.rank() == 0) {
    const std::string bytes = ResultBytes(mine);
    for (int r = 1; r < mesh.size(); ++r) {
      Status sent = SendPayload(mesh, r, tag, kResultStep, bytes.data(), bytes.size());
      if (mine.ok() && !sent.ok()) mine = sent;
    }
    return mine;
  }
  TESSERA_RETURN_IF_ERROR(mine);
  Result<std::string> result = ReceivePayload(mesh, 0, tag, kResultStep);
  if (!result.ok()) {
    return Status(
        result.status().code(),
        fmt::format("save_array('{}'): no result from worker 0, which writes the file: {}", path,
                    result.status().message()));
  }
  return ResultFrom(*result);
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
  TESSERA_RETURN_IF_ERROR(CheckAgreement(*all, description, kPrologueMagic, o.path, me));
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
    Status written = WriteAsRankZero(mesh, tag, a, plan, per_source, o, writer.get(), row_elems);
    writer.reset();  // an unfinished file is removed before the others hear the result
    return ShareResult(mesh, tag, o.path, std::move(written));
  }
  return ShareResult(mesh, tag, o.path, SendRows(mesh, tag, a, plan, o, row_elems));
}

namespace {

// --- Records: a partitioned sparse array's shares, merged by place on rank 0. ---
//
// Each worker holds its share in serial order (RecordPartition), so rank 0 merges the shares'
// streams by place. A binary file stores every key, then every value, so the save takes two
// passes: the first sends each element's place and key (and, for a text file, its value: one
// pass then), rank 0 writes the keys and remembers from which worker each run of elements came;
// the second sends only the values, which rank 0 takes in the runs' order. A worker's messages
// of both passes are numbered in one sequence, with the same credits as SaveRows.

constexpr std::string_view kRecordsMagic = "tessera-save-records/1";

struct RecordPlan {
  int rank = 0;           // the array's
  size_t value_bytes = 0;
  bool text = false;
  int64_t first_per = 1;   // elements per first-pass message
  int64_t second_per = 1;  // elements per values message (binary)
  std::vector<int64_t> count;  // elements held by each worker

  size_t first_bytes() const {
    return sizeof(RecordOrder) + static_cast<size_t>(rank) * sizeof(int64_t) +
           (text ? value_bytes : 0);
  }
  int64_t first_messages(int s) const { return (count[s] + first_per - 1) / first_per; }
  int64_t second_messages(int s) const {
    return text ? 0 : (count[s] + second_per - 1) / second_per;
  }
  int64_t messages(int s) const { return first_messages(s) + second_messages(s); }
};

RecordPlan MakeRecordPlan(const ArrayBase& a, const RowSaveOptions& o, std::vector<int64_t> count) {
  RecordPlan p;
  p.rank = a.rank();
  p.value_bytes = a.element_bytes();
  p.text = o.text;
  p.count = std::move(count);
  p.first_per = std::max<int64_t>(1, static_cast<int64_t>(o.chunk_bytes / p.first_bytes()));
  p.second_per = std::max<int64_t>(1, static_cast<int64_t>(o.chunk_bytes / p.value_bytes));
  return p;
}

// One worker's elements as rank 0 reads them in one pass: from its own storage (worker 0) or
// from the messages the worker sends.
class RecordFeed {
 public:
  RecordFeed(PeerMesh& mesh, uint64_t tag, const ArrayBase& a, const RecordPlan& plan,
             const RowSaveOptions& o, int source)
      : mesh_(mesh), tag_(tag), a_(a), plan_(plan), o_(o), source_(source),
        total_(plan.count[source]) {}

  // Begins pass 1 (places, keys and, text, values) or 2 (values) at the worker's first element.
  Status Start(int pass) {
    pass_ = pass;
    done_ = 0;
    left_ = 0;
    return Fill();
  }
  bool done() const { return done_ == total_; }
  // The current element's place, key and value. REQUIRES: !done(); place and key: pass 1.
  const RecordOrder& place() const { return place_; }
  const int64_t* key() const { return key_; }
  const char* value() const { return value_; }
  // Elements of the current message left, the current one included.
  int64_t available() const { return left_; }
  // Moves past n elements of the current message. REQUIRES: n <= available().
  Status Advance(int64_t n) {
    done_ += n;
    left_ -= n;
    at_ += n;
    if (left_ > 0) {
      Point();
      return Status::Ok();
    }
    return Fill();
  }

 private:
  // Loads the next message (or, worker 0, the next stretch of storage) when the current is used.
  Status Fill() {
    if (done()) {
      if (source_ != 0 && index_ > 0) return Credit(index_ - 1);
      return Status::Ok();
    }
    const int64_t per = pass_ == 1 ? plan_.first_per : plan_.second_per;
    const int64_t n = std::min(per, total_ - done_);
    at_ = 0;
    left_ = n;
    if (source_ == 0) {
      first_ = done_;
      Point();
      return Status::Ok();
    }
    if (index_ > 0) TESSERA_RETURN_IF_ERROR(Credit(index_ - 1));
    Result<std::string> bytes = ReceivePayload(mesh_, source_, tag_, 1 + index_);
    if (!bytes.ok()) {
      return Status(bytes.status().code(),
                    NotCollective(o_.path, fmt::format("worker {} sent no elements: {}", source_,
                                                       bytes.status().message())));
    }
    const size_t expected = static_cast<size_t>(n) *
                            (pass_ == 1 ? plan_.first_bytes() : plan_.value_bytes);
    if (bytes->size() != expected) {
      return Status::DataLoss(fmt::format(
          "save_array('{}'): worker {} sent {} bytes for {} elements; expected {}", o_.path,
          source_, bytes->size(), n, expected));
    }
    message_ = std::move(bytes).value();
    message_elements_ = n;
    ++index_;
    Point();
    return Status::Ok();
  }

  // Rank 0 has taken message `index`: the worker may send the one `window` after it.
  Status Credit(int64_t index) {
    if (credited_ > index || index + o_.window >= plan_.messages(source_)) return Status::Ok();
    credited_ = index + 1;
    return SendPayload(mesh_, source_, tag_, 1 + index, nullptr, 0);
  }

  void Point() {
    const size_t r = static_cast<size_t>(plan_.rank), e = plan_.value_bytes;
    if (source_ == 0) {
      const int64_t p = first_ + at_;
      if (pass_ == 1) {
        place_ = a_.place_at(static_cast<size_t>(p));
        key_ = a_.key_data() + static_cast<size_t>(p) * r;
      }
      value_ = static_cast<const char*>(const_cast<ArrayBase&>(a_).value_data()) +
               static_cast<size_t>(p) * e;
      return;
    }
    const char* data = message_.data();
    const size_t n = static_cast<size_t>(message_elements_), i = static_cast<size_t>(at_);
    if (pass_ == 2) {
      value_ = data + i * e;
      return;
    }
    std::memcpy(&place_, data + i * sizeof(RecordOrder), sizeof(RecordOrder));
    key_ = reinterpret_cast<const int64_t*>(data + n * sizeof(RecordOrder)) + i * r;
    value_ = data + n * (sizeof(RecordOrder) + r * sizeof(int64_t)) + i * e;
  }

  PeerMesh& mesh_;
  const uint64_t tag_;
  const ArrayBase& a_;
  const RecordPlan& plan_;
  const RowSaveOptions& o_;
  const int source_;
  const int64_t total_;
  int pass_ = 1;
  int64_t done_ = 0;      // elements of this pass consumed
  int64_t left_ = 0;      // of the current message
  int64_t at_ = 0;        // index in the current message
  int64_t first_ = 0;     // worker 0: the current stretch's first position
  int64_t index_ = 0;     // messages received, both passes
  int64_t credited_ = 0;  // messages credited
  std::string message_;
  int64_t message_elements_ = 0;
  RecordOrder place_;
  const int64_t* key_ = nullptr;
  const char* value_ = nullptr;
};

// Rank 0: merges the workers' elements by place into the file.
Status MergeRecords(PeerMesh& mesh, uint64_t tag, const ArrayBase& a, const RecordPlan& plan,
                    const RowSaveOptions& o, ArrayStreamWriter* writer) {
  const int W = mesh.size();
  const size_t r = static_cast<size_t>(plan.rank), e = plan.value_bytes;
  std::vector<std::unique_ptr<RecordFeed>> feeds;
  for (int s = 0; s < W; ++s) {
    feeds.push_back(std::make_unique<RecordFeed>(mesh, tag, a, plan, o, s));
    TESSERA_RETURN_IF_ERROR(feeds.back()->Start(1));
  }
  // Runs of consecutive elements from one worker, for the values pass.
  struct Run {
    uint32_t source;
    uint32_t length;
  };
  std::vector<Run> runs;
  constexpr int64_t kBatch = 4096;
  std::vector<int64_t> keys;
  std::vector<char> values;
  keys.reserve(kBatch * r);
  auto flush = [&] {
    const int64_t n = static_cast<int64_t>(keys.size() / std::max<size_t>(r, 1));
    if (plan.text) {
      writer->AppendElements(keys.data(), values.data(), n);
    } else {
      writer->AppendKeys(keys.data(), n);
    }
    keys.clear();
    values.clear();
  };
  std::optional<RecordOrder> last;
  for (;;) {
    int next = -1;
    for (int s = 0; s < W; ++s) {
      if (!feeds[s]->done() && (next < 0 || feeds[s]->place() < feeds[next]->place())) next = s;
    }
    if (next < 0) break;
    RecordFeed& f = *feeds[next];
    if (last.has_value() && !(*last < f.place())) {
      return Status::DataLoss(fmt::format(
          "save_array('{}'): worker {} sent an element out of the array's serial order "
          "(place {}:{} after {}:{})",
          o.path, next, f.place().high, f.place().low, last->high, last->low));
    }
    last = f.place();
    keys.insert(keys.end(), f.key(), f.key() + r);
    if (plan.text) values.insert(values.end(), f.value(), f.value() + e);
    if (!runs.empty() && runs.back().source == static_cast<uint32_t>(next) &&
        runs.back().length < UINT32_MAX) {
      ++runs.back().length;
    } else {
      runs.push_back({static_cast<uint32_t>(next), 1});
    }
    TESSERA_RETURN_IF_ERROR(f.Advance(1));
    if (static_cast<int64_t>(keys.size()) >= kBatch * static_cast<int64_t>(r)) flush();
  }
  flush();
  if (!plan.text) {
    for (int s = 0; s < W; ++s) TESSERA_RETURN_IF_ERROR(feeds[s]->Start(2));
    for (const Run& run : runs) {
      RecordFeed& f = *feeds[run.source];
      for (int64_t left = run.length; left > 0;) {
        const int64_t n = std::min(left, f.available());
        writer->Append(f.value(), n);
        left -= n;
        TESSERA_RETURN_IF_ERROR(f.Advance(n));
      }
    }
  }
  return writer->Finish();
}

// Another worker: its share's messages to rank 0, at most `window` ahead of rank 0's credits.
Status SendRecords(PeerMesh& mesh, uint64_t tag, const ArrayBase& a, const RecordPlan& plan,
                   const RowSaveOptions& o) {
  const int me = mesh.rank();
  const size_t r = static_cast<size_t>(plan.rank), e = plan.value_bytes;
  const int64_t count = plan.count[me];
  const char* values = static_cast<const char*>(const_cast<ArrayBase&>(a).value_data());
  int64_t index = 0;
  auto credit = [&]() -> Status {
    if (index < o.window) return Status::Ok();
    Result<std::string> c = ReceivePayload(mesh, 0, tag, 1 + index - o.window);
    if (!c.ok()) {
      return Status(c.status().code(), NotCollective(o.path, "worker 0 stopped taking elements: " +
                                                                 c.status().message()));
    }
    return Status::Ok();
  };
  std::string buf;
  for (int64_t first = 0; first < count; first += plan.first_per) {
    const int64_t n = std::min(plan.first_per, count - first);
    TESSERA_RETURN_IF_ERROR(credit());
    buf.resize(static_cast<size_t>(n) * plan.first_bytes());
    char* out = buf.data();
    for (int64_t i = 0; i < n; ++i) {
      const RecordOrder place = a.place_at(static_cast<size_t>(first + i));
      std::memcpy(out + static_cast<size_t>(i) * sizeof(RecordOrder), &place, sizeof place);
    }
    out += static_cast<size_t>(n) * sizeof(RecordOrder);
    std::memcpy(out, a.key_data() + static_cast<size_t>(first) * r,
                static_cast<size_t>(n) * r * sizeof(int64_t));
    out += static_cast<size_t>(n) * r * sizeof(int64_t);
    if (plan.text) {
      std::memcpy(out, values + static_cast<size_t>(first) * e, static_cast<size_t>(n) * e);
    }
    TESSERA_RETURN_IF_ERROR(SendPayload(mesh, 0, tag, 1 + index, buf.data(), buf.size()));
    ++index;
  }
  if (plan.text) return Status::Ok();
  for (int64_t first = 0; first < count; first += plan.second_per) {
    const int64_t n = std::min(plan.second_per, count - first);
    TESSERA_RETURN_IF_ERROR(credit());
    TESSERA_RETURN_IF_ERROR(SendPayload(mesh, 0, tag, 1 + index,
                                        values + static_cast<size_t>(first) * e,
                                        static_cast<size_t>(n) * e));
    ++index;
  }
  return Status::Ok();
}

}  // namespace

Status SaveRecords(PeerMesh& mesh, uint64_t tag, const ArrayBase& a,
                   const RowSaveOptions& o) {
  const int me = mesh.rank();
  const RecordPartition* partition = a.record_partition();
  TESSERA_CHECK_MSG(a.is_sparse() && partition != nullptr,
                    "SaveRecords takes a partitioned sparse array");
  std::vector<int64_t> shape;
  for (int d = 0; d < a.rank(); ++d) shape.push_back(a.extent(d));
  std::unique_ptr<ArrayStreamWriter> writer;
  Status created;
  if (me == 0) {
    auto w = ArrayStreamWriter::CreateSparse(o.path,
                                             o.text ? ArrayFileKind::kText : ArrayFileKind::kBinary,
                                             TypeOf(a), shape, partition->global_size);
    if (w.ok()) {
      writer = std::move(w).value();
    } else {
      created = w.status();
    }
  }
  std::string dims;
  for (int64_t e : shape) dims += fmt::format("{}{}", dims.empty() ? "" : "x", e);
  const std::string description = fmt::format(
      "{} array #{} {} of {}-byte elements, {} elements, {} to '{}', chunks {} window {}",
      kRecordsMagic, a.id(), dims, a.element_bytes(), partition->global_size,
      o.text ? "as text" : "binary", o.path, o.chunk_bytes, o.window);
  // The description, this worker's element count, then (rank 0) whether the file was created.
  std::string prologue = description;
  prologue.push_back('\0');
  prologue += std::to_string(a.size());
  prologue.push_back('\0');
  prologue += ResultBytes(created);
  Result<std::vector<std::string>> all = mesh.AllGather(tag, std::move(prologue));
  if (!all.ok()) {
    return Status(all.status().code(), NotCollective(o.path, all.status().message()));
  }
  TESSERA_RETURN_IF_ERROR(CheckAgreement(*all, description, kRecordsMagic, o.path, me));
  std::vector<int64_t> counts;
  int64_t sum = 0;
  for (const std::string& p : *all) {
    const size_t end = p.find('\0');
    counts.push_back(end == std::string::npos ? -1 : std::atoll(p.c_str() + end + 1));
    sum += counts.back();
  }
  if (sum != partition->global_size) {
    return Status::Internal(fmt::format(
        "save_array('{}'): the workers hold {} elements of a partitioned array of {}", o.path, sum,
        partition->global_size));
  }
  {
    const std::string& p0 = (*all)[0];
    const size_t count_end = p0.find('\0', p0.find('\0') + 1);
    const Status zero = ResultFrom(p0.substr(count_end + 1));
    if (!zero.ok()) return zero;
  }
  const RecordPlan plan = MakeRecordPlan(a, o, std::move(counts));
  if (me == 0) {
    Status written = MergeRecords(mesh, tag, a, plan, o, writer.get());
    writer.reset();  // an unfinished file is removed before the others hear the result
    return ShareResult(mesh, tag, o.path, std::move(written));
  }
  return ShareResult(mesh, tag, o.path, SendRecords(mesh, tag, a, plan, o));
}

std::optional<Status> SavePartitionedArray(PeerMesh& mesh, uint64_t* tag, PartitionedArrays& arrays,
                                           const ArrayBase& array, const std::string& path,
                                           bool text) {
  if (mesh.size() < 2) return std::nullopt;
  RowSaveOptions options;
  options.path = path;
  options.text = text;
  if (array.is_sparse()) {
    if (array.record_partition() == nullptr) return std::nullopt;
    return SaveRecords(mesh, ++*tag, array, options);
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
  return SaveRows(mesh, ++*tag, array, rows, options);
}

}  // namespace tessera::internal
