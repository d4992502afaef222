#include "tessera/client/client.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <tbb/concurrent_queue.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

#include "tessera/common/logging.h"
#include "tessera/table/row_values.h"
#include "tessera/table/wire.h"
#include "tessera/transport/endpoint.h"
#include "tessera/transport/join.h"
#include "tessera/transport/message.h"
#include "tessera/transport/waker.h"

namespace tessera {
namespace {

// Rows are spread over stripes, each with its own lock, so threads touching different rows
// rarely contend.
constexpr size_t kStripes = 64;
constexpr int kCoordinator = -1;

struct RowKey {
  TableId table;
  RowId row;
  bool operator==(const RowKey&) const = default;
};
struct RowKeyHash {
  size_t operator()(const RowKey& k) const { return std::hash<uint64_t>()(k.row * 0x9e3779b97f4a7c15ULL ^ k.table); }
};

struct CacheEntry {
  RowValues value;      // server value + own updates not yet reflected there
  bool valid = false;
  bool subscribed = false;  // the server pushes changes of this row to us
  int64_t stamp = std::numeric_limits<int64_t>::min();  // includes all updates from clocks < stamp
  int64_t requested = std::numeric_limits<int64_t>::min();  // min clock of the newest request
  Status error;         // a failed request for this row, reported to the next reader
};

struct Stripe {
  std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<RowId, CacheEntry> cache;
  std::unordered_map<RowId, RowValues> oplog;  // coalesced updates not yet sent
};

struct ClientTable {
  explicit ClientTable(TableSpec s) : spec(std::move(s)) {}
  TableSpec spec;
  std::array<Stripe, kStripes> stripes;
  // Consecutive rows land in different stripes (what spreads contention), and rows of one stripe
  // keep their order in its hash table, which keeps a scan over many rows cache-friendly.
  Stripe& StripeOf(RowId row) { return stripes[row % kStripes]; }
};

// Updates sent to a server that it may not have applied yet. Kept so that a row arriving from
// the server can be corrected by what it does not include yet (read-my-writes).
struct InflightBatch {
  uint64_t seq;
  std::unordered_map<RowKey, RowValues, RowKeyHash> deltas;
};

struct ServerChannel {
  std::string endpoint;
  std::atomic<int64_t> seen_clock{std::numeric_limits<int64_t>::min()};
  std::mutex mu;  // guards inflight and next_seq; taken after a stripe's lock, never before
  std::deque<InflightBatch> inflight;
  uint64_t next_seq = 0;
};

struct Outbound {
  int target;  // server index, or kCoordinator
  zmq::message_t frame;
  bool stop = false;  // the I/O thread exits after sending everything before this
};

enum Counter {
  kGetRequests, kCacheHits, kColdMisses, kStaleWaits, kBlockedReads, kRowsReceived, kPushes,
  kUpdateRowsSent, kBytesSent, kMessagesSent, kNumCounters
};

struct PendingCall {
  int outstanding = 0;
  Status status;
};

}  // namespace

class Client::Impl {
 public:
  Impl(ClientOptions options, zmq::context_t& context)
      : options_(std::move(options)),
        context_(context),
        coordinator_(context, zmq::socket_type::dealer),
        thread_clocks_(std::make_unique<std::atomic<int64_t>[]>(std::max(1, options_.num_threads))),
        log_(MakeLogger(fmt::format("client-{}", options_.rank))) {
    for (int i = 0; i < std::max(1, options_.num_threads); ++i) thread_clocks_[i] = 0;
  }

  ~Impl() {
    if (started_ && !left_) {
      if (Status s = Leave(); !s.ok()) log_->warn("leaving the job: {}", s.ToString());
    }
    StopIo();
  }

  Status Start() {
    if (options_.coordinator.empty()) return Status::InvalidArgument("client: no coordinator endpoint");
    if (options_.num_threads < 1) return Status::InvalidArgument("client: num_threads must be >= 1");
    ConfigureSocket(coordinator_);
    coordinator_.set(zmq::sockopt::linger, 2000);  // let the final Leave go out
    try {
      coordinator_.connect(options_.coordinator);
    } catch (const zmq::error_t& e) {
      return Status::InvalidArgument(
          fmt::format("cannot connect to coordinator {}: {}", options_.coordinator, e.what()));
    }
    auto membership = JoinJob(coordinator_,
                              {proto::Role::WORKER, static_cast<uint32_t>(options_.rank), "", options_.secret},
                              options_.timeout);
    if (!membership.ok()) {
      return Status(membership.status().code(),
                    fmt::format("joining via coordinator {}: {}", options_.coordinator, membership.status().message()));
    }
    const auto& servers = membership->servers;
    num_workers_ = membership->num_workers;
    channels_.reserve(servers.size());
    for (auto ep : servers) {
      auto ch = std::make_unique<ServerChannel>();
      ch->endpoint = ep;
      channels_.push_back(std::move(ch));
      zmq::socket_t socket(context_, zmq::socket_type::dealer);
      ConfigureSocket(socket);
      socket.set(zmq::sockopt::linger, 2000);
      try {
        socket.connect(ep);
      } catch (const zmq::error_t& e) {
        return Status::Unavailable(fmt::format("cannot connect to server {}: {}", ep, e.what()));
      }
      server_sockets_.push_back(std::move(socket));
    }
    io_thread_ = std::thread([this] { IoLoop(); });
    started_ = true;
    // Introduce ourselves to every server: they serve only registered workers.
    std::vector<std::pair<int, OutgoingMessage*>> msgs;
    std::vector<std::unique_ptr<OutgoingMessage>> owned;
    for (size_t s = 0; s < channels_.size(); ++s) {
      owned.push_back(std::make_unique<OutgoingMessage>(options_.rank, 0));
      auto rr = owned.back()->envelope().getBody().initRegister();
      rr.setRole(proto::Role::WORKER);
      rr.setRank(options_.rank);
      rr.setSecret(options_.secret);
      msgs.emplace_back(static_cast<int>(s), owned.back().get());
    }
    TESSERA_RETURN_IF_ERROR(CallAll(msgs, "registering with the servers"));
    log_->info("joined: {} servers, {} workers", channels_.size(), num_workers_);
    return Status::Ok();
  }

  Status CreateTable(const TableSpec& spec) {
    TESSERA_RETURN_IF_ERROR(spec.Validate());
    {
      std::shared_lock lock(tables_mu_);
      if (auto it = tables_.find(spec.id); it != tables_.end()) {
        if (!it->second->spec.SameAs(spec)) {
          return Status::FailedPrecondition(
              fmt::format("table {} already exists as '{}' with another spec", spec.id, it->second->spec.name));
        }
        return Status::Ok();
      }
    }
    std::vector<std::unique_ptr<OutgoingMessage>> owned;
    std::vector<std::pair<int, OutgoingMessage*>> msgs;
    for (size_t s = 0; s < channels_.size(); ++s) {
      owned.push_back(std::make_unique<OutgoingMessage>(options_.rank, 0));
      TableSpecToProto(spec, owned.back()->envelope().getBody().initCreateTable());
      msgs.emplace_back(static_cast<int>(s), owned.back().get());
    }
    TESSERA_RETURN_IF_ERROR(CallAll(msgs, fmt::format("creating table '{}'", spec.name)));
    std::unique_lock lock(tables_mu_);
    tables_.try_emplace(spec.id, std::make_unique<ClientTable>(spec));
    return Status::Ok();
  }

  const TableSpec* FindTableSpec(TableId id) const {
    std::shared_lock lock(tables_mu_);
    auto it = tables_.find(id);
    return it == tables_.end() ? nullptr : &it->second->spec;
  }

  Result<ClientTable*> Table(TableId id, ValueType type) {
    ClientTable* t = nullptr;
    {
      std::shared_lock lock(tables_mu_);
      auto it = tables_.find(id);
      if (it != tables_.end()) t = it->second.get();
    }
    if (t == nullptr) return Status::NotFound(fmt::format("unknown table {} (CreateTable it first)", id));
    if (t->spec.value_type != type) {
      return Status::InvalidArgument(fmt::format("table '{}' holds {} values, not {}", t->spec.name,
                                                 ValueTypeName(t->spec.value_type), ValueTypeName(type)));
    }
    return t;
  }

  Status CheckRow(const ClientTable& t, RowId row) const {
    if (row >= t.spec.num_rows) {
      return Status::OutOfRange(fmt::format("row {} out of range for table '{}' ({} rows)", row, t.spec.name,
                                            t.spec.num_rows));
    }
    return Status::Ok();
  }

  Status CheckThread(int thread) const {
    if (thread < 0 || thread >= options_.num_threads) {
      return Status::InvalidArgument(
          fmt::format("thread {} out of range (client has {} threads)", thread, options_.num_threads));
    }
    return Status::Ok();
  }

  int64_t NeededClock(int thread, const ClientTable& t) const {
    return thread_clocks_[thread].load(std::memory_order_relaxed) - static_cast<int64_t>(t.spec.staleness);
  }

  int64_t EffectiveStamp(const CacheEntry& e, uint32_t server) const {
    if (!e.subscribed) return e.stamp;
    return std::max(e.stamp, channels_[server]->seen_clock.load(std::memory_order_acquire));
  }

  // Reads one row under the SSP bound and hands the cached value to `copy_out` under the lock.
  template <typename CopyOut>
  Status Read(int thread, TableId id, ValueType type, bool sparse, RowId row, CopyOut copy_out) {
    TESSERA_RETURN_IF_ERROR(CheckThread(thread));
    auto t = Table(id, type);
    if (!t.ok()) return t.status();
    ClientTable& table = **t;
    if (table.spec.sparse != sparse) {
      return Status::InvalidArgument(fmt::format("table '{}' has {} rows; use {}", table.spec.name,
                                                 table.spec.sparse ? "sparse" : "dense",
                                                 table.spec.sparse ? "GetSparse" : "Get"));
    }
    TESSERA_RETURN_IF_ERROR(CheckRow(table, row));
    int64_t need = NeededClock(thread, table);
    uint32_t server = ServerOfRow(id, row, static_cast<uint32_t>(channels_.size()));
    Stripe& stripe = table.StripeOf(row);
    std::unique_lock lock(stripe.mu);
    CacheEntry& entry = stripe.cache[row];
    // Classified once, on entry: a read waits either for a first copy or for the bound.
    Counter kind = entry.valid ? kStaleWaits : kColdMisses;
    bool waited = false;
    auto deadline = std::chrono::steady_clock::now() + options_.timeout;
    while (true) {
      if (!entry.error.ok()) {
        Status s = std::move(entry.error);
        entry.error = Status::Ok();
        if (waited) Uncount(kBlockedReads);
        return s;
      }
      if (entry.valid && EffectiveStamp(entry, server) >= need) {
        copy_out(entry.value);
        Count(waited ? kind : kCacheHits);
        if (waited) Uncount(kBlockedReads);
        return Status::Ok();
      }
      // A subscribed row needs no request: the server pushes it (or an empty push that vouches
      // for it) every time its clock advances.
      if (!entry.subscribed && entry.requested < need) {
        entry.requested = need;
        SendGet(server, id, std::span<const RowId>(&row, 1), need);
      }
      if (!waited) Count(kBlockedReads);
      waited = true;
      if (stripe.cv.wait_until(lock, deadline) == std::cv_status::timeout &&
          std::chrono::steady_clock::now() >= deadline) {
        Uncount(kBlockedReads);
        return Status::Unavailable(fmt::format(
            "read of row {} of table '{}' at clock {} got no answer from server {} ({}) within {} ms", row,
            table.spec.name, need, server, channels_[server]->endpoint, options_.timeout.count()));
      }
    }
  }

  Status Prefetch(int thread, TableId id, std::span<const RowId> rows) {
    TESSERA_RETURN_IF_ERROR(CheckThread(thread));
    ClientTable* table = nullptr;
    {
      std::shared_lock lock(tables_mu_);
      auto it = tables_.find(id);
      if (it == tables_.end()) return Status::NotFound(fmt::format("unknown table {}", id));
      table = it->second.get();
    }
    int64_t need = NeededClock(thread, *table);
    std::vector<std::vector<RowId>> per_server(channels_.size());
    for (RowId row : rows) {
      TESSERA_RETURN_IF_ERROR(CheckRow(*table, row));
      uint32_t server = ServerOfRow(id, row, static_cast<uint32_t>(channels_.size()));
      Stripe& stripe = table->StripeOf(row);
      std::lock_guard lock(stripe.mu);
      CacheEntry& entry = stripe.cache[row];
      if (entry.valid && EffectiveStamp(entry, server) >= need) continue;
      if (entry.subscribed || entry.requested >= need) continue;
      entry.requested = need;
      per_server[server].push_back(row);
    }
    for (size_t s = 0; s < per_server.size(); ++s) {
      if (!per_server[s].empty()) SendGet(static_cast<uint32_t>(s), id, per_server[s], need);
    }
    return Status::Ok();
  }

  template <typename Apply>
  Status Update(TableId id, ValueType type, RowId row, Apply apply) {
    auto t = Table(id, type);
    if (!t.ok()) return t.status();
    ClientTable& table = **t;
    TESSERA_RETURN_IF_ERROR(CheckRow(table, row));
    Stripe& stripe = table.StripeOf(row);
    std::lock_guard lock(stripe.mu);
    auto [it, inserted] = stripe.oplog.try_emplace(row);
    if (inserted) it->second = RowValues::Zero(table.spec);
    apply(it->second);
    if (auto c = stripe.cache.find(row); c != stripe.cache.end() && c->second.valid) apply(c->second.value);
    return Status::Ok();
  }

  Status CheckColumn(TableId id, uint32_t column) {
    const TableSpec* spec = FindTableSpec(id);
    if (spec != nullptr && column >= spec->width) {
      return Status::OutOfRange(
          fmt::format("column {} out of range for table '{}' (width {})", column, spec->name, spec->width));
    }
    return Status::Ok();
  }

  Status CheckDenseWidth(TableId id, size_t size) {
    const TableSpec* spec = FindTableSpec(id);
    if (spec != nullptr && (spec->sparse || size != spec->width)) {
      return Status::InvalidArgument(fmt::format("IncRow on table '{}' needs a dense row of {} values, got {}",
                                                 spec->name, spec->width, size));
    }
    return Status::Ok();
  }

  Status Clock(int thread) {
    TESSERA_RETURN_IF_ERROR(CheckThread(thread));
    std::lock_guard lock(clock_mu_);
    thread_clocks_[thread].fetch_add(1, std::memory_order_relaxed);
    int64_t min_clock = std::numeric_limits<int64_t>::max();
    for (int i = 0; i < options_.num_threads; ++i) min_clock = std::min(min_clock, thread_clocks_[i].load());
    if (min_clock > process_clock_) {
      process_clock_ = min_clock;
      FlushLocked(process_clock_);
    }
    return TakeAsyncError();
  }

  int64_t clock(int thread) const { return thread_clocks_[thread].load(); }

  Status Barrier() {
    {
      std::lock_guard lock(clock_mu_);
      FlushLocked();
    }
    OutgoingMessage msg(options_.rank, 0);
    msg.envelope().getBody().initBarrier().setId(++barriers_);
    std::vector<std::pair<int, OutgoingMessage*>> msgs = {{kCoordinator, &msg}};
    TESSERA_RETURN_IF_ERROR(CallAll(msgs, "waiting at a barrier"));
    return TakeAsyncError();
  }

  Status Leave() {
    if (!started_ || left_.exchange(true)) return Status::Ok();
    {
      std::lock_guard lock(clock_mu_);
      FlushLocked();
    }
    for (size_t s = 0; s < channels_.size(); ++s) {
      OutgoingMessage msg(options_.rank, 0);
      msg.envelope().getBody().initLeave().setRank(options_.rank);
      Enqueue(static_cast<int>(s), msg.ToFrame());
    }
    OutgoingMessage msg(options_.rank, 0);
    msg.envelope().getBody().initLeave().setRank(options_.rank);
    Enqueue(kCoordinator, msg.ToFrame());
    StopIo();
    return TakeAsyncError();
  }

  ClientStats stats() const {
    auto get = [&](Counter c) { return counters_[c].load(std::memory_order_relaxed); };
    ClientStats s;
    s.get_requests = get(kGetRequests);
    s.cache_hits = get(kCacheHits);
    s.cold_misses = get(kColdMisses);
    s.stale_waits = get(kStaleWaits);
    s.blocked_reads = get(kBlockedReads);
    s.rows_received = get(kRowsReceived);
    s.pushes = get(kPushes);
    s.update_rows_sent = get(kUpdateRowsSent);
    s.bytes_sent = get(kBytesSent);
    s.messages_sent = get(kMessagesSent);
    return s;
  }

 private:
  // Counters are relaxed atomics: they are read only for statistics and must cost the hot
  // paths no lock.
  void Count(Counter c, uint64_t n = 1) { counters_[c].fetch_add(n, std::memory_order_relaxed); }
  void Uncount(Counter c) { counters_[c].fetch_sub(1, std::memory_order_relaxed); }

  Status TakeAsyncError() {
    std::lock_guard lock(calls_mu_);
    Status s = std::move(async_error_);
    async_error_ = Status::Ok();
    return s;
  }

  void Enqueue(int target, zmq::message_t frame) {
    outbound_.push(Outbound{target, std::move(frame)});
    waker_.Notify();
  }

  void SendGet(uint32_t server, TableId table, std::span<const RowId> rows, int64_t min_clock) {
    uint64_t id = next_request_id_.fetch_add(1);
    {
      std::lock_guard lock(calls_mu_);
      pending_gets_[id] = {table, std::vector<RowId>(rows.begin(), rows.end())};
    }
    OutgoingMessage msg(options_.rank, id);
    auto get = msg.envelope().getBody().initGet();
    get.setTable(table);
    get.setMinClock(min_clock);
    auto list = get.initRows(static_cast<unsigned>(rows.size()));
    for (unsigned i = 0; i < rows.size(); ++i) list.set(i, rows[i]);
    Count(kGetRequests, rows.size());
    Enqueue(static_cast<int>(server), msg.ToFrame());
  }

  // Sends each message as a request and waits for every reply. REQUIRES: messages have
  // request id 0 (a fresh one is assigned).
  Status CallAll(std::vector<std::pair<int, OutgoingMessage*>>& msgs, const std::string& what) {
    uint64_t id = next_request_id_.fetch_add(1);
    {
      std::lock_guard lock(calls_mu_);
      calls_[id].outstanding = static_cast<int>(msgs.size());
    }
    for (auto& [target, msg] : msgs) {
      msg->envelope().setRequestId(id);
      Enqueue(target, msg->ToFrame());
    }
    std::unique_lock lock(calls_mu_);
    bool done = calls_cv_.wait_for(lock, options_.timeout, [&] { return calls_[id].outstanding == 0; });
    Status status = done ? calls_[id].status
                         : Status::Unavailable(fmt::format("{}: no answer within {} ms", what,
                                                           options_.timeout.count()));
    calls_.erase(id);
    return status;
  }

  void StopIo() {
    if (!io_thread_.joinable()) return;
    outbound_.push(Outbound{kCoordinator, zmq::message_t(), true});
    waker_.Notify();
    io_thread_.join();
  }

  // Moves the update log into one batch per server and queues the batches, each followed by
  // `clock` if it is >= 0. REQUIRES: clock_mu_.
  void FlushLocked(int64_t clock = -1) {
    std::vector<InflightBatch*> batches(channels_.size());
    for (size_t s = 0; s < channels_.size(); ++s) {
      std::lock_guard lock(channels_[s]->mu);
      channels_[s]->inflight.push_back(InflightBatch{++channels_[s]->next_seq, {}});
      batches[s] = &channels_[s]->inflight.back();
    }
    // Deltas of rows this process has a cache entry for (or a read in flight) are also kept in
    // the in-flight batch, to correct rows the server sends before applying the batch. Rows with
    // no entry need no copy: any later request is sent after this batch on the same ordered
    // connection, so its answer includes the batch.
    std::vector<std::vector<std::pair<RowKey, RowValues>>> outgoing(channels_.size());
    {
      std::shared_lock tables_lock(tables_mu_);
      for (auto& [id, table] : tables_) {
        for (Stripe& stripe : table->stripes) {
          std::lock_guard lock(stripe.mu);
          for (auto& [row, delta] : stripe.oplog) {
            uint32_t s = ServerOfRow(id, row, static_cast<uint32_t>(channels_.size()));
            if (stripe.cache.count(row) != 0) {
              std::lock_guard ch_lock(channels_[s]->mu);
              batches[s]->deltas.emplace(RowKey{id, row}, delta);
            }
            outgoing[s].emplace_back(RowKey{id, row}, std::move(delta));
          }
          stripe.oplog.clear();
        }
      }
    }
    uint64_t rows_sent = 0;
    for (size_t s = 0; s < channels_.size(); ++s) {
      size_t payload = 0;
      for (const auto& [key, delta] : outgoing[s]) payload += delta.payload_bytes();
      // Per row: a Row struct, a Values struct and list headers, about 8 words.
      OutgoingMessage msg(options_.rank, 0,
                          static_cast<unsigned>(payload / sizeof(capnp::word) + outgoing[s].size() * 8 + 16));
      auto update = msg.envelope().getBody().initUpdate();
      update.setSeq(batches[s]->seq);
      update.setClock(clock);
      auto rows = update.initRows(static_cast<unsigned>(outgoing[s].size()));
      unsigned i = 0;
      for (const auto& [key, delta] : outgoing[s]) {
        rows[i].setTable(key.table);
        rows[i].setRow(key.row);
        delta.ToProto(rows[i].initValues());
        ++i;
      }
      rows_sent += i;
      Enqueue(static_cast<int>(s), msg.ToFrame());
    }
    Count(kUpdateRowsSent, rows_sent);
  }

  void IoLoop() {
    std::vector<zmq::pollitem_t> items;
    items.push_back({coordinator_.handle(), 0, ZMQ_POLLIN, 0});
    for (auto& s : server_sockets_) items.push_back({s.handle(), 0, ZMQ_POLLIN, 0});
    items.push_back(waker_.poll_item());
    bool stopping = false;
    while (!stopping) {
      zmq::poll(items.data(), items.size(), std::chrono::milliseconds(-1));
      if (items.back().revents & ZMQ_POLLIN) waker_.Drain();
      Outbound out;
      uint64_t bytes = 0, messages = 0;
      while (outbound_.try_pop(out)) {
        if (out.stop) {
          stopping = true;
          break;
        }
        zmq::socket_t& socket = out.target == kCoordinator ? coordinator_ : server_sockets_[out.target];
        bytes += out.frame.size();
        ++messages;
        try {
          socket.send(out.frame, zmq::send_flags::none);
        } catch (const zmq::error_t& e) {
          log_->error("send failed: {}", e.what());
        }
      }
      if (messages > 0) {
        Count(kBytesSent, bytes);
        Count(kMessagesSent, messages);
      }
      for (int s = -1; s < static_cast<int>(server_sockets_.size()); ++s) {
        zmq::socket_t& socket = s == kCoordinator ? coordinator_ : server_sockets_[s];
        zmq::message_t frame;
        while (socket.recv(frame, zmq::recv_flags::dontwait)) Handle(s, std::move(frame));
      }
    }
  }

  void CompleteCall(uint64_t id, const Status& status) {
    std::lock_guard lock(calls_mu_);
    auto it = calls_.find(id);
    if (it == calls_.end()) return;
    if (!status.ok() && it->second.status.ok()) it->second.status = status;
    if (--it->second.outstanding == 0) calls_cv_.notify_all();
  }

  void Handle(int source, zmq::message_t frame) {
    auto parsed = IncomingMessage::Parse(std::move(frame));
    if (!parsed.ok()) {
      log_->error("dropping a bad message from {}: {}", source == kCoordinator ? "the coordinator" : fmt::format("server {}", source),
                  parsed.status().ToString());
      return;
    }
    try {
      auto env = (*parsed)->envelope();
      uint64_t id = env.getRequestId();
      auto body = env.getBody();
      switch (body.which()) {
        case proto::Envelope::Body::ROWS:
          if (source != kCoordinator) OnRows(source, id, body.getRows());
          break;
        case proto::Envelope::Body::ERROR:
          OnError(source, id, StatusFromError(body.getError()));
          break;
        case proto::Envelope::Body::TABLE_ACK:
        case proto::Envelope::Body::MEMBERSHIP:
        case proto::Envelope::Body::BARRIER_RELEASE:
          CompleteCall(id, Status::Ok());
          break;
        default:
          log_->warn("ignoring an unexpected message from {}", source);
      }
    } catch (const kj::Exception& e) {
      log_->error("dropping a malformed message: {}", e.getDescription().cStr());
    }
  }

  void OnError(int source, uint64_t id, Status status) {
    std::string from = source == kCoordinator ? "coordinator" : fmt::format("server {}", source);
    status = Status(status.code(), fmt::format("{}: {}", from, status.message()));
    std::pair<TableId, std::vector<RowId>> failed_get;
    bool was_get = false;
    {
      std::lock_guard lock(calls_mu_);
      if (calls_.count(id) == 0) {
        if (auto it = pending_gets_.find(id); it != pending_gets_.end()) {
          failed_get = std::move(it->second);
          pending_gets_.erase(it);
          was_get = true;
        } else {
          log_->error("{}", status.ToString());
          if (async_error_.ok()) async_error_ = status;
          return;
        }
      }
    }
    if (!was_get) {
      CompleteCall(id, status);
      return;
    }
    std::shared_lock tables_lock(tables_mu_);
    auto t = tables_.find(failed_get.first);
    if (t == tables_.end()) return;
    for (RowId row : failed_get.second) {
      Stripe& stripe = t->second->StripeOf(row);
      std::lock_guard lock(stripe.mu);
      CacheEntry& entry = stripe.cache[row];
      entry.error = status;
      entry.requested = std::numeric_limits<int64_t>::min();
      stripe.cv.notify_all();
    }
  }

  void OnRows(int server, uint64_t id, proto::RowBatch::Reader batch) {
    ServerChannel& ch = *channels_[server];
    uint64_t applied = batch.getAppliedSeq();
    int64_t clock = batch.getClock();
    {
      std::lock_guard lock(ch.mu);
      while (!ch.inflight.empty() && ch.inflight.front().seq <= applied) ch.inflight.pop_front();
    }
    if (id != 0) {
      std::lock_guard lock(calls_mu_);
      pending_gets_.erase(id);
    } else {
      Count(kPushes);
    }
    auto rows = batch.getRows();
    Count(kRowsReceived, rows.size());
    // Readers are woken once per stripe after the whole batch is in: waking one per row makes
    // the reader and this thread trade the CPU for every row of the batch.
    std::vector<Stripe*> touched;
    std::shared_lock tables_lock(tables_mu_);
    for (auto wire : rows) {
      auto t = tables_.find(wire.getTable());
      if (t == tables_.end()) {
        log_->error("server {} sent a row of unknown table {}", server, wire.getTable());
        continue;
      }
      ClientTable& table = *t->second;
      auto values = RowValues::FromProto(wire.getValues(), table.spec);
      if (!values.ok()) {
        log_->error("server {} sent a bad row: {}", server, values.status().ToString());
        continue;
      }
      RowId row = wire.getRow();
      Stripe& stripe = table.StripeOf(row);
      std::lock_guard lock(stripe.mu);
      {
        // Updates of ours the server has not applied yet, then those not even sent.
        std::lock_guard ch_lock(ch.mu);
        for (const InflightBatch& b : ch.inflight) {
          if (auto d = b.deltas.find(RowKey{table.spec.id, row}); d != b.deltas.end()) values->Add(d->second);
        }
      }
      if (auto o = stripe.oplog.find(row); o != stripe.oplog.end()) values->Add(o->second);
      CacheEntry& entry = stripe.cache[row];
      entry.value = std::move(*values);
      entry.valid = true;
      entry.subscribed = true;
      entry.stamp = std::max(entry.stamp, clock);
      touched.push_back(&stripe);
    }
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (Stripe* stripe : touched) stripe->cv.notify_all();
    // Rows of this server that did not come are unchanged as of `clock`: wake readers of them.
    if (clock > ch.seen_clock.load()) {
      ch.seen_clock.store(clock, std::memory_order_release);
      for (auto& [tid, table] : tables_) {
        for (Stripe& stripe : table->stripes) {
          std::lock_guard lock(stripe.mu);
          stripe.cv.notify_all();
        }
      }
    }
  }

  ClientOptions options_;
  zmq::context_t& context_;
  zmq::socket_t coordinator_;
  std::vector<zmq::socket_t> server_sockets_;  // used only by the I/O thread after Start
  std::vector<std::unique_ptr<ServerChannel>> channels_;
  uint32_t num_workers_ = 0;

  mutable std::shared_mutex tables_mu_;
  std::unordered_map<TableId, std::unique_ptr<ClientTable>> tables_;

  std::unique_ptr<std::atomic<int64_t>[]> thread_clocks_;
  std::mutex clock_mu_;  // serializes flushes and clock messages
  int64_t process_clock_ = 0;
  uint64_t barriers_ = 0;

  tbb::concurrent_queue<Outbound> outbound_;
  Waker waker_;
  std::thread io_thread_;
  std::atomic<uint64_t> next_request_id_{1};
  bool started_ = false;
  std::atomic<bool> left_{false};

  std::mutex calls_mu_;
  std::condition_variable calls_cv_;
  std::unordered_map<uint64_t, PendingCall> calls_;
  std::unordered_map<uint64_t, std::pair<TableId, std::vector<RowId>>> pending_gets_;
  Status async_error_;

  std::array<std::atomic<uint64_t>, kNumCounters> counters_{};
  std::shared_ptr<spdlog::logger> log_;
};

Client::Client(ClientOptions options, zmq::context_t& context)
    : impl_(std::make_unique<Impl>(std::move(options), context)) {}
Client::~Client() = default;
Status Client::Start() { return impl_->Start(); }
Status Client::CreateTable(const TableSpec& spec) { return impl_->CreateTable(spec); }
const TableSpec* Client::FindTable(TableId id) const { return impl_->FindTableSpec(id); }
Status Client::Prefetch(int thread, TableId table, std::span<const RowId> rows) {
  return impl_->Prefetch(thread, table, rows);
}
Status Client::Clock(int thread) { return impl_->Clock(thread); }
int64_t Client::clock(int thread) const { return impl_->clock(thread); }
Status Client::Barrier() { return impl_->Barrier(); }
Status Client::Leave() { return impl_->Leave(); }
ClientStats Client::stats() const { return impl_->stats(); }

template <typename T>
Status Client::Get(int thread, TableId table, RowId row, std::vector<T>* out) {
  return impl_->Read(thread, table, ValueTypeOf<T>(), false, row, [&](const RowValues& v) {
    auto cells = v.dense<T>();
    out->assign(cells.begin(), cells.end());
  });
}

template <typename T>
Status Client::GetSparse(int thread, TableId table, RowId row, std::vector<std::pair<uint32_t, T>>* out) {
  return impl_->Read(thread, table, ValueTypeOf<T>(), true, row, [&](const RowValues& v) {
    auto cols = v.columns();
    auto vals = v.values<T>();
    out->resize(cols.size());
    for (size_t i = 0; i < cols.size(); ++i) (*out)[i] = {cols[i], vals[i]};
  });
}

template <typename T>
Status Client::Inc(TableId table, RowId row, uint32_t column, T delta) {
  TESSERA_RETURN_IF_ERROR(impl_->CheckColumn(table, column));
  return impl_->Update(table, ValueTypeOf<T>(), row, [&](RowValues& v) { v.AddCell<T>(column, delta); });
}

template <typename T>
Status Client::IncRow(TableId table, RowId row, std::span<const T> delta) {
  TESSERA_RETURN_IF_ERROR(impl_->CheckDenseWidth(table, delta.size()));
  return impl_->Update(table, ValueTypeOf<T>(), row, [&](RowValues& v) {
    auto cells = v.mutable_dense<T>();
    for (size_t i = 0; i < cells.size(); ++i) cells[i] += delta[i];
  });
}

#define TESSERA_INSTANTIATE(T)                                                                  \
  template Status Client::Get<T>(int, TableId, RowId, std::vector<T>*);                          \
  template Status Client::GetSparse<T>(int, TableId, RowId, std::vector<std::pair<uint32_t, T>>*); \
  template Status Client::Inc<T>(TableId, RowId, uint32_t, T);                                   \
  template Status Client::IncRow<T>(TableId, RowId, std::span<const T>);
TESSERA_INSTANTIATE(float)
TESSERA_INSTANTIATE(double)
TESSERA_INSTANTIATE(int32_t)
TESSERA_INSTANTIATE(int64_t)
#undef TESSERA_INSTANTIATE

}  // namespace tessera
