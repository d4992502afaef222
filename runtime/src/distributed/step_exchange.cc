// StepExchange (see step_exchange.h).
#include "distributed/step_exchange.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "distributed/fatal.h"
#include "distributed/partitioned_arrays.h"
#include "distributed/peer_mesh.h"

namespace tessera::internal {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

StepExchange::StepExchange(const Options& options, Context& ctx, PeerMesh& mesh,
                           PartitionedArrays& partitioned)
    : options_(options),
      ctx_(ctx),
      mesh_(mesh),
      partitioned_(partitioned),
      per_peer_(static_cast<size_t>(mesh.size())) {}

// Before a step: each tracked array's regions and snapshot for `parts` (write_tracking.h).
void StepExchange::BeginStep(const Blocks& b, const std::vector<Part>& parts) {
  const Clock::time_point t0 = Clock::now();
  for (auto& [id, t] : tracked_) TrackStep(b, parts, &t);
  step_open_ = true;
  times_.snapshot += Since(t0);
}

void StepExchange::BeginLoop(const LoopSchedule& s, const ArrayBase& space,
                             const SiteBinding& binding, std::set<int64_t>* dense_writes,
                             uint64_t tag) {
  tag_ = tag;
  applied_step_ = -1;
  awaited_ = true;
  dense_writes_ = dense_writes;
  tracked_.clear();
  if (!s.writes_unknown && binding.complete(s)) {
    tracked_ = ExactTracking(s, binding, space);
  } else {
    for (auto& [id, a] : ctx_.arrays()) {
      if (a->relaxed()) continue;
      if (std::optional<Tracked> t = TrackingFor(s, space, a)) tracked_.emplace(id, std::move(*t));
    }
  }
  // A partitioned sparse array here is the space, each element held by the one worker that
  // runs it: its writes stay where they are.
  std::erase_if(tracked_,
                [](const auto& e) { return e.second.array->record_partition() != nullptr; });
  // Positions the last run of this site mostly changed (a body that rewrites its element, as
  // samplers do) go whole: each is written only by the worker that runs it, so its whole value
  // is what the peers must have, and the snapshot and comparison would be wasted work. Not for
  // data-parallel loops, whose patches are additive differences.
  if (s.strategy != LoopStrategy::kDataParallel) {
    for (auto& [id, t] : tracked_) {
      if (t.scope == Tracked::Scope::kPositions && t.transfer == Tracked::Transfer::kDiff &&
          dense_writes_->count(id)) {
        t.transfer = Tracked::Transfer::kRotate;
      }
    }
  }
}

void StepExchange::EndLoop() {
  dense_writes_ = nullptr;
  tracked_.clear();
  awaited_ = false;
}

// The arrays the running loop may write, by id.
std::vector<ArrayBase*> StepExchange::TrackedArrays() const {
  std::vector<ArrayBase*> out;
  for (const auto& [id, t] : tracked_) out.push_back(t.array);
  return out;
}

void StepExchange::Untrack(int64_t id) { tracked_.erase(id); }

// The running loop's partitioned arrays are tracked by their role: a local one is written only
// by its holder and sent nowhere; a rotating one travels only through PartitionedArrays::Rotate.
void StepExchange::TrackPartitioned() {
  using Role = PartitionedArrays::Role;
  for (const auto& [id, role] : partitioned_.roles()) {
    auto t = tracked_.find(id);
    if (role == Role::kLocal) {
      if (t != tracked_.end()) tracked_.erase(t);
    } else if (role == Role::kRotating && t != tracked_.end()) {
      t->second.transfer = Tracked::Transfer::kPartitioned;
    } else if (role == Role::kRotating) {
      Tracked fresh;  // read-only here, but its blocks still rotate (Apply must accept them)
      fresh.array = ctx_.arrays().at(id);
      fresh.layout = fresh.array->layout_version();
      fresh.scope = Tracked::Scope::kRows;
      fresh.transfer = Tracked::Transfer::kPartitioned;
      tracked_.emplace(id, std::move(fresh));
    }
  }
  per_peer_.assign(static_cast<size_t>(mesh_.size()), {});
}

void StepExchange::Publish(int64_t step, bool additive, bool replicated) {
  const Clock::time_point t0 = Clock::now();
  ++steps_;
  // Scheduled loops wait for every peer's message of every step, so replicated steps of them
  // still send one, empty.
  if ((!replicated || awaited_) && mesh_.size() > 1) {
    std::vector<PatchData> patches;
    for (auto& [id, t] : tracked_) {
      if (replicated || !step_open_) break;
      if (t.transfer == Tracked::Transfer::kDeferred ||
          t.transfer == Tracked::Transfer::kPartitioned) {
        continue;
      }
      PatchData p =
          t.transfer == Tracked::Transfer::kRotate ? WholePatch(t) : DiffPatch(t, additive);
      if (dense_writes_ != nullptr && t.scope == Tracked::Scope::kPositions &&
          t.transfer == Tracked::Transfer::kDiff && !additive) {
        int64_t tracked = 0;
        for (const auto& [lo, hi] : t.regions) tracked += hi - lo;
        const auto changed = static_cast<int64_t>(p.value_bytes() / p.element_bytes);
        if (tracked > 0 && 2 * changed >= tracked) dense_writes_->insert(id);
      }
      if (!p.runs.empty()) patches.push_back(std::move(p));
    }
    SendToPeers(step, patches);
  }
  step_open_ = false;
  times_.publish += Since(t0);
}

// One PeerMessage of `step` to every peer, carrying `patches` and that peer's per_peer_ patches
// (cleared afterwards).
void StepExchange::SendToPeers(int64_t step, const std::vector<PatchData>& patches) {
  if (mesh_.size() <= 1) return;
  bool per_peer = false;
  for (const auto& own : per_peer_) {
    per_peer |= !own.empty();
    for (const PatchData& p : own) block_bytes_sent_ += p.value_bytes();
  }
  for (const PatchData& p : patches) {
    patch_bytes_sent_ += p.value_bytes() * static_cast<uint64_t>(mesh_.size() - 1);
  }
  const auto rank = static_cast<uint32_t>(options_.rank);
  // Not from a FramePool: idle pooled buffers of rotating blocks raised MF's peak per worker at
  // -w 4 by 4-12 MB (bench/README.md); a one-segment frame already saves the copies.
  auto encode = [&](const std::vector<PatchData>* own) {
    return EncodePatches(rank, tag_, step, patches, own);
  };
  if (!per_peer) {
    // The last peer gets the frame itself: with one peer (-w 2) nothing is copied; a copy would
    // write every step's changes once more into freshly faulted pages (bench/README.md, LDA).
    zmq::message_t frame = encode(nullptr);
    const int last = options_.rank == mesh_.size() - 1 ? mesh_.size() - 2 : mesh_.size() - 1;
    for (int r = 0; r < mesh_.size(); ++r) {
      if (r == options_.rank || r == last) continue;
      CheckOk(mesh_.SendCopy(r, frame), "sending a step's changes");
    }
    CheckOk(mesh_.SendFrame(last, std::move(frame)), "sending a step's changes");
    return;
  }
  for (int r = 0; r < mesh_.size(); ++r) {
    if (r == options_.rank) continue;
    CheckOk(mesh_.SendFrame(r, encode(&per_peer_[static_cast<size_t>(r)])),
            "sending a step's changes");
  }
  for (auto& own : per_peer_) own.clear();
}

// After a 2d loop's last step: the rows of this worker's space blocks of every kDeferred array,
// whole, as one more step (`step`) that every peer waits for. Returns whether there was one.
bool StepExchange::PublishDeferred(const Blocks& b, int64_t step) {
  bool any = false;
  std::vector<PatchData> patches;
  for (auto& [id, t] : tracked_) {
    if (t.transfer != Tracked::Transfer::kDeferred) continue;
    any = true;
    ArrayBase* a = t.array;
    const int64_t rows = a->extent(0);
    const int64_t stride = a->value_count() / rows;
    const int d = t.row_dims[0].key_dim;
    const int T = options_.threads;
    const int P = mesh_.size() * T;
    const int64_t per_space = b.num_blocks() / P;  // blocks are numbered space-major
    t.regions.clear();
    for (int q = options_.rank * T; q < options_.rank * T + T; ++q) {
      for (int64_t blk = q * per_space; blk < (q + 1) * per_space; ++blk) {
        const int64_t lo = std::max<int64_t>(0, b.key_lo[blk * b.rank + d]);
        const int64_t hi = std::min<int64_t>(rows, b.key_hi[blk * b.rank + d] + 1);
        if (lo < hi) t.regions.push_back({lo * stride, hi * stride});
      }
    }
    MergeRanges(&t.regions);
    PatchData p = WholePatch(t);
    if (!p.runs.empty()) patches.push_back(std::move(p));
  }
  if (!any) return false;
  ++steps_;
  SendToPeers(step, patches);
  return true;
}

// Applies every peer's patches of steps up to `step`, in step order (each patch says whether
// it adds or overwrites).
void StepExchange::AwaitThrough(int64_t step) {
  for (int64_t s = applied_step_ + 1; s <= step; ++s) {
    for (int r = 0; r < mesh_.size(); ++r) {
      if (r == options_.rank) continue;
      const Clock::time_point t0 = Clock::now();
      Result<std::unique_ptr<IncomingMessage>> msg = mesh_.Receive(r, tag_, s);
      CheckOk(msg.status(), "waiting for a peer's changes");
      const Clock::time_point t1 = Clock::now();
      Apply(r, **msg);
      times_.wait += std::chrono::duration<double>(t1 - t0).count();
      times_.apply += Since(t1);
    }
    applied_step_ = s;
  }
}

void StepExchange::Apply(int from, const IncomingMessage& msg) {
  try {
    for (auto patch : msg.envelope().getBody().getPeer().getPatches()) {
      auto it = tracked_.find(patch.getArray());
      if (it == tracked_.end()) {
        Fatal(
            fmt::format("worker {} changed array #{}, which this worker does not have or does "
                        "not expect the loop to write; code outside parallel_for must create "
                        "the same arrays on every worker",
                        from, patch.getArray()));
      }
      Tracked& t = it->second;
      ArrayBase* a = t.array;
      const size_t e = a->element_bytes();
      if (patch.getLayoutVersion() != t.layout || patch.getElementBytes() != e) {
        Fatal(
            fmt::format("array #{} differs between workers {} and {} (layout {} vs {}); code "
                        "outside parallel_for must compute the same on every worker",
                        a->id(), from, options_.rank, patch.getLayoutVersion(), t.layout));
      }
      auto runs = patch.getRuns();
      auto values = patch.getValues();
      if (runs.size() % 2 != 0) Fatal("malformed patch (odd run list)");
      const uint64_t n = static_cast<uint64_t>(a->value_count());
      char* cur = static_cast<char*>(a->value_data());
      size_t at = 0;
      for (unsigned i = 0; i < runs.size(); i += 2) {
        const uint64_t begin = runs[i], count = runs[i + 1];
        if (begin > n || count > n - begin || at + count * e > values.size()) {
          Fatal(fmt::format("malformed patch for array #{} from worker {}", a->id(), from));
        }
        const char* src = reinterpret_cast<const char*>(values.begin()) + at;
        if (patch.getAdditive()) {
          a->AddValues(cur + begin * e, src, static_cast<int64_t>(count));
        } else {
          std::memcpy(cur + begin * e, src, count * e);
        }
        at += count * e;
      }
    }
  } catch (const kj::Exception& e) {
    Fatal(fmt::format("malformed patch from worker {}: {}", from, e.getDescription().cStr()));
  }
}

}  // namespace tessera::internal
