#include "distributed/partitioned_arrays.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "distributed/fatal.h"
#include "distributed/row_layout.h"
#include "tessera/common/check.h"
#include "tessera/transport/message.h"

namespace tessera::internal {


class PartitionedArrays::Impl {
 public:
  Impl(const Options& options, Context& ctx, PeerMesh& mesh)
      : options_(options), ctx_(ctx), mesh_(&mesh) {}

  static constexpr int64_t kExchangeStep = -2;  // the peer message of a layout change
  // The peer message of FetchRow: another step than a layout change's, so that workers whose
  // serial code diverged (a fetch on some, a loop on others) never take one for the other.
  static constexpr int64_t kFetchStep = -3;
  static constexpr int64_t kFetchBytes = 64 << 10;  // what FetchRow brings at least, rows allowing


  bool PartitionAware(const LoopSchedule& s, const SiteBinding& binding) const {
    return (s.strategy == LoopStrategy::kIndependent || s.strategy == LoopStrategy::k1D ||
            s.strategy == LoopStrategy::k2D) &&
           !s.writes_unknown && binding.complete(s) && options_.num_workers >= 2 &&
           options_.num_workers <= kMaxLayoutWorkers;
  }

  // The role each bound array can play partitioned in this loop (kNone: it must be whole).
  std::map<int64_t, Role> Roles(const LoopSchedule& s, const SiteBinding& binding) const {
    std::map<int64_t, Role> roles;
    // The space is left replicated unless an earlier loop already keeps it partitioned: then each
    // worker needs its own blocks' rows (a dense space's block is cut on rows when space_dim is 0).
    // Any other name of it in the body disagrees below and makes it whole.
    if (ArrayBase* space = binding.arrays.empty() ? nullptr : binding.arrays[0];
        space != nullptr && layouts_.count(space->id()) != 0) {
      roles[space->id()] =
          s.space_dim == 0 && !space->is_sparse() ? Role::kLocal : Role::kNone;
    }
    for (size_t i = 1; i < s.arrays.size(); ++i) {  // arrays[0] is the space (above)
      ArrayBase* a = binding.arrays[i];
      if (a == nullptr) continue;
      const LoopSchedule::Array& n = s.arrays[i];
      Role role = Role::kNone;
      if (n.loop_only && !n.relaxed && !a->is_sparse() && !a->relaxed() && a->rank() >= 1 &&
          a->extent(0) > 0 && a != binding.arrays[0] && n.array_dim == 0 && n.halo_lo == 0 &&
          n.halo_hi == 0) {
        if (n.placement == "local" && n.key_dim == s.space_dim) role = Role::kLocal;
        if (n.placement == "rotating" && s.strategy == LoopStrategy::k2D &&
            n.key_dim == s.time_dim) {
          role = Role::kRotating;
        }
      }
      auto [it, fresh] = roles.try_emplace(a->id(), role);
      if (!fresh && it->second != role) it->second = Role::kNone;  // two names, two roles
    }
    return roles;
  }

  // Rows [lo, hi] on key dim d of block `blk`, as a half-open range (empty for an empty block).
  static RowRange BlockRows(const Blocks& b, int64_t blk, int d) {
    const int64_t lo = b.key_lo[blk * b.rank + d], hi = b.key_hi[blk * b.rank + d];
    return lo > hi ? RowRange{0, 0} : RowRange{lo, hi + 1};
  }

  // Rotating: the rows of time block j, over every space partition's block of it.
  RowRange Hull(const Blocks& b, int64_t j, int d) const {
    const int P = options_.num_workers * options_.threads;
    const int64_t tb = b.num_blocks() / P;
    RowRange h{INT64_MAX, INT64_MIN};
    for (int q = 0; q < P; ++q) {
      const RowRange r = BlockRows(b, q * tb + j, d);
      if (r.hi <= r.lo) continue;
      h.lo = std::min(h.lo, r.lo);
      h.hi = std::max(h.hi, r.hi);
    }
    return h.lo >= h.hi ? RowRange{0, 0} : h;
  }

  // What worker w needs at the start of the loop.
  std::vector<RowRange> Needs(const Blocks& b, Role role, int d, int w) const {
    const int T = options_.threads;
    const int P = options_.num_workers * T;
    const int64_t tb = b.num_blocks() / P;
    std::vector<RowRange> out;
    for (int q = w * T; q < w * T + T; ++q) {
      if (role == Role::kLocal) {
        for (int64_t j = 0; j < tb; ++j) out.push_back(BlockRows(b, q * tb + j, d));
      } else {
        const int S = options_.pipeline_depth;
        for (int r = 0; r < S && r < tb; ++r) out.push_back(Hull(b, TimeBlock(q, r, tb), d));
      }
    }
    return Normalize(std::move(out));
  }

  // Gives the memory of rows [lo, hi) of `a` back to the system (whole pages inside the range).
  void Release(ArrayBase* a, int64_t lo, int64_t hi) {
    if (hi <= lo) return;
    const int64_t row_bytes =
        a->value_count() / a->extent(0) * static_cast<int64_t>(a->element_bytes());
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto base = reinterpret_cast<uintptr_t>(a->value_data());
    const uintptr_t begin = (base + static_cast<uintptr_t>(lo * row_bytes) + page - 1) / page * page;
    const uintptr_t end = (base + static_cast<uintptr_t>(hi * row_bytes)) / page * page;
    if (begin < end) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
  }

  // Applies `needs` to each array's layout: sends and receives the rows that move (one message
  // per peer and direction), then releases what this worker no longer holds.
  void MoveRows(const std::map<int64_t, std::vector<std::vector<RowRange>>>& needs,
                int64_t step = kExchangeStep) {
    if (needs.empty()) return;  // the same on every worker: no exchange at all
    const int me = options_.rank;
    std::vector<std::vector<PatchData>> out(static_cast<size_t>(mesh_->size()));
    std::vector<std::pair<ArrayBase*, RowRange>> released;
    for (const auto& [id, per_worker] : needs) {
      ArrayBase* a = ctx_.arrays().at(id);
      auto [it, fresh] = layouts_.try_emplace(id, RowLayout(a->extent(0), options_.num_workers));
      RowLayout& layout = it->second;
      const RowLayout before = layout;
      const int64_t stride = a->value_count() / a->extent(0);
      for (const RowTransfer& t : internal::Redistribute(per_worker, &layout)) {
        if (t.from != me) continue;
        PatchData p;
        p.array = id;
        p.layout = a->layout_version();
        p.element_bytes = a->element_bytes();
        p.runs = {static_cast<uint64_t>(t.lo * stride), static_cast<uint64_t>((t.hi - t.lo) * stride)};
        p.source = static_cast<const char*>(a->value_data());  // encoded below, before Release
        stats_.repartition_bytes_sent += p.value_bytes();
        out[static_cast<size_t>(t.to)].push_back(std::move(p));
      }
      before.ForEach(0, a->extent(0), [&](int64_t lo, int64_t hi, uint64_t held) {
        if (!((held >> me) & 1)) return;
        layout.ForEach(lo, hi, [&](int64_t l, int64_t h, uint64_t now) {
          if (!((now >> me) & 1)) released.push_back({a, {l, h}});
        });
      });
    }
    for (int r = 0; r < mesh_->size(); ++r) {
      if (r == me) continue;
      CheckOk(mesh_->SendFrame(r, EncodePatches(static_cast<uint32_t>(me), tag_, step,
                                                out[static_cast<size_t>(r)])),
              "sending rows of a partitioned array");
    }
    for (int r = 0; r < mesh_->size(); ++r) {
      if (r == me) continue;
      Result<std::unique_ptr<IncomingMessage>> msg = mesh_->Receive(r, tag_, step);
      CheckOk(msg.status(), "waiting for rows of a partitioned array");
      ApplyRows(r, **msg);
    }
    for (const auto& [a, range] : released) Release(a, range.lo, range.hi);
    ComputeVirginRows(needs);
  }

  // A peer's rows of partitioned arrays (whole rows, overwriting).
  void ApplyRows(int from, const IncomingMessage& msg) {
    try {
      for (auto patch : msg.envelope().getBody().getPeer().getPatches()) {
        auto it = ctx_.arrays().find(patch.getArray());
        if (it == ctx_.arrays().end() || !layouts_.count(patch.getArray())) {
          Fatal(fmt::format("worker {} sent rows of array #{}, which this worker does not keep "
                            "partitioned",
                            from, patch.getArray()));
        }
        ArrayBase* a = it->second;
        const size_t e = a->element_bytes();
        auto runs = patch.getRuns();
        auto values = patch.getValues();
        const uint64_t n = static_cast<uint64_t>(a->value_count());
        if (patch.getElementBytes() != e || patch.getLayoutVersion() != a->layout_version() ||
            runs.size() != 2 || runs[0] > n || runs[1] > n - runs[0] ||
            values.size() != runs[1] * e) {
          Fatal(fmt::format("malformed rows of array #{} from worker {}", a->id(), from));
        }
        std::memcpy(static_cast<char*>(a->value_data()) + runs[0] * e, values.begin(),
                    values.size());

      }
    } catch (const kj::Exception& e) {
      Fatal(fmt::format("malformed rows from worker {}: {}", from, e.getDescription().cStr()));
    }
  }

  // Arrays destroyed since the last loop (every worker destroys the same ones: SPMD), and arrays
  // created since, whose factory left their elements to be computed here (deferred_init): they
  // start held by every worker and "virgin" (no worker has computed or written a row yet).
  void ForgetDeadArrays() {
    std::erase_if(rotations_, [&](const auto& r) { return !ctx_.arrays().count(r.first); });
    for (auto it = layouts_.begin(); it != layouts_.end();) {
      if (ctx_.arrays().count(it->first)) {
        ++it;
      } else {
        virgin_.erase(it->first);
        it = layouts_.erase(it);
      }
    }
    for (const auto& [id, a] : ctx_.arrays()) {
      if (!a->deferred_init() || layouts_.count(id) || virgin_.count(id) || a->rank() < 1 ||
          a->extent(0) <= 0) {
        continue;
      }
      layouts_.emplace(id, RowLayout(a->extent(0), options_.num_workers));
      virgin_.emplace(id, RowLayout(a->extent(0), 1));  // bit 0 set: every row virgin
    }
  }

  // After a layout change: the virgin rows this worker needs are computed from the factory's
  // recipe (every needer computes the same values), and every needed row stops being virgin --
  // on every worker alike, since all know every worker's needs. Rows are computed only while
  // virgin, so trained values are never overwritten by the recipe.
  void ComputeVirginRows(const std::map<int64_t, std::vector<std::vector<RowRange>>>& needs) {
    for (const auto& [id, per_worker] : needs) {
      auto v = virgin_.find(id);
      if (v == virgin_.end()) continue;
      ArrayBase* a = ctx_.arrays().at(id);
      const int64_t stride = a->value_count() / a->extent(0);
      for (const RowRange& r : per_worker[static_cast<size_t>(options_.rank)]) {
        std::vector<RowRange> fresh;
        v->second.ForEach(r.lo, r.hi, [&](int64_t l, int64_t h, uint64_t virgin) {
          if (virgin != 0) fresh.push_back({l, h});
        });
        for (const RowRange& f : fresh) a->InitElements(f.lo * stride, (f.hi - f.lo) * stride);
      }
      for (const auto& ranges : per_worker) {
        for (const RowRange& r : ranges) v->second.Assign(r.lo, r.hi, 0);
      }
    }
  }

  bool HasVirginRows(int64_t id) const {
    auto v = virgin_.find(id);
    if (v == virgin_.end()) return false;
    bool any = false;
    v->second.ForEach(0, v->second.rows(), [&](int64_t, int64_t, uint64_t b) { any |= b != 0; });
    return any;
  }

  // Every partitioned array whole on every worker again (a loop may touch it another way).
  void MaterializeAll() {
    ForgetDeadArrays();
    if (layouts_.empty() || mesh_->size() < 2) return;
    std::map<int64_t, std::vector<std::vector<RowRange>>> needs;
    for (auto& [id, layout] : layouts_) {
      if (layout.replicated() && !HasVirginRows(id)) continue;
      needs[id].assign(static_cast<size_t>(options_.num_workers), {{0, layout.rows()}});
    }
    if (!needs.empty()) ++stats_.materializations;
    MoveRows(needs);  // every worker takes part, even with nothing to send
  }

  // The time block partition q runs in 2d step r of a loop of tb time blocks.
  int64_t TimeBlock(int64_t q, int64_t r, int64_t tb) const {
    return (q * options_.pipeline_depth + r + phase_) % tb;
  }

  // A 2d loop that rotates arrays starts where their previous rotation ended: a rotation of tb
  // steps leaves partition q holding the blocks partition q + 1 started with, S blocks further
  // on, so the n-th rotation of an array starts S * n blocks back. With the same time cuts, no
  // row then moves between two such loops. The phase depends only on how many rotating loops
  // ran before (the same on every worker, and on replay: Skipped), never on where rows are.
  int64_t PhaseOf(const LoopSchedule& s, const std::map<int64_t, Role>& roles) const {
    if (s.strategy != LoopStrategy::k2D) return 0;
    const int64_t tb = static_cast<int64_t>(options_.num_workers) * options_.threads *
                       options_.pipeline_depth;
    for (const auto& [id, role] : roles) {
      if (role != Role::kRotating) continue;
      auto it = rotations_.find(id);
      const int64_t n = it == rotations_.end() ? 0 : it->second % tb;
      return ((tb - n * options_.pipeline_depth) % tb + tb) % tb;
    }
    return 0;
  }

  // A loop that ran before the checkpoint the program resumes from: the rotations it made.
  void SkippedPartitioned(const LoopSchedule& s, const SiteBinding& binding) {
    if (mesh_->size() < 2 || !PartitionAware(s, binding)) return;
    for (const auto& [id, role] : Roles(s, binding)) {
      if (role == Role::kRotating) ++rotations_[id];
    }
  }

  // Before the loop: every partitioned array in the layout this loop needs; tracking adjusted.
  void PlacePartitioned(const LoopSchedule& s, const Blocks& b, const SiteBinding& binding) {
    loop_roles_.clear();
    phase_ = 0;
    if (mesh_->size() < 2) return;
    ForgetDeadArrays();
    if (!PartitionAware(s, binding)) {
      MaterializeAll();
      return;
    }
    const std::map<int64_t, Role> roles = Roles(s, binding);
    phase_ = PhaseOf(s, roles);
    std::map<int64_t, std::vector<std::vector<RowRange>>> needs;
    for (const auto& [id, role] : roles) {
      ArrayBase* a = ctx_.arrays().at(id);
      auto& per_worker = needs[id];
      if (role == Role::kNone) {
        if (!layouts_.count(id)) {
          needs.erase(id);
          continue;
        }
        per_worker.assign(static_cast<size_t>(options_.num_workers), {{0, a->extent(0)}});
        continue;
      }
      const int d = role == Role::kLocal ? s.space_dim : s.time_dim;
      for (int w = 0; w < options_.num_workers; ++w) per_worker.push_back(Needs(b, role, d, w));
      loop_roles_[id] = role;
    }
    MoveRows(needs);
    rotating_dim_ = s.time_dim;
  }

  // After 2d step r: each rotating block this worker ran goes to its next holder (partition
  // q - 1, S steps later) when that is another worker and the loop has such a step; the rows
  // are released here once sent.
  void RotatePartitioned(const Blocks& b, int r,
                         std::vector<std::vector<PatchData>>* extra_patches) {
    if (loop_roles_.empty()) return;
    const int T = options_.threads;
    const int P = options_.num_workers * T;
    const int S = options_.pipeline_depth;
    const int64_t tb = b.num_blocks() / P;
    if (r + S >= tb) return;  // the last holder keeps it
    for (const auto& [id, role] : loop_roles_) {
      if (role != Role::kRotating) continue;
      ArrayBase* a = ctx_.arrays().at(id);
      const int d = rotating_dim_;  // the 2d loop's time dim
      const int64_t stride = a->value_count() / a->extent(0);
      for (int q = options_.rank * T; q < options_.rank * T + T; ++q) {
        const int next_worker = ((q - 1 + P) % P) / T;
        if (next_worker == options_.rank) continue;
        const RowRange rows = Hull(b, TimeBlock(q, r, tb), d);
        if (rows.hi <= rows.lo) continue;
        PatchData p;
        p.array = id;
        p.layout = a->layout_version();
        p.element_bytes = a->element_bytes();
        p.runs = {static_cast<uint64_t>(rows.lo * stride),
                  static_cast<uint64_t>((rows.hi - rows.lo) * stride)};
        p.source = static_cast<const char*>(a->value_data());
        stats_.rotation_bytes_sent += p.value_bytes();
        (*extra_patches)[static_cast<size_t>(next_worker)].push_back(std::move(p));
        // Read when the step's message is encoded; the memory goes after that (ReleaseSent). If
        // the block comes back to another of this worker's partitions later, the rows arrive
        // again.
        sent_.push_back({a, rows});
      }
    }
  }

  // After the loop: a rotating array's time blocks belong to their last holders.
  void FinishPartitioned(const LoopSchedule& s, const Blocks& b) {
    if (loop_roles_.empty()) return;
    const int T = options_.threads;
    const int P = options_.num_workers * T;
    const int64_t tb = b.num_blocks() / P;
    std::vector<int> last(static_cast<size_t>(tb), 0);
    for (int64_t r = 0; r < tb; ++r) {
      for (int q = 0; q < P; ++q) last[static_cast<size_t>(TimeBlock(q, r, tb))] = q;
    }
    for (const auto& [id, role] : loop_roles_) {
      if (role != Role::kRotating) continue;
      ++rotations_[id];
      RowLayout& layout = layouts_.at(id);
      for (int64_t j = 0; j < tb; ++j) {
        const RowRange rows = Hull(b, j, s.time_dim);
        layout.Assign(rows.lo, rows.hi, uint64_t{1} << (last[static_cast<size_t>(j)] / T));
      }
    }
    loop_roles_.clear();
  }


  void FetchRow(ArrayBase& a, int64_t row) {
    ForgetDeadArrays();
    auto it = layouts_.find(a.id());
    TESSERA_CHECK_MSG(it != layouts_.end() && row >= 0 && row < it->second.rows(),
                      "FetchRow of an array this worker does not keep partitioned");
    if (!EverywhereComputed(a.id(), row, row + 1)) {
      // The rows around it as well, kFetchBytes of them: serial code that scans an array then
      // pays one exchange per piece, not per row.
      const int64_t rows = it->second.rows();
      const int64_t row_bytes = std::max<int64_t>(
          1, a.value_count() / rows * static_cast<int64_t>(a.element_bytes()));
      const int64_t n = std::max<int64_t>(1, kFetchBytes / row_bytes);
      const int64_t lo = row / n * n;
      std::map<int64_t, std::vector<std::vector<RowRange>>> needs;
      needs[a.id()].assign(static_cast<size_t>(options_.num_workers),
                           {{lo, std::min(rows, lo + n)}});
      ++stats_.serial_fetches;
      MoveRows(needs, kFetchStep);  // every worker takes part: all decide alike, from the layouts
    }
    a.set_rows_elsewhere(!EverywhereComputed(a.id(), 0, it->second.rows()));
  }

  // Whether every worker holds rows [lo, hi) of array `id`, computed.
  bool EverywhereComputed(int64_t id, int64_t lo, int64_t hi) const {
    const RowLayout& layout = layouts_.at(id);
    bool everywhere = true;
    layout.ForEach(lo, hi, [&](int64_t, int64_t, uint64_t holders) {
      everywhere &= holders == layout.all();
    });
    if (auto v = virgin_.find(id); v != virgin_.end()) {
      v->second.ForEach(lo, hi, [&](int64_t, int64_t, uint64_t virgin) { everywhere &= virgin == 0; });
    }
    return everywhere;
  }

  void GuardSerialAccess(bool in_loop) {
    if (mesh_->size() < 2) return;
    ForgetDeadArrays();
    for (const auto& [id, layout] : layouts_) {
      ctx_.arrays().at(id)->set_rows_elsewhere(!in_loop &&
                                                !EverywhereComputed(id, 0, layout.rows()));
    }
  }

  void Report(spdlog::logger& log) const {
    for (const auto& [id, layout] : layouts_) {
      log.info("partitioned array #{}: this worker holds {} of its {} rows", id,
               layout.RowsHeldBy(options_.rank), layout.rows());
    }
    log.info(
        "partitioned arrays: {} B of rotating blocks to their next holder, {} B of rows moved "
        "between layouts, {} loops that needed them whole, {} rows fetched for code outside "
        "loops",
        stats_.rotation_bytes_sent, stats_.repartition_bytes_sent, stats_.materializations,
        stats_.serial_fetches);
  }

  bool HeldRows(const ArrayBase& a, const std::function<void(int64_t, int64_t, uint64_t)>& f) {
    if (mesh_->size() < 2 || options_.num_workers > kMaxLayoutWorkers) return false;
    ForgetDeadArrays();
    auto it = layouts_.find(a.id());
    if (it == layouts_.end()) return false;
    auto v = virgin_.find(a.id());
    it->second.ForEach(0, it->second.rows(), [&](int64_t lo, int64_t hi, uint64_t holders) {
      if (v == virgin_.end()) return f(lo, hi, holders);
      v->second.ForEach(lo, hi, [&](int64_t l, int64_t h, uint64_t virgin) {
        if (virgin == 0) f(l, h, holders);
      });
    });
    return true;
  }

  void RestoredWhole(const ArrayBase& a) {
    if (mesh_->size() < 2 || options_.num_workers > kMaxLayoutWorkers || a.is_sparse() ||
        a.rank() < 1 || a.extent(0) <= 0 || (!a.deferred_init() && !layouts_.count(a.id()))) {
      return;
    }
    layouts_.insert_or_assign(a.id(), RowLayout(a.extent(0), options_.num_workers));
    virgin_.erase(a.id());
  }

  // The rows the last Rotate handed over, now that their message is encoded.
  void ReleaseSent() {
    for (const auto& [a, rows] : sent_) Release(a, rows.lo, rows.hi);
    sent_.clear();
  }

  bool HoldRestored(const ArrayBase& a, const std::vector<std::pair<RowRange, int>>& held) {
    if (mesh_->size() < 2 || options_.num_workers > kMaxLayoutWorkers || a.is_sparse() ||
        a.rank() < 1 || a.extent(0) <= 0) {
      return false;
    }
    for (const auto& [rows, w] : held) {
      if (w < 0 || w >= options_.num_workers || rows.lo < 0 || rows.hi < rows.lo ||
          rows.hi > a.extent(0)) {
        return false;
      }
    }
    ForgetDeadArrays();
    RowLayout layout(a.extent(0), options_.num_workers);  // rows in no piece: virgin, everywhere
    std::optional<RowLayout> virgin;
    if (a.deferred_init()) virgin.emplace(a.extent(0), 1);
    for (const auto& [rows, w] : held) {
      layout.Assign(rows.lo, rows.hi, uint64_t{1} << w);
      if (virgin) virgin->Assign(rows.lo, rows.hi, 0);
    }
    ArrayBase* array = ctx_.arrays().at(a.id());
    layout.ForEach(0, layout.rows(), [&](int64_t lo, int64_t hi, uint64_t holders) {
      if (!((holders >> options_.rank) & 1)) Release(array, lo, hi);
    });
    layouts_.insert_or_assign(a.id(), std::move(layout));
    if (virgin) {
      virgin_.insert_or_assign(a.id(), std::move(*virgin));
    } else {
      virgin_.erase(a.id());
    }
    // Serial code reading it before the next loop fetches what this worker no longer holds.
    array->set_rows_elsewhere(!EverywhereComputed(a.id(), 0, a.extent(0)));
    return true;
  }

  const std::map<int64_t, Role>& roles() const { return loop_roles_; }
  int64_t phase() const { return phase_; }
  struct Stats {
    uint64_t rotation_bytes_sent = 0;     // rotating blocks to their next holder
    uint64_t repartition_bytes_sent = 0;  // rows moved when a loop needs another layout
    uint64_t materializations = 0;        // loops that needed partitioned arrays whole
    uint64_t serial_fetches = 0;          // rows fetched for code outside loops (FetchRow)
  };
  const Stats& stats() const { return stats_; }
  uint64_t tag_ = 0;  // the running loop's exchange tag

 private:
  const Options options_;
  Context& ctx_;
  PeerMesh* mesh_;
  std::map<int64_t, RowLayout> layouts_;  // arrays kept partitioned between loops, by id
  std::map<int64_t, RowLayout> virgin_;   // deferred arrays: rows no worker has computed (bit 0)
  std::map<int64_t, Role> loop_roles_;    // their roles in the running loop
  int rotating_dim_ = -1;                 // the running 2d loop's time dim
  int64_t phase_ = 0;                     // the running 2d loop's first time block (PhaseOf)
  std::map<int64_t, int64_t> rotations_;  // rotating loops each array took part in, by id
  std::vector<std::pair<ArrayBase*, RowRange>> sent_;  // rotated out, released by ReleaseSent
  Stats stats_;
};

PartitionedArrays::PartitionedArrays(const Options& options, Context& ctx, PeerMesh& mesh)
    : impl_(std::make_unique<Impl>(options, ctx, mesh)) {}
PartitionedArrays::~PartitionedArrays() = default;

void PartitionedArrays::Place(const LoopSchedule& s, const Blocks& b, const SiteBinding& binding,
                              uint64_t tag) {
  impl_->tag_ = tag;
  impl_->PlacePartitioned(s, b, binding);
}
void PartitionedArrays::MaterializeAll(uint64_t tag) {
  impl_->tag_ = tag;
  impl_->MaterializeAll();
}
const std::map<int64_t, PartitionedArrays::Role>& PartitionedArrays::roles() const {
  return impl_->roles();
}
void PartitionedArrays::Rotate(const Blocks& b, int r,
                               std::vector<std::vector<PatchData>>* per_peer) {
  impl_->RotatePartitioned(b, r, per_peer);
}
void PartitionedArrays::ReleaseSent() { impl_->ReleaseSent(); }
void PartitionedArrays::Skipped(const LoopSchedule& s, const SiteBinding& binding) {
  impl_->SkippedPartitioned(s, binding);
}
int64_t PartitionedArrays::phase() const { return impl_->phase(); }
void PartitionedArrays::Finish(const LoopSchedule& s, const Blocks& b) {
  impl_->FinishPartitioned(s, b);
}
void PartitionedArrays::Report(spdlog::logger& log) const { impl_->Report(log); }
uint64_t PartitionedArrays::rotation_bytes() const { return impl_->stats().rotation_bytes_sent; }
uint64_t PartitionedArrays::repartition_bytes() const {
  return impl_->stats().repartition_bytes_sent;
}
bool PartitionedArrays::HeldRows(const ArrayBase& a,
                                 const std::function<void(int64_t, int64_t, uint64_t)>& f) {
  return impl_->HeldRows(a, f);
}
bool PartitionedArrays::Placeable(const LoopSchedule& s, const SiteBinding& binding) const {
  return impl_->PartitionAware(s, binding);
}
void PartitionedArrays::RestoredWhole(const ArrayBase& a) { impl_->RestoredWhole(a); }
void PartitionedArrays::FetchRow(ArrayBase& a, int64_t row, uint64_t tag) {
  impl_->tag_ = tag;
  impl_->FetchRow(a, row);
}
void PartitionedArrays::GuardSerialAccess(bool in_loop) { impl_->GuardSerialAccess(in_loop); }
bool PartitionedArrays::HoldRestored(const ArrayBase& a,
                                     const std::vector<std::pair<RowRange, int>>& held) {
  return impl_->HoldRestored(a, held);
}

}  // namespace tessera::internal
