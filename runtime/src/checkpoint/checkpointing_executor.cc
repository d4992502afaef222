#include "checkpoint/checkpointing_executor.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/record_shares.h"
#include "checkpoint/server_tables.h"
#include "distributed/fatal.h"

namespace tessera::internal::checkpoint {

Result<std::optional<Found>> PrepareCheckpoints(const CheckpointOptions& options,
                                                spdlog::logger& log) {
  if (!(options.interval_seconds >= 0)) {
    return Status::InvalidArgument(
        fmt::format("checkpoint interval {} s: must be >= 0", options.interval_seconds));
  }
  if (options.keep < 1) {
    return Status::InvalidArgument(fmt::format("keep {} checkpoints: must be >= 1", options.keep));
  }
  if (Status s = PrepareDirectory(options.dir); !s.ok()) return s;
  if (!options.resume) {
    if (HasCheckpoints(options.dir)) {
      return Status::InvalidArgument(fmt::format(
          "checkpoint directory {} already holds checkpoints: resume from them (--resume), or "
          "choose an empty directory",
          options.dir));
    }
    return std::optional<Found>();
  }
  std::vector<std::string> notes;
  Result<std::optional<Found>> found = FindLatest(options.dir, &notes);
  for (const std::string& note : notes) log.warn("{}", note);
  return found;
}

namespace {

using SteadyClock = std::chrono::steady_clock;

std::string SiteName(const LoopSite& site) {
  return fmt::format("{}:{}:{}", site.location.file_name(), site.location.line(),
                     site.location.column());
}

// What one worker wrote at a checkpoint, for worker 0's manifest: "ok\n" + a manifest holding
// only its files, or "error\n" + why it could not.
std::string Report(const Status& s, const Manifest& mine) {
  return s.ok() ? "ok\n" + EncodeManifest(mine) : "error\n" + s.ToString();
}

// Elements of `a` in the whole job: a partitioned array's on every worker together.
int64_t Count(const ArrayBase& a) {
  const RecordPartition* p = a.record_partition();
  return p != nullptr ? p->global_size : a.value_count();
}

}  // namespace

class CheckpointingExecutor::Impl {
 public:
  Impl(std::unique_ptr<Executor> inner, std::unique_ptr<CheckpointHost> host,
       const CheckpointOptions& options, std::optional<Found> resume_from, Context& ctx,
       std::shared_ptr<spdlog::logger> logger)
      : inner_(std::move(inner)),
        host_(std::move(host)),
        options_(options),
        resume_(std::move(resume_from)),
        ctx_(ctx),
        logger_(std::move(logger)),
        last_(SteadyClock::now()) {
    if (resume_) {
      log_.sites = resume_->manifest.sites;
      log_.site_of_loop = resume_->manifest.site_of_loop;
      log_.accumulators = resume_->manifest.accumulators;
      logger_->info("resuming from {}: replaying the program, its first {} loops skipped",
                    resume_->path, resume_->manifest.loop);
    }
  }

  ~Impl() {
    if (resume_) {
      logger_->error(
          "resuming from {}: the program ended after {} loops, before the checkpoint's loop {}; "
          "nothing was restored, so what it computed is not the resumed run's (was it run with "
          "fewer iterations?)",
          resume_->path, loop_, resume_->manifest.loop);
    }
  }

  Executor& inner() { return *inner_; }
  void OnRestore(std::function<void()> f) {
    if (resume_) on_restore_.push_back(std::move(f));
  }
  // Until loop n restores the arrays: the serial code before it ran before the checkpoint too.
  bool replaying() const { return resume_.has_value(); }

  void Run(const LoopSite& site, const ArrayBase& space, const LoopTask& task) {
    const int64_t k = loop_++;
    const std::string where = SiteName(site);
    if (k == 0 && options_.resume) AgreeOnResumePoint();
    if (resume_ && k < resume_->manifest.loop) {
      Replay(k, where);
      inner_->Skipped(site, space);
      return;
    }
    if (resume_ && k == resume_->manifest.loop) {
      Restore();
      resume_.reset();
      for (const auto& f : on_restore_) f();
      on_restore_.clear();
      last_ = SteadyClock::now();
    } else if (k > 0 && Due()) {
      Write(k);
    }
    inner_->Run(site, space, task);
    Record(where);
  }

 private:
  // Every worker must start from the same checkpoint (a directory they do not all share would
  // make them replay different numbers of loops and wait for each other forever). Worker 0 first
  // removes what a crashed run left after that checkpoint, before anyone can write there again.
  void AgreeOnResumePoint() {
    const int64_t n = resume_ ? resume_->manifest.loop : -1;
    if (host_->rank() == 0) RemoveAfter(options_.dir, n);
    Result<std::vector<std::string>> all = host_->AllGather(std::to_string(n));
    CheckOk(all.status(), "agreeing on the checkpoint to resume from");
    for (int r = 0; r < static_cast<int>(all->size()); ++r) {
      if ((*all)[r] != std::to_string(n)) {
        Fatal(
            fmt::format("worker {} resumes from loop {} but worker {} from loop {}: every "
                        "worker must see the same checkpoint directory {}",
                        r, (*all)[r], host_->rank(), n, options_.dir));
      }
    }
    if (!resume_) {
      logger_->info("no complete checkpoint in {}; starting from the beginning", options_.dir);
    }
  }

  void Replay(int64_t k, const std::string& where) {
    const Manifest& m = resume_->manifest;
    const std::string& logged = m.sites[static_cast<size_t>(m.site_of_loop[k])];
    if (logged != where) {
      Fatal(
          fmt::format("resuming: loop {} ran at {} but replays at {}; a resumed program must "
                      "make the same parallel_for calls as the run that wrote the checkpoint "
                      "(same arguments, control flow that depends only on them, on "
                      "accumulators and on serial code)",
                      k, logged, where));
    }
    SetAccumulators(m.accumulators[k], k);
  }

  void SetAccumulators(const std::vector<std::string>& states, int64_t k) {
    const auto& accs = ctx_.accumulators();
    if (accs.size() != states.size()) {
      Fatal(fmt::format("resuming: {} accumulators live after loop {}, {} in the checkpoint",
                        accs.size(), k, states.size()));
    }
    for (size_t i = 0; i < accs.size(); ++i) {
      if (!accs[i]->SetState(states[i])) {
        Fatal(
            fmt::format("resuming: accumulator {} after loop {} holds {}-byte values, which its "
                        "{} bytes in the checkpoint are not",
                        i, k, accs[i]->value_bytes(), states[i].size()));
      }
    }
  }

  // After loop k: its call site and the accumulators' values, for the manifests to come.
  void Record(const std::string& where) {
    auto it = site_index_.find(where);
    if (it == site_index_.end()) {
      const auto found = std::find(log_.sites.begin(), log_.sites.end(), where);
      const auto index = static_cast<int32_t>(found - log_.sites.begin());
      if (found == log_.sites.end()) log_.sites.push_back(where);
      it = site_index_.emplace(where, index).first;
    }
    log_.site_of_loop.push_back(it->second);
    std::vector<std::string> states;
    for (AccumulatorBase* acc : ctx_.accumulators()) states.push_back(acc->State());
    log_.accumulators.push_back(std::move(states));
  }

  // Whether a checkpoint is due: worker 0's clock decides for everyone.
  bool Due() {
    if (options_.interval_seconds <= 0) return true;
    const bool mine = std::chrono::duration<double>(SteadyClock::now() - last_).count() >=
                      options_.interval_seconds;
    if (host_->num_workers() == 1) return mine;
    Result<std::vector<std::string>> all = host_->AllGather(mine ? "1" : "0");
    CheckOk(all.status(), "agreeing on a checkpoint");
    return (*all)[0] == "1";
  }

  // The rows of `a` this worker writes: of each piece, its share among the piece's holders.
  static std::vector<std::pair<int64_t, int64_t>> MyRows(CheckpointHost& host, const ArrayBase& a) {
    std::vector<std::pair<int64_t, int64_t>> mine;
    const int me = host.rank();
    host.HeldRows(a, [&](int64_t lo, int64_t hi, uint64_t holders) {
      if (!((holders >> me) & 1)) return;
      const int h = __builtin_popcountll(holders);
      const int i = __builtin_popcountll(holders & ((uint64_t{1} << me) - 1));
      const int64_t n = hi - lo;
      const int64_t b = lo + n * i / h, e = lo + n * (i + 1) / h;
      if (b < e) mine.push_back({b, e});
    });
    return mine;
  }

  // Whether the job keeps dense array `a` partitioned: some row it holds is not on every worker.
  bool KeptPartitioned(const ArrayBase& a) {
    const int n = host_->num_workers();
    const uint64_t all = n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
    bool partial = false;
    host_->HeldRows(a, [&](int64_t, int64_t, uint64_t holders) { partial |= holders != all; });
    return partial;
  }

  // This worker's files of the checkpoint at `dir`.
  Status WriteMine(const std::string& dir, Manifest* mine) {
    for (const auto& [id, a] : ctx_.arrays()) {
      if (a->relaxed() && host_->HasServerTables()) continue;  // the servers write its table
      if (a->record_partition() != nullptr) {
        // A partitioned sparse array: the elements this worker holds, with their keys and
        // places (every worker writes its share, an empty one too).
        Result<FileRecord> f =
            WriteRecordShare(dir, fmt::format("a{}-w{}.bin", id, host_->rank()), *a,
                             host_->rank());
        if (!f.ok()) return f.status();
        bytes_written_ += f->bytes;
        ArrayRecord r;
        r.id = id;
        r.partitioned = true;
        r.files.push_back(std::move(f).value());
        mine->arrays.push_back(std::move(r));
        continue;
      }
      const int64_t per_row = ElementsPerRow(*a);
      const auto e = static_cast<int64_t>(a->element_bytes());
      const char* data = static_cast<const char*>(a->value_data());
      std::vector<std::span<const char>> pieces;
      std::vector<int64_t> ranges;
      for (const auto& [lo, hi] : MyRows(*host_, *a)) {
        ranges.push_back(lo * per_row);
        ranges.push_back(hi * per_row);
        pieces.emplace_back(data + lo * per_row * e, static_cast<size_t>((hi - lo) * per_row * e));
      }
      if (pieces.empty()) continue;
      Result<FileRecord> f =
          WriteDataFile(dir, fmt::format("a{}-w{}.bin", id, host_->rank()), pieces);
      if (!f.ok()) return f.status();
      f->ranges = std::move(ranges);
      f->worker = host_->rank();
      bytes_written_ += f->bytes;
      ArrayRecord r;
      r.id = id;
      r.files.push_back(std::move(f).value());
      mine->arrays.push_back(std::move(r));
    }
    return Status::Ok();
  }

  // The relaxed arrays' tables and the data-parallel tables (`dp`), each server writing its own
  // shard into `dir`; their files.
  Status SaveServerTables(const std::string& dir, const std::vector<DataParallelTable>& dp,
                          std::vector<FileRecord>* files) {
    if (!host_->HasServerTables()) return Status::Ok();
    std::vector<std::string> tables;
    for (const auto& [id, a] : ctx_.arrays()) {
      if (a->relaxed()) tables.push_back(RelaxedTableName(id));
    }
    for (const DataParallelTable& t : dp) {
      tables.push_back(DataParallelTableName(t.array, t.staleness));
    }
    if (tables.empty()) return Status::Ok();
    const std::string name = std::filesystem::path(dir).filename();
    Result<std::vector<FileRecord>> saved = host_->SaveServerTables(name, tables);
    if (!saved.ok()) return saved.status();
    // The servers must write where the workers read: the same directory, shared.
    for (const FileRecord& f : *saved) {
      struct stat st;
      const std::string path = dir + "/" + f.name;
      if (::stat(path.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) != f.bytes) {
        return Status::FailedPrecondition(fmt::format(
            "server {} wrote its tables, but not to {} as seen from worker 0: the servers' "
            "TESSERA_CHECKPOINT_DIR must be the workers' directory, shared",
            f.ranges.at(0), path));
      }
    }
    *files = std::move(saved).value();
    return Status::Ok();
  }

  void Write(int64_t k) {
    const auto t0 = SteadyClock::now();
    host_->Settle();
    const std::string dir = CheckpointPath(options_.dir, k);
    Status s = Status::Ok();
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      s = Status::Unavailable(fmt::format("cannot create {}: {}", dir, std::strerror(errno)));
    }
    Manifest mine;
    bytes_written_ = 0;
    if (s.ok()) s = WriteMine(dir, &mine);
    // Worker 0 has the servers write their tables while every other worker waits in the
    // all-gather below, so that no update of the next loop reaches a table before it is saved.
    std::vector<FileRecord> server_files;
    const std::vector<DataParallelTable> dp =
        host_->rank() == 0 ? host_->DataParallelTables() : std::vector<DataParallelTable>();
    if (s.ok() && host_->rank() == 0) s = SaveServerTables(dir, dp, &server_files);
    Result<std::vector<std::string>> all = host_->AllGather(Report(s, mine));
    CheckOk(all.status(), "gathering a checkpoint's files");
    const double seconds = std::chrono::duration<double>(SteadyClock::now() - t0).count();
    last_ = SteadyClock::now();
    if (host_->rank() != 0) {
      if (s.ok()) {
        logger_->info("checkpoint at loop {}: {} B written by this worker in {:.3f} s", k,
                      bytes_written_, seconds);
      }
      return;
    }
    // Worker 0: the manifest, once every worker's files are in place.
    Manifest m = log_;
    m.loop = k;
    m.workers = host_->num_workers();
    std::map<int64_t, ArrayRecord> arrays;
    for (const auto& [id, a] : ctx_.arrays()) {
      ArrayRecord& r = arrays[id];
      r.id = id;
      r.element_bytes = static_cast<int64_t>(a->element_bytes());
      r.count = Count(*a);
      r.partitioned = a->record_partition() != nullptr;
      r.rows = a->rank() >= 1 ? a->extent(0) : 0;
      r.sparse = a->is_sparse();
      r.on_servers = a->relaxed() && host_->HasServerTables();
      r.held = !r.sparse && !r.on_servers && KeptPartitioned(*a);
    }
    m.server_files = std::move(server_files);
    if (!m.server_files.empty()) m.data_parallel_tables = dp;
    for (int w = 0; w < static_cast<int>(all->size()); ++w) {
      const std::string& report = (*all)[w];
      if (report.starts_with("error\n")) {
        logger_->warn("checkpoint at loop {} not written: worker {}: {}", k, w, report.substr(6));
        return;
      }
      Result<Manifest> part = DecodeManifest(std::string_view(report).substr(3),
                                             fmt::format("worker {}'s checkpoint report", w));
      CheckOk(part.status(), "gathering a checkpoint's files");
      for (ArrayRecord& r : part->arrays) {
        auto it = arrays.find(r.id);
        if (it == arrays.end())
          Fatal(fmt::format("worker {} saved array #{}, unknown here", w, r.id));
        for (FileRecord& f : r.files) it->second.files.push_back(std::move(f));
      }
    }
    for (auto& [id, r] : arrays) m.arrays.push_back(std::move(r));
    if (Status ms = WriteManifest(dir, m); !ms.ok()) {
      logger_->warn("checkpoint at loop {} not written: {}", k, ms.ToString());
      return;
    }
    Prune(options_.dir, options_.keep);
    logger_->info("checkpoint at loop {} written to {} ({} B by this worker, {:.3f} s)", k, dir,
                  bytes_written_, std::chrono::duration<double>(SteadyClock::now() - t0).count());
  }

  // Worker 0 has every server load the checkpoint's tables (every worker waits for it), then
  // every worker creates the data-parallel tables again and reads the relaxed arrays back from
  // theirs (they were zeroed: nothing is pushed).
  void RestoreServerTables() {
    const Manifest& m = resume_->manifest;
    Status s = Status::Ok();
    if (host_->rank() == 0) {
      const std::string name = std::filesystem::path(resume_->path).filename();
      s = host_->RestoreServerTables(name, m.server_files);
    }
    Result<std::vector<std::string>> all = host_->AllGather(s.ok() ? "" : s.ToString());
    CheckOk(all.status(), "restoring the servers' tables");
    if (!(*all)[0].empty()) {
      Fatal(fmt::format("resuming from {}: the servers could not load their tables: {}",
                        resume_->path, (*all)[0]));
    }
    host_->RestoreDataParallelTables(m.data_parallel_tables);
    host_->Settle();
  }

  // A partitioned sparse array from its workers' shares. With the job's number of workers and
  // the array partitioned now, each worker reads its own share and holds what it held at the
  // checkpoint; otherwise each reads every share and keeps the elements of its key range now (or
  // all of them when the array is whole here). Returns the bytes read.
  uint64_t RestoreShares(ArrayBase* a, const ArrayRecord& r) {
    const Manifest& m = resume_->manifest;
    std::optional<RecordPartition> now;
    if (a->record_partition() != nullptr) now = *a->record_partition();
    int64_t total = 0;
    std::vector<const FileRecord*> mine;
    for (const FileRecord& f : r.files) {
      total += f.share->count;
      if (f.share->worker == host_->rank()) mine.push_back(&f);
    }
    if (total != r.count) {
      Fatal(fmt::format("resuming from {}: array #{}'s shares hold {} elements, the manifest says "
                        "{}",
                        resume_->path, r.id, total, r.count));
    }
    const bool own = now.has_value() && m.workers == host_->num_workers();
    if (own && mine.size() != 1) {
      Fatal(fmt::format("resuming from {}: {} shares of array #{} written by worker {}, not one",
                        resume_->path, mine.size(), r.id, host_->rank()));
    }
    // What the replay loaded goes first, so that the array is never held twice.
    a->ImportRecords({}, now ? &*now : nullptr);
    std::vector<RecordBatch> in;
    uint64_t bytes = 0;
    std::optional<RecordPartition> partition = now;
    for (const FileRecord& f : r.files) {
      if (own && &f != mine[0]) continue;
      Result<RecordBatch> b = ReadRecordShare(resume_->path, f, *a, own ? std::nullopt : now);
      CheckOk(b.status(), "reading a checkpoint");
      in.push_back(std::move(b).value());
      bytes += f.bytes;
      if (own) partition = RecordPartition{f.share->dim, f.share->lo, f.share->hi, r.count};
    }
    if (partition) partition->global_size = r.count;
    a->ImportRecords(std::move(in), partition ? &*partition : nullptr);
    return bytes;
  }

  // A dense array's rows from the checkpoint's files. One the checkpoint's job kept partitioned
  // (held), restored by as many workers: each worker reads only the rows it wrote and holds them
  // (CheckpointHost::HoldRestored); otherwise every worker reads every file. Returns the bytes
  // read.
  uint64_t RestoreDense(ArrayBase* a, const ArrayRecord& r) {
    const Manifest& m = resume_->manifest;
    const auto e = static_cast<int64_t>(a->element_bytes());
    const int64_t per_row = ElementsPerRow(*a);
    std::vector<std::pair<int64_t, int64_t>> covered;
    std::vector<HeldPiece> pieces;
    bool writers_known = true;
    for (const FileRecord& f : r.files) {
      int64_t n = 0;
      for (size_t i = 0; i < f.ranges.size(); i += 2) {
        const int64_t b = f.ranges[i], end = f.ranges[i + 1];
        if (b < 0 || end < b || end > a->value_count() || per_row <= 0 || b % per_row != 0 ||
            end % per_row != 0) {
          Fatal(fmt::format("resuming: {}/{}: ranges outside array #{}", resume_->path, f.name,
                            r.id));
        }
        n += end - b;
        covered.push_back({b, end});
        pieces.push_back({b / per_row, end / per_row, f.worker});
      }
      if (n * e != static_cast<int64_t>(f.bytes)) {
        Fatal(fmt::format("resuming: {}/{}: {} B for {} elements of array #{}", resume_->path,
                          f.name, f.bytes, n, r.id));
      }
      writers_known = writers_known && f.worker >= 0;
    }
    // Rows no worker had computed at the checkpoint are computed now, as they would have been
    // (or, kept partitioned, where they are first needed).
    std::sort(covered.begin(), covered.end());
    std::vector<std::pair<int64_t, int64_t>> missing;
    int64_t next = 0;
    for (const auto& [b, end] : covered) {
      if (b > next) missing.push_back({next, b});
      next = std::max(next, end);
    }
    if (next < a->value_count()) missing.push_back({next, a->value_count()});
    if (!missing.empty() && !a->deferred_init()) {
      Fatal(fmt::format("resuming from {}: elements [{}, {}) of array #{} are in no file",
                        resume_->path, missing[0].first, missing[0].second, r.id));
    }
    const bool own_rows = r.held && writers_known && m.workers == host_->num_workers() &&
                          host_->HoldRestored(*a, pieces);
    char* data = static_cast<char*>(a->value_data());
    uint64_t bytes = 0;
    int64_t rows = 0;
    for (const FileRecord& f : r.files) {
      if (own_rows && f.worker != host_->rank()) continue;
      std::vector<std::span<char>> into;
      for (size_t i = 0; i < f.ranges.size(); i += 2) {
        into.emplace_back(data + f.ranges[i] * e,
                          static_cast<size_t>((f.ranges[i + 1] - f.ranges[i]) * e));
        rows += (f.ranges[i + 1] - f.ranges[i]) / per_row;
      }
      CheckOk(ReadDataFileInto(resume_->path, f, into), "reading a checkpoint");
      bytes += f.bytes;
    }
    if (own_rows) {
      logger_->info("array #{}: restored the {} of its {} rows this worker held ({} B read)", r.id,
                    rows, a->extent(0), bytes);
      return bytes;
    }
    for (const auto& [b, end] : missing) a->InitElements(b, end - b);
    host_->Restored(*a);
    return bytes;
  }

  // Every array takes its checkpointed value: partitioned sparse arrays as their holders held
  // them (RestoreShares), dense arrays kept partitioned on their holders (RestoreDense) when the
  // job has the checkpoint's number of workers, every other array whole, on every worker.
  void Restore() {
    const auto t0 = SteadyClock::now();
    const Manifest& m = resume_->manifest;
    std::map<int64_t, const ArrayRecord*> records;
    for (const ArrayRecord& r : m.arrays) records[r.id] = &r;
    for (const auto& [id, a] : ctx_.arrays()) {
      if (!records.count(id)) {
        Fatal(
            fmt::format("resuming from {}: array #{} exists now but not in the checkpoint; "
                        "the program must create the same arrays as the run that wrote it",
                        resume_->path, id));
      }
    }
    uint64_t total = 0;
    bool on_servers = false;
    for (const ArrayRecord& r : m.arrays) {
      auto it = ctx_.arrays().find(r.id);
      if (it == ctx_.arrays().end()) {
        Fatal(
            fmt::format("resuming from {}: the checkpoint holds array #{}, which the program "
                        "has not created (again) by loop {}",
                        resume_->path, r.id, m.loop));
      }
      ArrayBase* a = it->second;
      const auto e = static_cast<int64_t>(a->element_bytes());
      if (r.element_bytes != e || r.count != Count(*a) || r.sparse != a->is_sparse() ||
          (r.partitioned && !a->is_sparse())) {
        Fatal(
            fmt::format("resuming from {}: array #{} has {} elements of {} B now, {} of {} B in "
                        "the checkpoint (was the program run with other arguments?)",
                        resume_->path, r.id, Count(*a), e, r.count, r.element_bytes));
      }
      if (r.partitioned) {
        total += RestoreShares(a, r);
        continue;
      }
      // Whole at the checkpoint (a loop had gathered it), partitioned in the replay: gathered
      // now the same way (every worker restores the same arrays in the same order).
      if (a->record_partition() != nullptr) host_->GatherWhole(*a);
      if (r.on_servers) {
        // Its table comes back on the servers; the array reads it back below (from zero, so
        // that nothing is added to the restored table).
        if (!a->relaxed() || !host_->HasServerTables()) {
          Fatal(
              fmt::format("resuming from {}: array #{} was a relaxed array on the parameter "
                          "servers and is not now",
                          resume_->path, r.id));
        }
        std::memset(a->value_data(), 0, static_cast<size_t>(a->value_count() * e));
        on_servers = true;
        continue;
      }
      if (r.files.empty() && a->deferred_init()) continue;  // never computed: still deferred
      total += RestoreDense(a, r);
    }
    if (on_servers || (!m.data_parallel_tables.empty() && host_->HasServerTables())) {
      RestoreServerTables();
    }
    logger_->info("restored {} arrays ({} B read) from {} in {:.3f} s; continuing at loop {}",
                  m.arrays.size(), total, resume_->path,
                  std::chrono::duration<double>(SteadyClock::now() - t0).count(), m.loop);
  }

  std::unique_ptr<Executor> inner_;
  std::unique_ptr<CheckpointHost> host_;
  const CheckpointOptions options_;
  std::optional<Found> resume_;  // until its loop is reached
  Context& ctx_;
  std::shared_ptr<spdlog::logger> logger_;
  int64_t loop_ = 0;              // parallel_for calls so far
  SteadyClock::time_point last_;  // the last checkpoint (or the start)
  Manifest log_;                  // sites, site_of_loop and accumulators of every loop so far
  std::map<std::string, int32_t> site_index_;
  uint64_t bytes_written_ = 0;
  std::vector<std::function<void()>> on_restore_;  // Context::on_restore, until the restore
};

CheckpointingExecutor::CheckpointingExecutor(std::unique_ptr<Executor> inner,
                                             std::unique_ptr<CheckpointHost> host,
                                             const CheckpointOptions& options,
                                             std::optional<Found> resume_from, Context& ctx,
                                             std::shared_ptr<spdlog::logger> logger)
    : impl_(std::make_unique<Impl>(std::move(inner), std::move(host), options,
                                   std::move(resume_from), ctx, std::move(logger))) {}
CheckpointingExecutor::~CheckpointingExecutor() = default;

std::string_view CheckpointingExecutor::name() const { return impl_->inner().name(); }
int CheckpointingExecutor::concurrency() const { return impl_->inner().concurrency(); }
void CheckpointingExecutor::Run(const LoopSite& site, const ArrayBase& space,
                                const LoopTask& task) {
  impl_->Run(site, space, task);
}
bool CheckpointingExecutor::replaying() const { return impl_->replaying(); }
void CheckpointingExecutor::OnRestore(std::function<void()> f) { impl_->OnRestore(std::move(f)); }

}  // namespace tessera::internal::checkpoint
