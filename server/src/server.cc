#include "tessera/server/server.h"

#include <fmt/format.h>
#include <poll.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

#include "tessera/common/logging.h"
#include "tessera/common/prefetch.h"
#include "tessera/table/row_index.h"
#include "tessera/table/row_values.h"
#include "tessera/table/wire.h"
#include "tessera/transport/endpoint.h"
#include "tessera/transport/join.h"
#include "tessera/transport/liveness.h"
#include "tessera/transport/message.h"
#include "tessera/transport/node_thread.h"
#include "tessera/transport/router.h"

namespace tessera {
namespace {

constexpr int64_t kLeftClock = std::numeric_limits<int64_t>::max();
constexpr int64_t kClean = -1;
constexpr int64_t kPushedEarly = -2;
constexpr int kMaxRoundsPerPoll = 256;

// Worker ranks that read a row: a bit per rank below 64 (no allocation for the common job
// sizes), a sorted vector for the others.
class Subscribers {
 public:
  bool empty() const { return low_ == 0 && high_.empty(); }
  // Returns whether `w` is new.
  bool Add(uint32_t w) {
    if (w < 64) {
      bool added = (low_ & (uint64_t{1} << w)) == 0;
      low_ |= uint64_t{1} << w;
      return added;
    }
    auto it = std::lower_bound(high_.begin(), high_.end(), w);
    if (it != high_.end() && *it == w) return false;
    high_.insert(it, w);
    return true;
  }
  // Returns whether `w` was there.
  bool Remove(uint32_t w) {
    if (w < 64) {
      bool had = (low_ & (uint64_t{1} << w)) != 0;
      low_ &= ~(uint64_t{1} << w);
      return had;
    }
    auto it = std::lower_bound(high_.begin(), high_.end(), w);
    if (it == high_.end() || *it != w) return false;
    high_.erase(it);
    return true;
  }
  void Clear() {
    low_ = 0;
    high_.clear();
  }
  template <typename F>
  void ForEach(F f) const {
    for (uint64_t bits = low_; bits != 0; bits &= bits - 1)
      f(static_cast<uint32_t>(std::countr_zero(bits)));
    for (uint32_t w : high_) f(w);
  }

 private:
  uint64_t low_ = 0;
  std::vector<uint32_t> high_;
};

// The readers of a block of kRows consecutive rows nobody has written: per reader, which rows
// of the block it read. A reader of consecutive rows (a batch, a stream) subscribes to and
// unsubscribes from a block's rows with one index lookup instead of one per row.
class UnwrittenBlock {
 public:
  static constexpr unsigned kShift = 6;
  static constexpr unsigned kRows = 1u << kShift;
  static uint64_t BlockOf(RowId row) { return row >> kShift; }

  bool empty() const { return readers_.empty(); }
  // Returns whether `w` had not read `row` (a row of this block).
  bool Add(uint32_t w, RowId row) {
    const uint64_t bit = Bit(row);
    for (Reader& r : readers_) {
      if (r.worker != w) continue;
      const bool added = (r.rows & bit) == 0;
      r.rows |= bit;
      return added;
    }
    readers_.push_back({w, bit});
    return true;
  }
  // Returns whether `w` had read `row`.
  bool Remove(uint32_t w, RowId row) {
    const uint64_t bit = Bit(row);
    for (size_t i = 0; i < readers_.size(); ++i) {
      if (readers_[i].worker != w) continue;
      if ((readers_[i].rows & bit) == 0) return false;
      Clear(i, bit);
      return true;
    }
    return false;
  }
  // Moves the readers of `row` to `to` (the row is being written for the first time).
  void MoveReaders(RowId row, Subscribers& to) {
    const uint64_t bit = Bit(row);
    for (size_t i = 0; i < readers_.size();) {
      if ((readers_[i].rows & bit) != 0) {
        to.Add(readers_[i].worker);
        if (Clear(i, bit)) continue;  // reader i is another one now
      }
      ++i;
    }
  }
  // For RowIndex::Erase: keeps the storage for the next block.
  void Reset() { readers_.clear(); }

 private:
  struct Reader {
    uint32_t worker;
    uint64_t rows;  // bit i: row block * kRows + i
  };
  static uint64_t Bit(RowId row) { return uint64_t{1} << (row & (kRows - 1)); }
  // Clears `bit` of reader i, which goes once it has read no row of the block (the last reader
  // takes its place); returns whether it went.
  bool Clear(size_t i, uint64_t bit) {
    readers_[i].rows &= ~bit;
    if (readers_[i].rows != 0) return false;
    readers_[i] = readers_.back();
    readers_.pop_back();
    return true;
  }
  std::vector<Reader> readers_;
};

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

struct Peer {
  std::string identity;      // empty until the worker registers here
  bool unreachable = false;  // its connection is gone; logged once, skipped by pushes
  int64_t clock = 0;         // the worker completed clocks < clock
  uint64_t applied_seq = 0;  // its update batches applied here, in order
  uint64_t held_rows = 0;    // rows of this shard it has read (and so is pushed)
};

struct ParkedGet {
  uint32_t worker;
  uint64_t request_id;
  TableId table;
  std::vector<RowId> rows;
  int64_t min_clock;
  bool subscribe;  // false: an uncached read (see GetRequest)
};

}  // namespace

class Server::Impl {
 public:
  Impl(ServerOptions options, zmq::context_t& context)
      : options_(std::move(options)),
        context_(context),
        socket_(context, zmq::socket_type::router),
        coordinator_(context, zmq::socket_type::dealer),
        log_(MakeLogger(fmt::format("server-{}", options_.rank))) {}

  ~Impl() { Stop(); }

  Status Start() {
    if (options_.coordinator.empty())
      return Status::InvalidArgument("server: no coordinator endpoint");
    ConfigureSocket(socket_);
    socket_.set(zmq::sockopt::router_mandatory,
                1);  // a vanished client is an error, not a silent drop
    ConfigureSocket(coordinator_);
    auto ep = BindSocket(socket_, options_.listen);
    if (!ep.ok()) return ep.status();
    endpoint_ = *ep;
    try {
      coordinator_.connect(options_.coordinator);
    } catch (const zmq::error_t& e) {
      return Status::InvalidArgument(
          fmt::format("cannot connect to coordinator {}: {}", options_.coordinator, e.what()));
    }
    auto liveness = LivenessAgent::Start({.coordinator = options_.coordinator,
                                          .role = proto::Role::SERVER,
                                          .rank = static_cast<uint32_t>(options_.rank),
                                          .secret = options_.secret,
                                          .timeout = options_.heartbeat_timeout},
                                         context_);
    if (!liveness.ok()) return liveness.status();
    liveness_ = std::move(liveness).value();
    auto membership = JoinJob(
        coordinator_,
        {proto::Role::SERVER, static_cast<uint32_t>(options_.rank), endpoint_, options_.secret},
        options_.join_timeout);
    if (!membership.ok()) {
      return Status(membership.status().code(),
                    fmt::format("joining via coordinator {}: {}", options_.coordinator,
                                membership.status().message()));
    }
    num_workers_ = membership->num_workers;
    peers_.resize(num_workers_);
    log_->info("serving at {} for {} workers", endpoint_, num_workers_);
    loop_.Start([this] { Loop(); });
    return Status::Ok();
  }

  const std::string& endpoint() const { return endpoint_; }
  void WaitUntilDone() { loop_.WaitUntilDone(); }
  void Stop() { loop_.Stop(); }

  ServerStats stats() const {
    std::lock_guard lock(stats_mu_);
    return stats_;
  }

 private:
  template <typename F>
  void CountStat(F f) {
    std::lock_guard lock(stats_mu_);
    f(stats_);
  }

  // Polls the sockets' ZMQ_FDs with poll(2) rather than zmq_poll, which asks every socket for
  // ZMQ_EVENTS (system calls) on every wake: this loop wakes once per client message. A ZMQ_FD
  // signals a change of its socket's state once, and using the socket (a receive, and a send
  // too) may take the signal; so a socket is read until it has nothing after its FD fired or
  // after any send on it (Send sets socket_may_have_input_), and the loop waits in poll only
  // when no socket may hold input.
  void Loop() {
    std::array<pollfd, 3> fds = {pollfd{socket_.get(zmq::sockopt::fd), POLLIN, 0},
                                 pollfd{coordinator_.get(zmq::sockopt::fd), POLLIN, 0},
                                 pollfd{loop_.waker().poll_item().fd, POLLIN, 0}};
    bool coordinator_may_have_input = true;
    socket_may_have_input_ = true;
    const CommOptions& comm = options_.comm;
    TokenBucket budget(comm.bytes_per_second, std::max(comm.bytes_per_second * 0.1, 64.0 * 1024));
    while (!loop_.stopping() && !finished_) {
      int timeout_ms = -1;
      if (comm.early_sends() && HasChangedRows()) {
        budget.Refill(TokenBucket::Clock::now());
        timeout_ms = static_cast<int>(budget.TimeUntilPositive().count());
      }
      if (socket_may_have_input_ || coordinator_may_have_input) timeout_ms = 0;
      for (pollfd& p : fds) p.revents = 0;
      if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
        log_->error("poll failed: {}", std::strerror(errno));
        socket_may_have_input_ = coordinator_may_have_input = true;
      }
      if ((fds[0].revents & POLLIN) != 0) socket_may_have_input_ = true;
      if ((fds[1].revents & POLLIN) != 0) coordinator_may_have_input = true;
      if ((fds[2].revents & POLLIN) != 0) loop_.waker().Drain();
      if (comm.early_sends()) {
        budget.Refill(TokenBucket::Clock::now());
        // Everything sent counts against the budget; only early pushes wait for it.
        budget.Spend(static_cast<double>(bytes_since_refill_));
        bytes_since_refill_ = 0;
        // Several messages per round if the budget allows: a busy round may take a while.
        for (int i = 0; i < 16 && budget.has_tokens() && HasChangedRows(); ++i) {
          PushEarly();
          budget.Spend(static_cast<double>(bytes_since_refill_));
          bytes_since_refill_ = 0;
        }
      }
      // Take one message from each socket per round so a busy client cannot starve the other,
      // and return to the top after a bounded number of rounds so early pushes get their turn
      // (the sockets still count as holding input then, so the poll does not wait).
      for (int rounds = 0; (socket_may_have_input_ || coordinator_may_have_input) &&
                           rounds < kMaxRoundsPerPoll && !loop_.stopping() && !finished_;
           ++rounds) {
        if (socket_may_have_input_) {
          if (auto frame = TryReceiveRouted(socket_)) {
            if (frame->multipart) {
              Reject(frame->identity, 0, proto::ErrorCode::MALFORMED, "multi-frame message");
            } else {
              HandleClient(frame->identity, std::move(frame->payload));
            }
          } else {
            socket_may_have_input_ = false;
          }
        }
        if (coordinator_may_have_input) {
          zmq::message_t frame;
          if (coordinator_.recv(frame, zmq::recv_flags::dontwait)) {
            HandleCoordinator(std::move(frame));
          } else {
            coordinator_may_have_input = false;
          }
        }
      }
    }
  }

  void HandleCoordinator(zmq::message_t frame) {
    auto msg = IncomingMessage::Parse(std::move(frame));
    if (!msg.ok()) {
      log_->error("bad message from coordinator: {}", msg.status().ToString());
      return;
    }
    if ((*msg)->envelope().getBody().isLeave()) {
      log_->info("job finished; shutting down");
      finished_ = true;
    }
  }

  bool Send(const std::string& identity, OutgoingMessage& msg) {
    socket_may_have_input_ = true;  // see Loop
    zmq::message_t frame = msg.ToFrame();
    bytes_since_refill_ += frame.size();
    CountStat([&](ServerStats& s) { s.bytes_sent += frame.size(); });
    Status sent = SendRouted(socket_, identity, std::move(frame));
    if (!sent.ok()) {
      // EHOSTUNREACH: the peer is gone. Its requests die with it; everyone else goes on. Say so
      // once per peer, not once per push.
      for (size_t w = 0; w < peers_.size(); ++w) {
        if (peers_[w].identity == identity) {
          if (!peers_[w].unreachable) log_->warn("worker {} is unreachable: {}", w, sent.message());
          peers_[w].unreachable = true;
          return false;
        }
      }
      log_->warn("cannot answer an unregistered peer: {}", sent.message());
      return false;
    }
    return true;
  }

  void Reject(const std::string& identity, uint64_t request_id, proto::ErrorCode code,
              const std::string& text) {
    Reject(identity, request_id, text, [&](proto::Error::Builder e) { FillError(code, text, e); });
  }

  void Reject(const std::string& identity, uint64_t request_id, const Status& status) {
    Reject(identity, request_id, status.ToString(),
           [&](proto::Error::Builder e) { FillError(status, e); });
  }

  // Logs, counts and answers a rejected message; `fill` writes the wire error.
  template <typename Fill>
  void Reject(const std::string& identity, uint64_t request_id, const std::string& logged,
              Fill fill) {
    log_->error("rejected message: {}", logged);
    CountStat([](ServerStats& s) { ++s.rejected_messages; });
    OutgoingMessage reply(options_.rank, request_id);
    fill(reply.envelope().getBody().initError());
    Send(identity, reply);
  }

  void HandleClient(const std::string& identity, zmq::message_t payload) {
    auto parsed = IncomingMessage::Parse(std::move(payload));
    if (!parsed.ok()) {
      Reject(identity, 0, ParseErrorCode(parsed.status()), parsed.status().message());
      return;
    }
    auto env = (*parsed)->envelope();
    uint64_t request_id = 0;
    try {
      request_id = env.getRequestId();
      auto body = env.getBody();
      if (body.isRegister()) {
        OnRegister(identity, request_id, body.getRegister());
        return;
      }
      uint32_t worker = env.getSender();
      if (worker >= peers_.size() || peers_[worker].identity != identity) {
        Reject(identity, request_id, proto::ErrorCode::UNAUTHENTICATED,
               fmt::format("message from a peer that has not registered as worker {}", worker));
        return;
      }
      switch (body.which()) {
        case proto::Envelope::Body::CREATE_TABLE:
          OnCreateTable(identity, request_id, body.getCreateTable());
          break;
        case proto::Envelope::Body::GET:
          OnGet(worker, request_id, body.getGet());
          break;
        case proto::Envelope::Body::UNSUBSCRIBE:
          OnUnsubscribe(worker, request_id, body.getUnsubscribe());
          break;
        case proto::Envelope::Body::UPDATE:
          if (OnUpdate(worker, body.getUpdate())) {
            if (body.getUpdate().getAckWanted()) {
              OutgoingMessage ack(options_.rank, 0);
              ack.envelope().getBody().initUpdateAck().setAppliedSeq(peers_[worker].applied_seq);
              Send(identity, ack);
            }
            if (body.getUpdate().getClock() >= 0) OnClock(worker, body.getUpdate().getClock());
          }
          break;
        case proto::Envelope::Body::CLOCK:
          OnClock(worker, body.getClock().getClock());
          break;
        case proto::Envelope::Body::LEAVE:
          OnClock(worker, kLeftClock);
          if (request_id != 0) {
            // The acknowledgement tells the worker that everything it sent before the Leave is
            // applied, so it may close its connection: closing earlier can lose what is still
            // in flight (a TCP reset drops it), and with it the worker's last clocks.
            OutgoingMessage ack(options_.rank, request_id);
            ack.envelope().getBody().initLeave().setRank(worker);
            Send(identity, ack);
          }
          break;
        default:
          Reject(identity, request_id, proto::ErrorCode::INVALID_ARGUMENT,
                 "a server does not handle this message");
      }
    } catch (const kj::Exception& e) {
      Reject(identity, request_id, proto::ErrorCode::MALFORMED,
             fmt::format("malformed message: {}", e.getDescription().cStr()));
    }
  }

  void OnRegister(const std::string& identity, uint64_t request_id, proto::Register::Reader reg) {
    if (reg.getSecret() != options_.secret) {
      Reject(identity, request_id, proto::ErrorCode::UNAUTHENTICATED, "wrong job secret");
      return;
    }
    uint32_t rank = reg.getRank();
    if (reg.getRole() != proto::Role::WORKER || rank >= peers_.size()) {
      Reject(identity, request_id, proto::ErrorCode::OUT_OF_RANGE,
             fmt::format("worker rank {} but the job has {} workers", rank, peers_.size()));
      return;
    }
    Peer& peer = peers_[rank];
    if (!peer.identity.empty() && peer.identity != identity) {
      log_->warn("worker {} reconnected from a new connection", rank);
    }
    peer.identity = identity;
    peer.unreachable = false;
    OutgoingMessage reply(options_.rank, request_id);
    reply.envelope().getBody().initMembership().setNumWorkers(num_workers_);
    Send(identity, reply);
  }

  void OnCreateTable(const std::string& identity, uint64_t request_id,
                     proto::TableSpec::Reader wire) {
    TableSpec spec = TableSpecFromProto(wire);
    if (Status s = spec.Validate(); !s.ok()) {
      Reject(identity, request_id, s);
      return;
    }
    auto [it, inserted] = tables_.try_emplace(spec.id);
    if (inserted) {
      it->second.spec = spec;
      log_->debug("created table {} '{}'", spec.id, spec.name);
    } else if (!it->second.spec.SameAs(spec)) {
      Reject(identity, request_id,
             Status::FailedPrecondition(fmt::format(
                 "table {} already exists as '{}' with a different shape, type or staleness",
                 spec.id, it->second.spec.name)));
      return;
    }
    OutgoingMessage reply(options_.rank, request_id);
    reply.envelope().getBody().initTableAck().setId(spec.id);
    Send(identity, reply);
  }

  Result<ShardTable*> FindTable(TableId id) {
    auto it = tables_.find(id);
    if (it == tables_.end()) return Status::NotFound(fmt::format("unknown table {}", id));
    return &it->second;
  }

  void OnGet(uint32_t worker, uint64_t request_id, proto::GetRequest::Reader get) {
    auto table = FindTable(get.getTable());
    if (!table.ok()) {
      Reject(peers_[worker].identity, request_id, table.status());
      return;
    }
    ParkedGet req{worker, request_id, get.getTable(), {}, get.getMinClock(), get.getSubscribe()};
    auto rows = get.getRows();
    Status checked = CheckRows(**table, rows);
    if (checked.ok()) checked = CheckRows(**table, get.getUnsubscribe());
    if (!checked.ok()) {
      Reject(peers_[worker].identity, request_id, checked);
      return;
    }
    req.rows.reserve(rows.size());
    for (RowId r : rows) req.rows.push_back(r);
    // Unsubscriptions take effect first: the rows they name are not cached at the client, and
    // any of them this request reads (the client dropped it, then asked for it again) is
    // subscribed again by the answer. Done before the answer, they also free the entries of
    // rows nobody reads any more just before the answer takes entries for the rows it reads:
    // the index hands out the last freed first, so those are still in the CPU's caches.
    Unsubscribe(worker, **table, get.getUnsubscribe());
    if (req.min_clock <= clock_) {
      Answer(req);
    } else {
      CountStat([](ServerStats& s) { ++s.parked_gets; });
      parked_.push_back(std::move(req));
    }
  }

  void OnUnsubscribe(uint32_t worker, uint64_t request_id, proto::Unsubscribe::Reader msg) {
    auto table = FindTable(msg.getTable());
    if (!table.ok()) {
      Reject(peers_[worker].identity, request_id, table.status());
      return;
    }
    if (Status s = CheckRows(**table, msg.getRows()); !s.ok()) {
      Reject(peers_[worker].identity, request_id, s);
      return;
    }
    Unsubscribe(worker, **table, msg.getRows());
  }

  Status CheckRows(const ShardTable& t, capnp::List<uint64_t>::Reader rows) const {
    for (RowId r : rows) {
      if (r >= t.spec.num_rows) {
        return Status::OutOfRange(fmt::format("row {} out of range for table '{}' ({} rows)", r,
                                              t.spec.name, t.spec.num_rows));
      }
    }
    return Status::Ok();
  }

  // The worker dropped these rows from its cache: stop pushing them to it. A row nobody reads
  // any more and nobody has written is all zeros and needs no entry (a later read recreates it),
  // so a worker streaming through a table does not grow the shard's indexes.
  // REQUIRES: CheckRows(t, rows) is OK.
  void Unsubscribe(uint32_t worker, ShardTable& t, capnp::List<uint64_t>::Reader rows) {
    Peer& peer = peers_[worker];
    uint64_t ended = 0;
    // A client drops rows it read long ago (thousands of rows of traffic back), so the index
    // slots and entries of written rows have left the CPU's caches: each row is two dependent
    // misses. Looking ahead in stages (the slot kAhead rows on, the entry half as far) overlaps
    // them. The readers of unwritten rows are a small index: its slots are asked for ahead.
    constexpr unsigned kAhead = 16;
    auto look_ahead = [&](unsigned i) {
      if (i < rows.size()) {
        t.rows.Prefetch(rows[i]);
        t.unwritten_readers.Prefetch(UnwrittenBlock::BlockOf(rows[i]));
      }
      if (i >= kAhead / 2 && i - kAhead / 2 < rows.size()) {
        // What Unsubscribe reads comes first in the entry (see StoredRow), on one cache line or,
        // for an entry that does not start on one, two.
        if (const StoredRow* r = t.rows.Find(rows[i - kAhead / 2]))
          PrefetchForWrite(r, offsetof(StoredRow, table) + sizeof(TableId));
      }
    };
    for (unsigned i = 0; i < kAhead; ++i) look_ahead(i);
    // Consecutive rows share a block: it is looked up once for them.
    uint64_t block = std::numeric_limits<uint64_t>::max();
    UnwrittenBlock* readers = nullptr;
    for (unsigned i = 0; i < rows.size(); ++i) {
      look_ahead(i + kAhead);
      if (StoredRow* row = t.rows.Find(rows[i])) {
        if (!row->subscribers.Remove(worker)) continue;
      } else {
        if (UnwrittenBlock::BlockOf(rows[i]) != block) {
          block = UnwrittenBlock::BlockOf(rows[i]);
          readers = t.unwritten_readers.Find(block);
        }
        if (readers == nullptr || !readers->Remove(worker, rows[i])) continue;
        if (readers->empty()) {
          t.unwritten_readers.Erase(block);  // and its entry may be reused: look up again
          block = std::numeric_limits<uint64_t>::max();
          readers = nullptr;
        }
      }
      --peer.held_rows;
      ++ended;
    }
    // Most reads carry no unsubscriptions: no stats lock for them.
    if (ended > 0) CountStat([&](ServerStats& s) { s.unsubscribed_rows += ended; });
  }

  void Answer(const ParkedGet& req) {
    ShardTable& table = tables_.at(req.table);
    Peer& peer = peers_[req.worker];
    OutgoingMessage reply(options_.rank, req.request_id,
                          static_cast<unsigned>(table.MessageWords(req.rows.size())),
                          frame_pool_.get());
    auto batch = reply.envelope().getBody().initRows();
    batch.setClock(clock_);
    batch.setAppliedSeq(peer.applied_seq);
    // The row to answer with (null: nobody has written it, so it is all zeros), its reader
    // subscribed unless the read is uncached (which leaves no trace). Consecutive unwritten
    // rows share a block of readers: it is looked up once for them (entries stay put while
    // others are added, so the pointer stays good).
    uint64_t block = std::numeric_limits<uint64_t>::max();
    UnwrittenBlock* readers = nullptr;
    auto row_to_answer = [&](RowId id) -> const StoredRow* {
      StoredRow* row = table.rows.Find(id);
      if (!req.subscribe) return row;
      if (row != nullptr) {
        if (row->subscribers.Add(req.worker)) ++peer.held_rows;
        return row;
      }
      if (UnwrittenBlock::BlockOf(id) != block) {
        block = UnwrittenBlock::BlockOf(id);
        readers = table.unwritten_readers.FindOrAdd(block).first;
      }
      if (readers->Add(req.worker, id)) ++peer.held_rows;
      return row;
    };
    if (!table.spec.sparse) {
      table.WriteDenseBlock(
          req.rows.size(), [&](size_t i) { return req.rows[i]; },
          [&](size_t i) { return row_to_answer(req.rows[i]); }, batch.initDense(1)[0]);
    } else {
      auto out = batch.initRows(static_cast<unsigned>(req.rows.size()));
      for (unsigned i = 0; i < req.rows.size(); ++i) {
        out[i].setTable(req.table);
        out[i].setRow(req.rows[i]);
        table.WriteValues(row_to_answer(req.rows[i]), out[i].initValues());
      }
    }
    Send(peer.identity, reply);
    CountStat([](ServerStats& s) { ++s.gets; });
  }

  // Returns false when the batch was rejected (and the client told why).
  bool OnUpdate(uint32_t worker, proto::UpdateBatch::Reader batch) {
    Peer& peer = peers_[worker];
    uint64_t seq = batch.getSeq();
    if (seq <= peer.applied_seq) {
      log_->warn("worker {} resent update batch {}; ignored (already applied)", worker, seq);
      CountStat([](ServerStats& s) { ++s.duplicate_batches; });
      return true;
    }
    if (seq != peer.applied_seq + 1) {
      Reject(peer.identity, 0,
             Status::DataLoss(fmt::format("update batch {} from worker {} arrived after batch {}; "
                                          "batches in between were lost",
                                          seq, worker, peer.applied_seq)));
      return false;
    }
    // Decode and check the whole batch before applying any of it: a bad row rejects the batch
    // as a unit, so nothing is half-applied.
    auto rows = batch.getRows();
    std::vector<std::pair<ShardTable*, proto::Row::Reader>> checked;
    checked.reserve(rows.size());
    ShardTable* last = nullptr;  // a batch's rows are mostly of one table: look it up once
    for (auto row : rows) {
      Result<ShardTable*> table = last;
      if (last == nullptr || last->spec.id != row.getTable()) table = FindTable(row.getTable());
      if (!table.ok()) {
        Reject(peer.identity, 0, table.status());
        return false;
      }
      last = *table;
      if (row.getRow() >= (*table)->spec.num_rows) {
        Reject(
            peer.identity, 0,
            Status::OutOfRange(fmt::format("update to row {} of table '{}' ({} rows)", row.getRow(),
                                           (*table)->spec.name, (*table)->spec.num_rows)));
        return false;
      }
      if (Status s = RowValues::CheckProto(row.getValues(), (*table)->spec); !s.ok()) {
        Reject(peer.identity, 0, s);
        return false;
      }
      checked.emplace_back(*table, row);
    }
    struct CheckedBlock {
      ShardTable* table;
      capnp::List<uint64_t>::Reader ids;
      DenseBlock cells;
    };
    std::vector<CheckedBlock> blocks;
    for (auto block : batch.getDense()) {
      Result<ShardTable*> table = FindTable(block.getTable());
      if (!table.ok()) {
        Reject(peer.identity, 0, table.status());
        return false;
      }
      auto ids = block.getRows();
      Status rows_ok = CheckRows(**table, ids);
      auto cells = DenseBlock::Check(block.getValues(), ids.size(), (*table)->spec);
      if (!rows_ok.ok() || !cells.ok()) {
        Reject(peer.identity, 0, rows_ok.ok() ? cells.status() : rows_ok);
        return false;
      }
      blocks.push_back({*table, ids, *cells});
    }
    const bool weigh =
        options_.comm.early_sends() && options_.comm.policy == SendPolicy::kRelativeMagnitude;
    // A changed row is pushed at the next clock advance to the workers that read it.
    auto changed = [&](StoredRow* row) {
      if (row->subscribers.empty()) return;
      if (row->dirty_epoch == kClean) dirty_.push_back(row);
      if (row->dirty_epoch < 0) ++changed_rows_;
      row->dirty_epoch = clock_;
    };
    for (auto& [table, wire] : checked) {
      StoredRow* row = &table->RowToUpdate(wire.getRow());
      if (weigh && !row->subscribers.empty()) {
        auto delta = RowValues::FromProto(wire.getValues(), table->spec);  // checked above
        row->change += delta->RelativeMagnitude(row->values);
      }
      row->values.AddProto(wire.getValues(), table->spec);
      changed(row);
    }
    RowValues delta;  // for weighing a packed row
    for (const CheckedBlock& b : blocks) {
      // A worker's rows come back a whole working set of traffic later, out of the CPU's caches,
      // and each is three dependent misses (index slot, entry, cells). Looking ahead in stages
      // (slots kAhead rows on, entries 2/3 of that, cells 1/3) overlaps them.
      constexpr unsigned kAhead = 12;
      RowIndex<StoredRow>& index = b.table->rows;
      auto look_ahead = [&](unsigned i) {
        if (i < b.ids.size()) index.Prefetch(b.ids[i]);
        if (i >= kAhead / 3 && i - kAhead / 3 < b.ids.size()) {
          if (const StoredRow* r = index.Find(b.ids[i - kAhead / 3])) PrefetchObject(r);
        }
        if (i >= 2 * kAhead / 3 && i - 2 * kAhead / 3 < b.ids.size()) {
          if (const StoredRow* r = index.Find(b.ids[i - 2 * kAhead / 3]))
            r->values.PrefetchCellsForWrite();
        }
      };
      for (unsigned i = 0; i < kAhead; ++i) look_ahead(i);
      for (unsigned i = 0; i < b.ids.size(); ++i) {
        look_ahead(i + kAhead);
        StoredRow* row = &b.table->RowToUpdate(b.ids[i]);
        if (weigh && !row->subscribers.empty()) {
          delta.AssignDense(b.cells.row(i), b.table->spec);
          row->change += delta.RelativeMagnitude(row->values);
        }
        row->values.AddDense(b.cells.row(i));
        changed(row);
      }
    }
    peer.applied_seq = seq;
    CountStat([](ServerStats& s) { ++s.update_batches; });
    return true;
  }

  void OnClock(uint32_t worker, int64_t clock) {
    Peer& peer = peers_[worker];
    if (clock < peer.clock) {
      Reject(peer.identity, 0,
             Status::InvalidArgument(fmt::format("worker {} moved its clock back from {} to {}",
                                                 worker, peer.clock, clock)));
      return;
    }
    peer.clock = clock;
    int64_t min_clock = kLeftClock;
    for (const Peer& p : peers_) min_clock = std::min(min_clock, p.clock);
    if (min_clock <= clock_) return;
    clock_ = min_clock;
    CountStat([&](ServerStats& s) { s.clock = clock_; });
    Push();
    // Answer the reads that waited for this clock.
    std::vector<ParkedGet> still_parked;
    for (auto& req : parked_) {
      if (req.min_clock <= clock_)
        Answer(req);
      else
        still_parked.push_back(std::move(req));
    }
    parked_ = std::move(still_parked);
  }

  // Sends every client the rows it has read that changed, stamped with the new clock. Clients
  // treat an empty push as "everything you hold from me is current as of this clock".
  void Push() {
    std::vector<const StoredRow*> changed;
    changed.reserve(dirty_.size());
    for (StoredRow* row : dirty_) {
      if (row->dirty_epoch >= 0) changed.push_back(row);
      row->dirty_epoch = kClean;
      row->change = 0;
    }
    dirty_.clear();
    changed_rows_ = 0;
    uint64_t pushed = SendRows(changed, /*every_peer=*/true);
    CountStat([&](ServerStats& s) { s.rows_pushed += pushed; });
  }

  // Sends `rows` to the workers holding them, at the current clock; with `every_peer`, also an
  // empty batch to workers holding none (a clock advance). Returns the rows sent.
  uint64_t SendRows(const std::vector<const StoredRow*>& rows, bool every_peer) {
    std::vector<std::vector<const StoredRow*>> out(peers_.size());
    for (const StoredRow* row : rows) {
      row->subscribers.ForEach([&](uint32_t w) { out[w].push_back(row); });
    }
    uint64_t sent = 0;
    for (uint32_t w = 0; w < peers_.size(); ++w) {
      Peer& peer = peers_[w];
      if (peer.identity.empty() || peer.clock == kLeftClock || peer.unreachable) continue;
      // A clock advance goes to the workers holding rows of this shard (for them an empty push
      // vouches that their rows are current). A worker holding none has nothing to learn from it:
      // its reads go out as requests, answered with the clock.
      if (out[w].empty() && (!every_peer || peer.held_rows == 0)) continue;
      // Rows of dense tables go packed, a block per table; rows of sparse tables one by one.
      std::vector<std::pair<ShardTable*, std::vector<const StoredRow*>>> dense;
      std::vector<std::pair<ShardTable*, const StoredRow*>> sparse;
      size_t words = 16;
      for (const StoredRow* row : out[w]) {
        ShardTable* table = &tables_.at(row->table);
        if (table->spec.sparse) {
          sparse.emplace_back(table, row);
          words += table->MessageWords(1);
          continue;
        }
        auto it = std::find_if(dense.begin(), dense.end(),
                               [&](const auto& d) { return d.first == table; });
        if (it == dense.end()) it = dense.insert(dense.end(), {table, {}});
        it->second.push_back(row);
      }
      for (const auto& [table, rows] : dense) words += table->MessageWords(rows.size());
      OutgoingMessage msg(options_.rank, 0, static_cast<unsigned>(words), frame_pool_.get());
      auto batch = msg.envelope().getBody().initRows();
      batch.setClock(clock_);
      batch.setAppliedSeq(peer.applied_seq);
      if (!sparse.empty()) {
        auto wire = batch.initRows(static_cast<unsigned>(sparse.size()));
        for (unsigned i = 0; i < sparse.size(); ++i) {
          const auto& [table, row] = sparse[i];
          wire[i].setTable(row->table);
          wire[i].setRow(row->id);
          table->WriteValues(row, wire[i].initValues());
        }
      }
      if (!dense.empty()) {
        auto blocks = batch.initDense(static_cast<unsigned>(dense.size()));
        for (unsigned i = 0; i < dense.size(); ++i) {
          const std::vector<const StoredRow*>& rows = dense[i].second;
          dense[i].first->WriteDenseBlock(
              rows.size(), [&](size_t k) { return rows[k]->id; }, [&](size_t k) { return rows[k]; },
              blocks[i]);
        }
      }
      sent += out[w].size();
      Send(peer.identity, msg);
    }
    return sent;
  }

  // Spends spare budget between clock advances on the changed rows the policy ranks first.
  void PushEarly() {
    const CommOptions& comm = options_.comm;
    std::vector<StoredRow*> candidates;
    for (StoredRow* row : dirty_) {
      if (row->dirty_epoch >= 0) candidates.push_back(row);
    }
    if (candidates.empty()) return;
    size_t n = std::min(comm.rows_per_message, candidates.size());
    switch (comm.policy) {
      case SendPolicy::kFifo:
        break;  // dirty_ lists rows in the order they changed
      case SendPolicy::kRandom:
        std::shuffle(candidates.begin(), candidates.end(), rng_);
        break;
      default: {
        auto more_changed = [](const StoredRow* a, const StoredRow* b) {
          return a->change > b->change;
        };
        if (candidates.size() > comm.sample_size) {
          // Sample instead of ranking every changed row on every send.
          std::shuffle(candidates.begin(), candidates.end(), rng_);
          candidates.resize(comm.sample_size);
        }
        std::partial_sort(candidates.begin(), candidates.begin() + static_cast<ptrdiff_t>(n),
                          candidates.end(), more_changed);
      }
    }
    candidates.resize(n);
    for (StoredRow* row : candidates) {
      row->dirty_epoch = kPushedEarly;
      row->change = 0;
    }
    changed_rows_ -= candidates.size();
    uint64_t sent =
        SendRows(std::vector<const StoredRow*>(candidates.begin(), candidates.end()), false);
    CountStat([&](ServerStats& s) { s.early_rows_pushed += sent; });
  }

  bool HasChangedRows() const { return changed_rows_ > 0; }

  ServerOptions options_;
  zmq::context_t& context_;
  zmq::socket_t socket_;
  zmq::socket_t coordinator_;
  std::unique_ptr<LivenessAgent> liveness_;  // null without heartbeats
  std::shared_ptr<spdlog::logger> log_;
  std::string endpoint_;

  // Loop-thread state.
  uint32_t num_workers_ = 0;
  std::vector<Peer> peers_;
  std::unordered_map<TableId, ShardTable> tables_;
  std::vector<StoredRow*> dirty_;  // rows changed since the last clock advance
  size_t changed_rows_ = 0;        // rows of dirty_ changed since last sent
  uint64_t bytes_since_refill_ = 0;
  std::mt19937_64 rng_{0x5e7e5};
  std::vector<ParkedGet> parked_;
  int64_t clock_ = 0;
  bool finished_ = false;
  // Buffers of answers and pushes, reused (see FramePool): frames in flight hold it too.
  std::shared_ptr<FramePool> frame_pool_ = FramePool::Create();
  bool socket_may_have_input_ = true;  // see Loop

  mutable std::mutex stats_mu_;
  ServerStats stats_;

  NodeThread loop_;  // last: stopped (by ~Impl) before the state it uses goes away
};

Server::Server(ServerOptions options, zmq::context_t& context)
    : impl_(std::make_unique<Impl>(std::move(options), context)) {}
Server::~Server() = default;
Status Server::Start() { return impl_->Start(); }
const std::string& Server::endpoint() const { return impl_->endpoint(); }
void Server::WaitUntilDone() { impl_->WaitUntilDone(); }
void Server::Stop() { impl_->Stop(); }
ServerStats Server::stats() const { return impl_->stats(); }

}  // namespace tessera
