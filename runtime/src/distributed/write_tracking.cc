// What a step may have written, and the patches that carry it to the peers (write_tracking.h).
#include "distributed/write_tracking.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "distributed/fatal.h"

namespace tessera::internal {
namespace {

// Byte equality of two elements; the common sizes compare as one load each instead of a call.
inline bool SameElement(const char* a, const char* b, size_t e) {
  switch (e) {
    case 4: {
      uint32_t x, y;
      std::memcpy(&x, a, 4);
      std::memcpy(&y, b, 4);
      return x == y;
    }
    case 8: {
      uint64_t x, y;
      std::memcpy(&x, a, 8);
      std::memcpy(&y, b, 8);
      return x == y;
    }
    default:
      return std::memcmp(a, b, e) == 0;
  }
}

}  // namespace

// Sorts element ranges and merges overlapping and touching ones.
void MergeRanges(std::vector<std::pair<int64_t, int64_t>>* ranges) {
  std::sort(ranges->begin(), ranges->end());
  size_t kept = 0;
  for (const auto& r : *ranges) {
    if (kept > 0 && r.first <= (*ranges)[kept - 1].second) {
      (*ranges)[kept - 1].second = std::max((*ranges)[kept - 1].second, r.second);
    } else {
      (*ranges)[kept++] = r;
    }
  }
  ranges->resize(kept);
}

// Which elements of `a` the loop body may write, by what tessc recorded. Names do not reach
// the runtime, so arrays are matched by element size and rank: an array whose shape no written
// array has is never written (not tracked); one whose every written look-alike is partitioned
// along its rows is written only in the rows of the running blocks' key ranges; the iteration
// space only at the running positions. When tessc could not see everything: anywhere.
std::optional<Tracked> TrackingFor(const LoopSchedule& s, const ArrayBase& space, ArrayBase* a) {
  Tracked t;
  t.array = a;
  t.layout = a->layout_version();
  if (s.writes_unknown) return t;  // kAll
  if (a == &space) {
    if (!s.space_written) return std::nullopt;
    t.scope = Tracked::Scope::kPositions;
    return t;
  }
  bool matched = false, rows = !a->is_sparse() && a->rank() >= 1 && a->extent(0) > 0;
  for (const LoopSchedule::WrittenArray& w : s.written) {
    if (static_cast<size_t>(w.element_bytes) != a->element_bytes() || w.rank != a->rank()) continue;
    matched = true;
    if (w.row_key_dim < 0) rows = false;
    t.row_dims.push_back({w.row_key_dim, w.halo_lo, w.halo_hi});
  }
  if (!matched) return std::nullopt;
  t.scope = rows ? Tracked::Scope::kRows : Tracked::Scope::kAll;
  return t;
}

// With every name bound to its array (schedule/array_binding.h), exactly the arrays the body
// writes are tracked, each only where its own placement says it may be written.
std::map<int64_t, Tracked> ExactTracking(const LoopSchedule& s, const SiteBinding& binding,
                                         const ArrayBase& space) {
  std::map<int64_t, Tracked> out;
  for (size_t i = 0; i < s.arrays.size(); ++i) {
    const LoopSchedule::Array& name = s.arrays[i];
    ArrayBase* a = binding.arrays[i];
    if (a == nullptr || name.relaxed || !name.write) continue;
    auto [it, fresh] = out.try_emplace(a->id());
    Tracked& t = it->second;
    if (fresh) {
      t.array = a;
      t.layout = a->layout_version();
      t.scope = a == &space ? Tracked::Scope::kPositions : Tracked::Scope::kRows;
    }
    if (t.scope == Tracked::Scope::kPositions) continue;
    const bool rows = !a->is_sparse() && a->rank() >= 1 && a->extent(0) > 0 &&
                      (name.placement == "local" || name.placement == "rotating") &&
                      name.array_dim == 0 && name.key_dim >= 0 && name.key_dim < s.rank;
    if (!rows) t.scope = Tracked::Scope::kAll;
    if (t.scope == Tracked::Scope::kRows) {
      t.row_dims.push_back({name.key_dim, name.halo_lo, name.halo_hi});
    }
  }
  if (s.strategy != LoopStrategy::k2D) return out;
  for (auto& [id, t] : out) {
    if (t.scope != Tracked::Scope::kRows || t.row_dims.size() != 1 || t.row_dims[0].halo_lo != 0 ||
        t.row_dims[0].halo_hi != 0) {
      continue;
    }
    if (t.row_dims[0].key_dim == s.space_dim) t.transfer = Tracked::Transfer::kDeferred;
    if (t.row_dims[0].key_dim == s.time_dim) t.transfer = Tracked::Transfer::kRotate;
  }
  return out;
}

// Before a step: the element ranges each tracked array may change in `parts`, and a copy of
// them to compare with afterwards. (Peers' patches are applied before this, never during a
// step, so the copy is the baseline of this worker's own changes.)
void TrackStep(const Blocks& b, const std::vector<Part>& parts, Tracked* tracked) {
  Tracked& t = *tracked;
  ArrayBase* a = t.array;
  CheckLayout(t);
  const int64_t n = a->value_count();
  t.regions.clear();
  if (t.transfer == Tracked::Transfer::kDeferred || t.transfer == Tracked::Transfer::kPartitioned) {
    return;
  }
  switch (t.scope) {
    case Tracked::Scope::kAll:
      if (n > 0) t.regions.push_back({0, n});
      break;
    case Tracked::Scope::kRows: {
      const int64_t rows = a->extent(0);
      const int64_t stride = n / rows;
      for (const Part& part : parts) {
        if (part.to <= part.from) continue;
        for (const auto& [d, lo_halo, hi_halo] : t.row_dims) {
          const int64_t lo = std::max<int64_t>(0, b.key_lo[part.block * b.rank + d] + lo_halo);
          const int64_t hi =
              std::min<int64_t>(rows, b.key_hi[part.block * b.rank + d] + 1 + hi_halo);
          if (lo < hi) t.regions.push_back({lo * stride, hi * stride});
        }
      }
      break;
    }
    case Tracked::Scope::kPositions:
      for (const Part& part : parts) {
        if (part.to <= part.from) continue;
        b.ForEachRange(part.block, part.from, part.to, [&t](int64_t lo, int64_t hi) {
          if (!t.regions.empty() && t.regions.back().second == lo) {
            t.regions.back().second = hi;
          } else {
            t.regions.push_back({lo, hi});
          }
        });
      }
      break;
  }
  MergeRanges(&t.regions);
  if (t.transfer == Tracked::Transfer::kRotate) return;  // sent whole: no snapshot
  const size_t e = a->element_bytes();
  const char* cur = static_cast<const char*>(a->value_data());
  t.snapshot.clear();
  for (const auto& [lo, hi] : t.regions) {
    t.snapshot.insert(t.snapshot.end(), cur + lo * static_cast<int64_t>(e),
                      cur + hi * static_cast<int64_t>(e));
  }
}

// Every element of t's regions, read from the array when the patch is encoded (no comparison).
PatchData WholePatch(const Tracked& t) {
  ArrayBase* a = t.array;
  CheckLayout(t);
  PatchData p;
  p.array = a->id();
  p.layout = t.layout;
  const size_t e = a->element_bytes();
  p.element_bytes = e;
  p.source = static_cast<const char*>(a->value_data());
  for (const auto& [lo, hi] : t.regions) {
    if (hi <= lo) continue;
    p.runs.push_back(static_cast<uint64_t>(lo));
    p.runs.push_back(static_cast<uint64_t>(hi - lo));
  }
  return p;
}

// The elements of the step's regions that differ from the copy taken before it, as runs.
PatchData DiffPatch(const Tracked& t, bool additive) {
  ArrayBase* a = t.array;
  CheckLayout(t);
  PatchData p;
  p.array = a->id();
  p.layout = t.layout;
  p.additive = additive && a->arithmetic();
  const size_t e = a->element_bytes();
  p.element_bytes = e;
  const char* cur = static_cast<const char*>(a->value_data());
  const char* snap_base = t.snapshot.data();
  // Exact to the element: a region may hold elements other workers write in the same step
  // (rows a shape-matched look-alike partitions differently), which must not be overwritten
  // with this worker's unchanged copy. Whole 256-byte chunks compare with memcmp first; only
  // chunks that differ are walked element by element.
  const int64_t chunk = std::max<int64_t>(1, 256 / static_cast<int64_t>(e));
  for (const auto& [lo, hi] : t.regions) {
    const char* snap = snap_base - lo * static_cast<int64_t>(e);  // snap[i * e] is element i
    int64_t run_begin = -1;
    auto close_run = [&](int64_t end) {
      if (run_begin < 0) return;
      const int64_t count = end - run_begin;
      p.runs.push_back(static_cast<uint64_t>(run_begin));
      p.runs.push_back(static_cast<uint64_t>(count));
      const size_t at = p.values.size();
      p.values.resize(at + static_cast<size_t>(count) * e);
      if (p.additive) {
        a->SubtractValues(cur + run_begin * e, snap + run_begin * e, p.values.data() + at, count);
      } else {
        std::memcpy(p.values.data() + at, cur + run_begin * e, static_cast<size_t>(count) * e);
      }
      run_begin = -1;
    };
    for (int64_t c = lo; c < hi; c += chunk) {
      const int64_t end = std::min(hi, c + chunk);
      if (std::memcmp(cur + c * e, snap + c * e, static_cast<size_t>(end - c) * e) == 0) {
        close_run(c);
        continue;
      }
      for (int64_t i = c; i < end; ++i) {
        const bool same = SameElement(cur + i * e, snap + i * e, e);
        if (!same && run_begin < 0) run_begin = i;
        if (same) close_run(i);
      }
    }
    close_run(hi);
    snap_base += (hi - lo) * static_cast<int64_t>(e);
  }
  return p;
}

void CheckLayout(const Tracked& t) {
  if (t.array->layout_version() != t.layout) {
    Fatal(
        fmt::format("array #{} changed its layout (inserted into, shuffled or sorted) inside a "
                    "parallel_for; that is not part of the model",
                    t.array->id()));
  }
}

}  // namespace tessera::internal
