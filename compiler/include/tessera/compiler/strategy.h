// The strategy chooser: from the accesses of one parallel_for site to a schedule or an error.
//
// Input is a SiteModel, a front-end independent description of the loop body (the Clang front end
// in analyzer.cc builds it; unit tests build it by hand). Output is a Decision: either a Schedule
// (strategy, partition dims, per-array placement, cost) or a ScheduleError naming the dependence
// that rules out every legal strategy.
//
// Semantics the chooser preserves (see docs/tessc.md): iterations run in key order in serial mode.
// A constant-distance dependence (every component known) is a recurrence whose direction must be
// kept. A dependence with a `*` component is a conflict between iterations whose relative order the
// program does not fix (e.g. SGD updates of one row by many samples): a schedule must not run the
// two iterations concurrently, but may run them in any order.
//
// Thread safety: pure functions.
#ifndef TESSERA_COMPILER_STRATEGY_H_
#define TESSERA_COMPILER_STRATEGY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/compiler/affine.h"
#include "tessera/compiler/dependence.h"

namespace tessera::compiler {

// Where an array was created: the factory call's first token (see compiler/src/array_origin.h).
struct ArrayOrigin {
  std::string file;
  unsigned line = 0;
  unsigned column = 0;
  std::string member;  // the loader result's field, e.g. "train"; empty for factories
};

struct ArrayInfo {
  std::string name;
  bool relaxed = false;        // a RelaxedArray: excluded from dependence analysis
  std::string element_type;    // spelled as in the source, e.g. "float"
  int element_bytes = 0;       // 0 when unknown
  int rank = 0;
  std::optional<int> staleness;  // relaxed only: the table's staleness when tessc could see it
  // A name tessc could not resolve to one array (it may be any array of its type); its accesses
  // are also counted against every array of the same type.
  bool may_alias = false;
  // A name of a row view (not an array): it may view the storage of an array of any rank.
  bool view = false;
  // Where the array the name denotes was created, when tessc can prove it (binding at run time);
  // otherwise why not.
  std::optional<ArrayOrigin> origin;
  std::string origin_unknown;
  // With an origin: no code outside parallel_for bodies uses the array (see array_origin.h);
  // otherwise the first use outside ("line N").
  bool loop_only = false;
  std::string serial_use;
  // When loop_only: the first single-element read or write outside loops ("line N"), which a
  // distributed job serves from the element's holder; empty when there is none.
  std::string serial_access;
};

struct Access {
  int array = 0;                    // index into SiteModel::arrays
  std::vector<Affine> subscripts;   // one per array dim
  bool read = false;
  bool write = false;
  bool additive = false;            // every write of this access is `+=`, `-=`, `++`, `--` or add()
  // Why the front end had to be conservative about this access (empty when it saw everything).
  std::string conservative_reason;
  bool alias_copy = false;          // a copy of another name's access (names that may alias)
  unsigned line = 0, column = 0;    // for diagnostics and JSON only
};

struct SiteModel {
  std::string space_array;
  int key_rank = 0;
  std::optional<int> data_parallel_staleness;  // set iff the site carries DataParallel permission
  // Sites that carry DataParallel get a data_parallel schedule even when a serializable one
  // (independent, 1d, 2d, unimodular) is legal; sites without the permission are unaffected.
  // tessc --prefer-data-parallel. Default: false (the permission only allows data-parallel).
  bool prefer_data_parallel = false;
  // Whether the loop's serial order is increasing key order: true for a dense space (row-major).
  // A sparse space runs in storage order, which need not be key order: a dependence with a
  // non-zero distance then is kept only by 1D blocks (run in storage order); 2D steps and
  // wavefronts, which order blocks by key, are not legal. Default: true.
  bool serial_order_is_key_order = true;
  std::vector<ArrayInfo> arrays;
  std::vector<Access> accesses;
};

enum class Strategy { kIndependent, k1D, k2D, kUnimodular, kDataParallel };
const char* StrategyName(Strategy s);  // "independent", "1d", "2d", "unimodular", "data_parallel"

enum class Placement { kLocal, kRotating, kServers, kReplicated };
const char* PlacementName(Placement p);  // "local", "rotating", "servers", "replicated"

struct Dependence {
  int first = 0, second = 0;  // access indices; first <= second
  DepVector vector;           // iteration(second) - iteration(first)
  std::vector<int64_t> ray;   // non-empty: the dependences are exactly t * ray (see ComputeDependence)
};

struct ArrayPlacement {
  Placement placement = Placement::kReplicated;
  int array_dim = -1;         // local/rotating: the array dim partitioned with the key dim
  int key_dim = -1;           // local: the space dim; rotating: the time dim
  int64_t halo_lo = 0, halo_hi = 0;  // constant offsets seen on array_dim (stencils)
};

struct Schedule {
  Strategy strategy = Strategy::kIndependent;
  int space_dim = -1;  // key dim split over workers (all strategies but unimodular)
  int time_dim = -1;   // 2d only: key dim whose blocks rotate
  // unimodular only: key_rank x key_rank, det +-1. Row 0 is the wavefront (time) coordinate,
  // row 1 the coordinate split over workers inside a wavefront.
  std::vector<std::vector<int64_t>> skew;
  int staleness = 0;   // data_parallel only
  std::vector<ArrayPlacement> placements;  // parallel to SiteModel::arrays
  std::vector<Dependence> dependences;     // all cross-iteration dependences
  int64_t cost = 0;
};

struct ScheduleError {
  enum class Kind {
    kConflict,        // a dependence no strategy can honour
    kNonAdditive,     // data-parallel permitted, but a conflicting write is not additive
  };
  Kind kind = Kind::kConflict;
  Dependence blocking;
  int nonadditive_access = -1;  // kNonAdditive: the offending write
};

struct Decision {
  std::optional<Schedule> schedule;
  std::optional<ScheduleError> error;
  std::vector<Dependence> dependences;
};

// All cross-iteration dependences between accesses of non-relaxed arrays (pairs with a write, an
// access with itself included). Zero vectors (same iteration only) are dropped.
std::vector<Dependence> ComputeDependences(const SiteModel& site);

// Picks the first legal strategy in the order independent, 1d, 2d, unimodular, data_parallel
// (only data_parallel for a permitted site with `prefer_data_parallel`); inside one strategy the
// cost model (docs/tessc.md) picks the dims.
Decision ChooseSchedule(const SiteModel& site);

}  // namespace tessera::compiler

#endif  // TESSERA_COMPILER_STRATEGY_H_
