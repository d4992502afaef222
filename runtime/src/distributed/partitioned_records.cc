#include "distributed/partitioned_records.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>

#include "distributed/fatal.h"

namespace tessera::internal {

PartitionedRecords::PartitionedRecords(const Options& options, Context& ctx, AllGatherFn all_gather,
                                       AllToAllFn all_to_all)
    : options_(options),
      ctx_(ctx),
      all_gather_(std::move(all_gather)),
      all_to_all_(std::move(all_to_all)) {}

namespace {

bool LaysOutSpace(const LoopSchedule& s) {
  return s.strategy == LoopStrategy::kIndependent || s.strategy == LoopStrategy::k1D ||
         s.strategy == LoopStrategy::k2D || s.strategy == LoopStrategy::kDataParallel;
}

// Whether a name of the iteration space reaches only elements whose key[space_dim] is the
// visited element's (e.g. `X.sparse_row(key[0])` in a loop split on key[0]): blocks are cut on
// key[space_dim] ranges, so those elements are on this worker and in the visiting thread's block.
bool ReachesOwnRows(const LoopSchedule& s, const LoopSchedule::Array& a) {
  return a.placement == "local" && a.array_dim == s.space_dim && a.key_dim == s.space_dim &&
         a.halo_lo == 0 && a.halo_hi == 0;
}

}  // namespace

bool PartitionedRecords::Place(const LoopSchedule& s, const ArrayBase& space,
                               const SiteBinding& binding) {
  const bool exact = !s.writes_unknown && binding.complete(s);
  // Collect first: gathering changes nothing in ctx_.arrays(), but keep the walk simple.
  std::vector<ArrayBase*> partitioned;
  for (const auto& [id, a] : ctx_.arrays()) {
    if (a->record_partition() != nullptr) partitioned.push_back(a);
  }
  for (ArrayBase* a : partitioned) {
    bool whole = !exact;
    if (a == &space) {
      whole = whole || !LaysOutSpace(s);
      // Its names (the space's own, first, and any other bound to it) must stay in its rows.
      for (size_t i = 0; i < binding.arrays.size() && !whole; ++i) {
        whole = binding.arrays[i] == a && !ReachesOwnRows(s, s.arrays[i]);
      }
    } else if (!whole) {
      // Bound under another name of this loop: any of its elements may be read here.
      for (size_t i = 1; i < binding.arrays.size(); ++i) whole = whole || binding.arrays[i] == a;
    }
    if (whole) GatherWhole(*a);
  }
  const RecordPartition* p = space.record_partition();
  if (p == nullptr) return false;
  auto& mutable_space = const_cast<ArrayBase&>(space);
  const int T = options_.threads, W = options_.num_workers, P = W * T;
  space_cuts_ = GlobalCuts(space, s.space_dim, P);
  if (s.strategy == LoopStrategy::k2D) {
    time_cuts_ = GlobalCuts(space, s.time_dim, P * options_.pipeline_depth);
  }
  const RecordPlan plan =
      PlanFromCuts(s.space_dim, space.extent(s.space_dim), space_cuts_, T, W, p->global_size);
  // Every worker knows every plan, so all agree on whether anything moves.
  bool fits = p->dim == plan.dim && p->lo == plan.bounds[options_.rank] &&
              p->hi == plan.bounds[options_.rank + 1];
  Result<std::vector<std::vector<uint64_t>>> agree =
      AllGatherCounts(all_gather_, {static_cast<uint64_t>(fits)});
  CheckOk(agree.status(), "agreeing on the layout of a partitioned array");
  for (const auto& w : *agree) fits = fits && w[0] == 1;
  if (!fits) {
    CheckOk(Repartition(all_to_all_, options_.rank, {&mutable_space}, {plan}, &stats_.bytes_sent),
            "moving the elements of a partitioned array");
    ++stats_.repartitions;
  }
  return true;
}

void PartitionedRecords::GatherAll() {
  std::vector<ArrayBase*> partitioned;
  for (const auto& [id, a] : ctx_.arrays()) {
    if (a->record_partition() != nullptr) partitioned.push_back(a);
  }
  for (ArrayBase* a : partitioned) GatherWhole(*a);
}

void PartitionedRecords::GatherWhole(ArrayBase& array) {
  if (array.record_partition() == nullptr) return;
  CheckOk(internal::GatherWhole(all_gather_, &array, &stats_.bytes_sent),
          "gathering a partitioned array");
  for (auto it = counts_.begin(); it != counts_.end();) {
    it = it->first.first == array.id() ? counts_.erase(it) : std::next(it);
  }
  for (auto it = cuts_.begin(); it != cuts_.end();) {
    it = std::get<0>(it->first) == array.id() ? cuts_.erase(it) : std::next(it);
  }
  ++stats_.gathers;
}

void PartitionedRecords::FillGrid(BlockGrid* grid) const {
  grid->space_cuts = &space_cuts_;
  grid->time_cuts = &time_cuts_;
}

void PartitionedRecords::CombineKeyBounds(Blocks* b) {
  std::vector<uint64_t> mine(b->key_lo.size() + b->key_hi.size());
  for (size_t i = 0; i < b->key_lo.size(); ++i) {
    mine[2 * i] = static_cast<uint64_t>(b->key_lo[i]);
    mine[2 * i + 1] = static_cast<uint64_t>(b->key_hi[i]);
  }
  Result<std::vector<std::vector<uint64_t>>> all = AllGatherCounts(all_gather_, mine);
  CheckOk(all.status(), "combining the key bounds of a partitioned array");
  for (const std::vector<uint64_t>& w : *all) {
    for (size_t i = 0; i < b->key_lo.size(); ++i) {
      b->key_lo[i] = std::min(b->key_lo[i], static_cast<int64_t>(w[2 * i]));
      b->key_hi[i] = std::max(b->key_hi[i], static_cast<int64_t>(w[2 * i + 1]));
    }
  }
}

const std::vector<int64_t>& PartitionedRecords::GlobalCuts(const ArrayBase& a, int dim, int parts) {
  auto key = std::make_tuple(a.id(), dim, parts);
  if (auto it = cuts_.find(key); it != cuts_.end()) return it->second;
  auto counts = counts_.find({a.id(), dim});
  if (counts == counts_.end()) {
    Result<std::vector<uint64_t>> sum = SumCounts(all_gather_, LocalKeyCounts(a, dim));
    CheckOk(sum.status(), "counting the keys of a partitioned array");
    counts = counts_.emplace(std::make_pair(a.id(), dim), std::move(*sum)).first;
  }
  return cuts_.emplace(key, CutsFromCounts(counts->second, parts)).first->second;
}

void PartitionedRecords::Report(spdlog::logger& log) const {
  size_t held = 0, arrays = 0;
  for (const auto& [id, a] : ctx_.arrays()) {
    if (const RecordPartition* p = a->record_partition()) {
      ++arrays;
      held += static_cast<size_t>(a->size());
      log.info("partitioned sparse array #{}: {} of {} elements held here (key[{}] in [{}, {}))",
               id, a->size(), p->global_size, p->dim, p->lo, p->hi);
    }
  }
  if (arrays > 0 || stats_.gathers > 0 || stats_.repartitions > 0) {
    log.info(
        "partitioned sparse arrays: {} held ({} elements here), {} relayouts, {} gathered whole",
        arrays, held, stats_.repartitions, stats_.gathers);
  }
}

}  // namespace tessera::internal
