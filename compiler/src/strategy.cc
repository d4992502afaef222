#include "tessera/compiler/strategy.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "tessera/common/check.h"

namespace tessera::compiler {
namespace {

constexpr int kMaxSkewCoeff = 2;  // search range for the wavefront row of a unimodular schedule

bool Legal1D(const std::vector<Dependence>& deps, int s) {
  for (const Dependence& d : deps) {
    if (!d.vector[s].IsZero()) return false;
  }
  return true;
}

// Rotation (Orion's 2D): at step r worker p runs block (space p, time (p + r) mod P). Two
// iterations run concurrently only if both their space and time blocks differ, so each dependence
// needs a zero in the space or the time dim. Blocks are visited in rotated order, so a dependence
// may only cross blocks if its direction is free (`*`): a constant distance across blocks could be
// run backwards.
bool Dep2DOk(const DepVector& v, int s, int t) {
  const bool zs = v[s].IsZero();
  const bool zt = v[t].IsZero();
  if (zs && zt) return true;  // same block: one worker, serial order
  if (!zs && !zt) return false;
  const DepComponent& crossing = zs ? v[t] : v[s];
  if (!crossing.any) return false;
  for (size_t u = 0; u < v.size(); ++u) {
    if (static_cast<int>(u) != s && static_cast<int>(u) != t && v[u].IsNonZeroConstant()) {
      return false;
    }
  }
  return true;
}

bool Legal2D(const std::vector<Dependence>& deps, int s, int t) {
  for (const Dependence& d : deps) {
    if (!Dep2DOk(d.vector, s, t)) return false;
  }
  return true;
}

// The dependence oriented from the earlier to the later iteration, or nullopt if the order of
// the two iterations is not known (a `*` before the first non-zero distance).
std::optional<DepVector> Oriented(const DepVector& v) {
  for (const DepComponent& c : v) {
    if (c.any) return std::nullopt;
    if (c.distance == 0) continue;
    if (c.distance > 0) return v;
    DepVector neg = v;
    for (DepComponent& x : neg) x.distance = -x.distance;
    return neg;
  }
  return v;  // zero vector; never passed in
}

int64_t ExtendedGcd(int64_t a, int64_t b, int64_t* x, int64_t* y) {
  if (b == 0) {
    *x = a >= 0 ? 1 : -1;
    *y = 0;
    return a >= 0 ? a : -a;
  }
  int64_t x1, y1;
  int64_t g = ExtendedGcd(b, a % b, &x1, &y1);
  *x = y1;
  *y = x1 - (a / b) * y1;
  return g;
}

// Completes wavefront row h to a unimodular matrix (det +-1), or returns empty if this simple
// completion does not apply (rank > 2 without a +-1 entry in h).
std::vector<std::vector<int64_t>> CompleteUnimodular(const std::vector<int64_t>& h) {
  const int n = static_cast<int>(h.size());
  // With a +-1 entry at p, the other unit rows complete h (det = +-h[p]); this keeps the
  // partitioned coordinate a plain key component, the simplest for the runtime.
  for (int p = 0; p < n; ++p) {
    if (h[p] != 1 && h[p] != -1) continue;
    std::vector<std::vector<int64_t>> t = {h};
    for (int i = 0; i < n; ++i) {
      if (i == p) continue;
      std::vector<int64_t> e(n, 0);
      e[i] = 1;
      t.push_back(e);
    }
    return t;
  }
  if (n == 2) {
    int64_t x, y;
    if (ExtendedGcd(h[0], h[1], &x, &y) != 1) return {};
    // det [[a, b], [-y, x]] = a*x + b*y = 1.
    return {{h[0], h[1]}, {-y, x}};
  }
  return {};
}

// Lamport's hyperplane method: a row h such that h . d >= 1 for every dependence, so all
// iterations on one wavefront h . key = const are independent.
std::optional<std::vector<std::vector<int64_t>>> FindSkew(const std::vector<Dependence>& deps,
                                                          int n) {
  if (n < 2) return std::nullopt;  // one key dim: a wavefront holds a single iteration
  std::vector<bool> must_be_zero(n, false);
  std::vector<DepVector> oriented;
  for (const Dependence& d : deps) {
    DepVector exact = d.vector;
    if (!d.ray.empty()) {
      // Exactly t * ray: use the ray itself as a constant vector (Oriented() flips it to point
      // from the earlier to the later iteration).
      for (int i = 0; i < n; ++i) exact[i] = DepComponent::Distance(d.ray[i]);
    }
    std::optional<DepVector> o = Oriented(exact);
    if (!o) return std::nullopt;
    for (int i = 0; i < n; ++i) {
      if ((*o)[i].any) must_be_zero[i] = true;
    }
    oriented.push_back(*o);
  }
  // Enumerate h in [-k, k]^n by increasing L1 norm (fewer, wider wavefronts first).
  std::vector<std::vector<int64_t>> candidates;
  std::vector<int64_t> h(n, -kMaxSkewCoeff);
  while (true) {
    bool ok = true;
    for (int i = 0; i < n; ++i) {
      if (must_be_zero[i] && h[i] != 0) ok = false;
    }
    if (ok) candidates.push_back(h);
    int i = n - 1;
    while (i >= 0 && h[i] == kMaxSkewCoeff) h[i--] = -kMaxSkewCoeff;
    if (i < 0) break;
    ++h[i];
  }
  auto l1 = [](const std::vector<int64_t>& v) {
    int64_t s = 0;
    for (int64_t x : v) s += x < 0 ? -x : x;
    return s;
  };
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const auto& a, const auto& b) {
                     if (l1(a) != l1(b)) return l1(a) < l1(b);
                     return a > b;  // prefer positive coefficients, leading dims first
                   });
  for (const auto& cand : candidates) {
    if (l1(cand) == 0) continue;
    bool carries_all = true;
    for (const DepVector& d : oriented) {
      int64_t dot = 0;
      for (int i = 0; i < n; ++i) {
        if (!d[i].any) dot += cand[i] * d[i].distance;
      }
      if (dot < 1) {
        carries_all = false;
        break;
      }
    }
    if (!carries_all) continue;
    auto t = CompleteUnimodular(cand);
    if (!t.empty()) return t;
  }
  return std::nullopt;
}

int64_t ArrayBytes(const ArrayInfo& info, const std::vector<const Access*>& accesses) {
  int64_t b = info.element_bytes > 0 ? info.element_bytes : 8;
  for (const Access* a : accesses) {
    for (const Affine& s : a->subscripts) {
      if (!s.DependsOnKey()) return b * 8;  // a row (or more) per key index
    }
  }
  return b;
}

int64_t PlacementCost(Placement p, int64_t bytes) {
  switch (p) {
    case Placement::kLocal:
      return 0;
    case Placement::kReplicated:
      return bytes;
    case Placement::kRotating:
      return 2 * bytes;
    case Placement::kServers:
      return 4 * bytes;
  }
  return 0;
}

// Returns the array dim every access indexes with key[dim] + c, and the range of c.
std::optional<ArrayPlacement> PartitionedBy(const std::vector<const Access*>& accesses, int rank,
                                            int key_dim, Placement placement) {
  if (key_dim < 0 || accesses.empty()) return std::nullopt;
  for (int m = 0; m < rank; ++m) {
    ArrayPlacement p;
    p.placement = placement;
    p.array_dim = m;
    p.key_dim = key_dim;
    bool ok = true;
    bool first = true;
    for (const Access* a : accesses) {
      const Affine& s = a->subscripts[m];
      if (s.SingleKeyDim() != key_dim) {
        ok = false;
        break;
      }
      p.halo_lo = first ? s.constant() : std::min(p.halo_lo, s.constant());
      p.halo_hi = first ? s.constant() : std::max(p.halo_hi, s.constant());
      first = false;
    }
    if (ok) return p;
  }
  return std::nullopt;
}

struct Candidate {
  Schedule schedule;
  bool valid = false;
};

Schedule Place(const SiteModel& site, const std::vector<Dependence>& deps, Strategy strategy,
               int s, int t) {
  Schedule sched;
  sched.strategy = strategy;
  sched.space_dim = s;
  sched.time_dim = t;
  sched.dependences = deps;
  for (size_t ai = 0; ai < site.arrays.size(); ++ai) {
    const ArrayInfo& info = site.arrays[ai];
    std::vector<const Access*> accesses;
    bool written = false;
    for (const Access& a : site.accesses) {
      if (a.array != static_cast<int>(ai)) continue;
      accesses.push_back(&a);
      written |= a.write;
    }
    ArrayPlacement p;
    if (info.relaxed) {
      p.placement = Placement::kServers;
    } else if (strategy == Strategy::kUnimodular) {
      p.placement = written ? Placement::kServers : Placement::kReplicated;
    } else {
      bool crosses_space = false;  // data-parallel: conflicts between partitions
      for (const Dependence& d : deps) {
        if (site.accesses[d.first].array == static_cast<int>(ai) && !d.vector[s].IsZero()) {
          crosses_space = true;
        }
      }
      std::optional<ArrayPlacement> part;
      if (!crosses_space) part = PartitionedBy(accesses, info.rank, s, Placement::kLocal);
      if (!part && strategy == Strategy::k2D) {
        part = PartitionedBy(accesses, info.rank, t, Placement::kRotating);
      }
      if (part) {
        p = *part;
      } else {
        p.placement = written ? Placement::kServers : Placement::kReplicated;
      }
    }
    sched.cost += PlacementCost(p.placement, ArrayBytes(info, accesses));
    sched.placements.push_back(p);
  }
  return sched;
}

// Keeps the cheaper of `best` and `cand` (ties keep the earlier one).
void KeepCheaper(std::optional<Schedule>* best, Schedule cand) {
  if (!*best || cand.cost < (*best)->cost) *best = std::move(cand);
}

ScheduleError PickBlocking(const std::vector<Dependence>& deps, const std::vector<Access>& accesses,
                           int n) {
  // The dependence that by itself rules out the most 1d/2d candidates explains the error best.
  int best_score = -1;
  ScheduleError err;
  for (const Dependence& d : deps) {
    int score = 0;
    for (int s = 0; s < n; ++s) {
      if (!d.vector[s].IsZero()) ++score;
      for (int t = 0; t < n; ++t) {
        if (t != s && !Dep2DOk(d.vector, s, t)) ++score;
      }
    }
    // Ties: prefer accesses the user wrote over alias copies and over the loop's implicit read
    // of its own element (access 0), which are poor places to point at.
    // A dependence with an exact ray could be carried by a wavefront on its own: less to blame.
    score *= 8;
    if (d.ray.empty()) score += 4;
    if (!accesses[d.first].alias_copy && !accesses[d.second].alias_copy) score += 2;
    if (d.first != 0 && d.second != 0) ++score;
    if (score > best_score) {
      best_score = score;
      err.blocking = d;
    }
  }
  return err;
}

}  // namespace

const char* StrategyName(Strategy s) {
  switch (s) {
    case Strategy::kIndependent:
      return "independent";
    case Strategy::k1D:
      return "1d";
    case Strategy::k2D:
      return "2d";
    case Strategy::kUnimodular:
      return "unimodular";
    case Strategy::kDataParallel:
      return "data_parallel";
  }
  return "?";
}

const char* PlacementName(Placement p) {
  switch (p) {
    case Placement::kLocal:
      return "local";
    case Placement::kRotating:
      return "rotating";
    case Placement::kServers:
      return "servers";
    case Placement::kReplicated:
      return "replicated";
  }
  return "?";
}

std::vector<Dependence> ComputeDependences(const SiteModel& site) {
  std::vector<Dependence> deps;
  for (size_t i = 0; i < site.accesses.size(); ++i) {
    const Access& a = site.accesses[i];
    TESSERA_CHECK(a.array >= 0 && a.array < static_cast<int>(site.arrays.size()));
    if (site.arrays[a.array].relaxed) continue;
    for (size_t j = i; j < site.accesses.size(); ++j) {
      const Access& b = site.accesses[j];
      if (b.array != a.array || !(a.write || b.write)) continue;
      std::vector<int64_t> ray;
      std::optional<DepVector> v =
          ComputeDependence(a.subscripts, b.subscripts, site.key_rank, &ray);
      if (!v || IsZeroVector(*v)) continue;
      deps.push_back({static_cast<int>(i), static_cast<int>(j), *v, ray});
    }
  }
  return deps;
}

Decision ChooseSchedule(const SiteModel& site) {
  Decision out;
  const int n = site.key_rank;
  TESSERA_CHECK(n >= 1);
  const std::vector<Dependence> deps = ComputeDependences(site);
  out.dependences = deps;

  std::optional<Schedule> best;
  // With the user's permission and --prefer-data-parallel, skip the serializable strategies.
  const bool dp_only = site.prefer_data_parallel && site.data_parallel_staleness.has_value();
  if (!dp_only && deps.empty()) {
    for (int s = 0; s < n; ++s) KeepCheaper(&best, Place(site, deps, Strategy::kIndependent, s, -1));
  }
  if (!best && !dp_only) {
    for (int s = 0; s < n; ++s) {
      if (Legal1D(deps, s)) KeepCheaper(&best, Place(site, deps, Strategy::k1D, s, -1));
    }
  }
  // A sparse space runs in storage order (docs/programming-model.md): a recurrence there is
  // kept only by blocks that hold both of its iterations (1D, which runs a block in storage
  // order); 2D steps and wavefronts order blocks by key, which is not the serial order.
  bool storage_ordered_recurrence = false;
  if (!site.serial_order_is_key_order) {
    for (const Dependence& d : deps) {
      for (const DepComponent& c : d.vector) storage_ordered_recurrence |= c.IsNonZeroConstant();
    }
  }
  if (!best && !dp_only && !storage_ordered_recurrence) {
    for (int s = 0; s < n; ++s) {
      for (int t = 0; t < n; ++t) {
        if (s != t && Legal2D(deps, s, t)) {
          KeepCheaper(&best, Place(site, deps, Strategy::k2D, s, t));
        }
      }
    }
  }
  if (!best && !dp_only && !storage_ordered_recurrence) {
    if (auto skew = FindSkew(deps, n)) {
      Schedule sched = Place(site, deps, Strategy::kUnimodular, -1, -1);
      sched.skew = *skew;
      best = std::move(sched);
    }
  }
  if (!best && site.data_parallel_staleness) {
    // Every write that takes part in a conflict must be additive, so that updates from
    // concurrent iterations commute and the servers can merge them.
    for (const Dependence& d : deps) {
      for (int idx : {d.first, d.second}) {
        const Access& a = site.accesses[idx];
        if (a.write && !a.additive) {
          ScheduleError err;
          err.kind = ScheduleError::Kind::kNonAdditive;
          err.blocking = d;
          err.nonadditive_access = idx;
          out.error = err;
          return out;
        }
      }
    }
    for (int s = 0; s < n; ++s) {
      Schedule sched = Place(site, deps, Strategy::kDataParallel, s, -1);
      sched.staleness = *site.data_parallel_staleness;
      KeepCheaper(&best, std::move(sched));
    }
  }
  if (best) {
    out.schedule = std::move(best);
  } else {
    out.error = PickBlocking(deps, site.accesses, n);
  }
  return out;
}

}  // namespace tessera::compiler
