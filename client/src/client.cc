#include "tessera/client/client.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "client_impl.h"
#include "tessera/common/logging.h"
#include "tessera/table/wire.h"
#include "tessera/transport/connect_watch.h"
#include "tessera/transport/join.h"
#include "tessera/transport/liveness.h"
#include "tessera/transport/security.h"

namespace tessera {

using client_internal::ApplyAck;
using client_internal::kStripes;
using client_internal::kUncachedRequestBit;

Client::Impl::Impl(ClientOptions options, zmq::context_t& context)
    : options_(std::move(options)),
      context_(context),
      log_(MakeLogger(fmt::format("client-{}", options_.rank))),
      comm_(options_.comm),
      sockets_(context, waker_, counters_, comm_.unbudgeted_bytes(), log_),
      role_(sockets_, waker_, *this),
      thread_clocks_(std::make_unique<std::atomic<int64_t>[]>(std::max(1, options_.num_threads))),
      read_scratch_(std::max(1, options_.num_threads)) {
  for (int i = 0; i < std::max(1, options_.num_threads); ++i) thread_clocks_[i] = 0;
}

Client::Impl::~Impl() {
  // Start() failed after the heartbeats began: the process is not going on with the job.
  if (!started_ && liveness_) liveness_->Abandon();
  if (started_ && !left_) {
    if (Status s = Leave(); !s.ok()) log_->warn("leaving the job: {}", s.ToString());
  }
  StopIo();
}

Status Client::Impl::Start() {
  if (options_.coordinator.empty())
    return Status::InvalidArgument("client: no coordinator endpoint");
  if (options_.num_threads < 1) return Status::InvalidArgument("client: num_threads must be >= 1");
  sockets_.ConfigureCoordinator(options_.secret);
  auto liveness = LivenessAgent::Start({.coordinator = options_.coordinator,
                                        .role = proto::Role::WORKER,
                                        .rank = static_cast<uint32_t>(options_.rank),
                                        .secret = options_.secret,
                                        .timeout = options_.heartbeat_timeout},
                                       context_);
  if (!liveness.ok()) return liveness.status();
  liveness_ = std::move(liveness).value();
  auto membership = JoinJob(sockets_.coordinator(), options_.coordinator,
                            {proto::Role::WORKER, static_cast<uint32_t>(options_.rank), "",
                             options_.secret, liveness_ != nullptr},
                            options_.timeout);
  if (!membership.ok()) {
    return Status(membership.status().code(),
                  fmt::format("joining via coordinator {}: {}", options_.coordinator,
                              membership.status().message()));
  }
  if (liveness_) liveness_->Joined();  // none when heartbeats are off
  const auto& servers = membership->servers;
  num_workers_ = membership->num_workers;
  channels_.reserve(servers.size());
  // A server that published an endpoint this host cannot reach is named within seconds, rather
  // than by the registration's time-out below.
  ConnectWatch reach(context_);
  for (auto ep : servers) {
    auto ch = std::make_unique<ServerChannel>();
    ch->endpoint = ep;
    channels_.push_back(std::move(ch));
    TESSERA_RETURN_IF_ERROR(sockets_.ConnectServer(ep, options_.secret, &reach,
                                                   static_cast<int>(channels_.size()) - 1));
  }
  TESSERA_RETURN_IF_ERROR(reach.Await());
  sockets_.FinishSetup();
  role_.FinishSetup();
  io_thread_ = std::thread([this] { role_.RunIoThread(comm_, stop_io_); });
  started_ = true;
  // Introduce ourselves to every server: they serve only registered workers.
  std::vector<std::pair<int, OutgoingMessage*>> msgs;
  std::vector<std::unique_ptr<OutgoingMessage>> owned;
  for (size_t s = 0; s < channels_.size(); ++s) {
    owned.push_back(std::make_unique<OutgoingMessage>(options_.rank, 0));
    auto rr = owned.back()->envelope().getBody().initRegister();
    rr.setRole(proto::Role::WORKER);
    rr.setRank(options_.rank);
    rr.setSecret(SecretProof(options_.secret));
    msgs.emplace_back(static_cast<int>(s), owned.back().get());
  }
  TESSERA_RETURN_IF_ERROR(CallAll(msgs, "registering with the servers"));
  log_->info("joined: {} servers, {} workers", channels_.size(), num_workers_);
  return Status::Ok();
}

void Client::Impl::Abandon() {
  left_.store(true);  // the destructor must not Leave()
  if (liveness_) liveness_->Abandon();
}

Status Client::Impl::CreateTable(const TableSpec& spec) {
  TESSERA_RETURN_IF_ERROR(CheckStarted("CreateTable"));
  TESSERA_RETURN_IF_ERROR(spec.Validate());
  {
    std::shared_lock lock(tables_mu_);
    if (auto it = tables_.find(spec.id); it != tables_.end()) {
      if (!it->second->spec.SameAs(spec)) {
        return Status::FailedPrecondition(fmt::format(
            "table {} already exists as '{}' with another spec", spec.id, it->second->spec.name));
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
  const size_t per_stripe = (options_.cache_rows + kStripes - 1) / kStripes;
  auto [it, inserted] =
      tables_.try_emplace(spec.id, std::make_unique<ClientTable>(spec, per_stripe));
  if (inserted && spec.id < kFastTables)
    fast_tables_[spec.id].store(it->second.get(), std::memory_order_release);
  return Status::Ok();
}

const TableSpec* Client::Impl::FindTableSpec(TableId id) const {
  std::shared_lock lock(tables_mu_);
  auto it = tables_.find(id);
  return it == tables_.end() ? nullptr : &it->second->spec;
}

Result<client_internal::ClientTable*> Client::Impl::Table(TableId id, ValueType type) {
  ClientTable* t = FindClientTable(id);
  if (t == nullptr)
    return Status::NotFound(fmt::format("unknown table {} (CreateTable it first)", id));
  if (t->spec.value_type != type) {
    return Status::InvalidArgument(fmt::format("table '{}' holds {} values, not {}", t->spec.name,
                                               ValueTypeName(t->spec.value_type),
                                               ValueTypeName(type)));
  }
  return t;
}

std::vector<client_internal::ClientTable*> Client::Impl::AllTables() const {
  std::shared_lock lock(tables_mu_);
  std::vector<ClientTable*> tables;
  tables.reserve(tables_.size());
  for (auto& [id, t] : tables_) tables.push_back(t.get());
  return tables;
}

Status Client::Impl::CheckRow(const ClientTable& t, RowId row) const {
  if (row >= t.spec.num_rows) {
    return Status::OutOfRange(fmt::format("row {} out of range for table '{}' ({} rows)", row,
                                          t.spec.name, t.spec.num_rows));
  }
  return Status::Ok();
}

Status Client::Impl::CheckStarted(const char* call) const {
  if (started_.load(std::memory_order_acquire)) return Status::Ok();
  return Status::FailedPrecondition(fmt::format("client: {} before Start()", call));
}

Status Client::Impl::CheckThread(int thread) const {
  if (thread < 0 || thread >= options_.num_threads) {
    return Status::InvalidArgument(fmt::format("thread {} out of range (client has {} threads)",
                                               thread, options_.num_threads));
  }
  return Status::Ok();
}

Status Client::Impl::Clock(int thread) {
  TESSERA_RETURN_IF_ERROR(CheckStarted("Clock"));
  TESSERA_RETURN_IF_ERROR(CheckThread(thread));
  std::lock_guard lock(clock_mu_);
  thread_clocks_[thread].fetch_add(1, std::memory_order_relaxed);
  int64_t min_clock = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < options_.num_threads; ++i)
    min_clock = std::min(min_clock, thread_clocks_[i].load());
  if (min_clock > process_clock_) {
    process_clock_ = min_clock;
    FlushLocked(process_clock_);
  }
  return TakeAsyncError();
}

Status Client::Impl::Barrier() {
  TESSERA_RETURN_IF_ERROR(CheckStarted("Barrier"));
  {
    std::lock_guard lock(clock_mu_);
    FlushLocked();
  }
  // The servers learn first that this worker's clock stops here (after its updates, on the same
  // connections): a read that waits for it while its reader cannot get here fails at once.
  for (size_t s = 0; s < channels_.size(); ++s) {
    OutgoingMessage notice(options_.rank, 0);
    notice.envelope().getBody().initWaitingAtBarrier().setId(barriers_ + 1);
    Enqueue(static_cast<int>(s), notice.ToFrame());
  }
  OutgoingMessage msg(options_.rank, 0);
  msg.envelope().getBody().initBarrier().setId(++barriers_);
  std::vector<std::pair<int, OutgoingMessage*>> msgs = {{kCoordinator, &msg}};
  TESSERA_RETURN_IF_ERROR(CallAll(msgs, "waiting at a barrier"));
  return TakeAsyncError();
}

Status Client::Impl::Leave() {
  if (!started_ || left_.exchange(true)) return Status::Ok();
  {
    std::lock_guard lock(clock_mu_);
    FlushLocked();
  }
  // Each Leave is acknowledged, servers first: a server acknowledges after applying everything
  // sent before the Leave on the same connection, and only then may the coordinator end the
  // job or this process close its connections. A connection closed with data in flight can
  // lose it (a TCP reset), and losing this worker's last clocks would hold back every other
  // worker's reads.
  std::vector<std::unique_ptr<OutgoingMessage>> owned;
  std::vector<std::pair<int, OutgoingMessage*>> msgs;
  for (size_t s = 0; s < channels_.size(); ++s) {
    owned.push_back(std::make_unique<OutgoingMessage>(options_.rank, 0));
    owned.back()->envelope().getBody().initLeave().setRank(options_.rank);
    msgs.emplace_back(static_cast<int>(s), owned.back().get());
  }
  Status servers = CallAll(msgs, "leaving the servers");
  OutgoingMessage msg(options_.rank, 0);
  msg.envelope().getBody().initLeave().setRank(options_.rank);
  msgs = {{kCoordinator, &msg}};
  Status coordinator = CallAll(msgs, "leaving the job");
  if (liveness_) liveness_->Leave();  // done with the job: neither side watches the other now
  StopIo();
  Status async = TakeAsyncError();
  if (!async.ok()) return async;
  return servers.ok() ? coordinator : servers;
}

void Client::Impl::SetAsyncError(Status status) {
  log_->error("{}", status.ToString());
  std::lock_guard lock(calls_mu_);
  if (async_error_.ok()) async_error_ = std::move(status);
  async_failed_.store(true, std::memory_order_release);
}

Status Client::Impl::TakeAsyncError() {
  std::lock_guard lock(calls_mu_);
  Status s = std::move(async_error_);
  async_error_ = Status::Ok();
  return s;
}

// Sends each message as a request and waits for every reply. REQUIRES: messages have
// request id 0 (a fresh one is assigned).
Status Client::Impl::CallAll(std::vector<std::pair<int, OutgoingMessage*>>& msgs,
                             const std::string& what) {
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
  bool done = role_.AwaitReady(
      lock, calls_cv_, [&] { return calls_[id].outstanding == 0; },
      std::chrono::steady_clock::now() + options_.timeout);
  Status status = done ? calls_[id].status
                       : Status::Unavailable(fmt::format("{}: no answer within {} ms", what,
                                                         options_.timeout.count()));
  calls_.erase(id);
  return status;
}

// The I/O thread sends what is still queued, then exits.
void Client::Impl::StopIo() {
  if (!io_thread_.joinable()) return;
  stop_io_.store(true, std::memory_order_release);
  waker_.Notify();
  io_thread_.join();
}

void Client::Impl::CompleteCall(uint64_t id, const Status& status) {
  std::lock_guard lock(calls_mu_);
  auto it = calls_.find(id);
  if (it == calls_.end()) return;
  if (!status.ok() && it->second.status.ok()) it->second.status = status;
  if (--it->second.outstanding == 0) calls_cv_.notify_all();
}

void Client::Impl::Handle(int source, zmq::message_t frame) {
  auto parsed = IncomingMessage::Parse(std::move(frame));
  if (!parsed.ok()) {
    log_->error("dropping a bad message from {}: {}",
                source == kCoordinator ? "the coordinator" : fmt::format("server {}", source),
                parsed.status().ToString());
    return;
  }
  try {
    auto env = (*parsed)->envelope();
    uint64_t id = env.getRequestId();
    auto body = env.getBody();
    switch (body.which()) {
      case proto::Envelope::Body::ROWS:
        if (source != kCoordinator) OnRows(source, id, body.getRows(), *parsed);
        break;
      case proto::Envelope::Body::ERROR:
        OnError(source, id, StatusFromError(body.getError()));
        break;
      case proto::Envelope::Body::UPDATE_ACK:
        if (source != kCoordinator)
          ApplyAck(*channels_[source], body.getUpdateAck().getAppliedSeq());
        break;
      case proto::Envelope::Body::TABLE_ACK:
      case proto::Envelope::Body::MEMBERSHIP:
      case proto::Envelope::Body::BARRIER_RELEASE:
      case proto::Envelope::Body::LEAVE:
        CompleteCall(id, Status::Ok());
        break;
      default:
        log_->warn("ignoring an unexpected message from {}", source);
    }
  } catch (const kj::Exception& e) {
    log_->error("dropping a malformed message: {}", e.getDescription().cStr());
  }
}

void Client::Impl::OnError(int source, uint64_t id, Status status) {
  std::string from = source == kCoordinator ? "coordinator" : fmt::format("server {}", source);
  status = Status(status.code(), fmt::format("{}: {}", from, status.message()));
  if ((id & kUncachedRequestBit) != 0) {
    FailUncachedRequest(id, status);
    return;
  }
  std::pair<TableId, std::vector<RowId>> failed_get;
  bool was_get = false;
  bool was_async = false;
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
        async_failed_.store(true, std::memory_order_release);
        was_async = true;
      }
    }
  }
  if (was_async) {
    // A flush waiting for acknowledgements stops waiting: the batches will not be applied.
    for (auto& ch : channels_) {
      std::lock_guard lock(ch->mu);
      ch->acked.notify_all();
    }
    return;
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
    // Entries a read waits on are never evicted: a missing one has no reader to tell.
    CacheEntry* entry = FindEntry(*t->second, stripe, row);
    if (entry == nullptr) continue;
    entry->error = std::make_unique<Status>(status);
    entry->requested = std::numeric_limits<int64_t>::min();
    stripe.cv.notify_all();
  }
}

Client::Client(ClientOptions options, zmq::context_t& context)
    : impl_(std::make_unique<Impl>(std::move(options), context)) {}
Client::~Client() = default;
Status Client::Start() { return impl_->Start(); }
Status Client::CreateTable(const TableSpec& spec) { return impl_->CreateTable(spec); }
const TableSpec* Client::FindTable(TableId id) const { return impl_->FindTableSpec(id); }
Status Client::Prefetch(int thread, TableId table, std::span<const RowId> rows) {
  return impl_->Prefetch(thread, table, rows);
}
Status Client::WaitUncachedRead(ReadTicket ticket) { return impl_->WaitUncachedRead(ticket); }
Status Client::Clock(int thread) { return impl_->Clock(thread); }
int64_t Client::clock(int thread) const { return impl_->clock(thread); }
Status Client::Barrier() { return impl_->Barrier(); }
Status Client::Leave() { return impl_->Leave(); }
void Client::Abandon() { impl_->Abandon(); }
ClientStats Client::stats() const { return impl_->stats(); }

}  // namespace tessera
