// LoopSchedule: the part of tessc's per-site schedule JSON (docs/schedule-json.md, version 1) that
// an executor needs, parsed once and checked against the call it is attached to.
//
// Two kinds of failure, kept apart on purpose:
//   - ParseLoopSchedule: the text is not a schedule this runtime understands (malformed JSON, an
//     unknown version or strategy, a field of the wrong type);
//   - CheckScheduleFitsSite: a well-formed schedule that does not describe this call (another
//     iteration-space rank, partition dims out of range, a skew that is not unimodular or does not
//     carry the recorded dependences, a DataParallel permission that differs from the call's).
// Both mean the binary's embedded schedules do not match its source; executors turn them into a
// clear abort naming the call's file:line rather than run a possibly wrong schedule.
//
// Thread safety: pure functions; a LoopSchedule is an immutable value once built.
#ifndef TESSERA_RUNTIME_SRC_SCHEDULE_LOOP_SCHEDULE_H_
#define TESSERA_RUNTIME_SRC_SCHEDULE_LOOP_SCHEDULE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/common/status.h"
#include "tessera/executor.h"

namespace tessera::internal {

enum class LoopStrategy { kIndependent, k1D, k2D, kUnimodular, kDataParallel };

// "independent", "1d", "2d", "unimodular", "data_parallel" (tessc's spelling).
const char* LoopStrategyName(LoopStrategy s);

struct LoopSchedule {
  LoopStrategy strategy = LoopStrategy::kIndependent;
  int rank = 0;         // of the iteration space (its key)
  int space_dim = -1;   // key dim split over threads; all strategies but unimodular
  int time_dim = -1;    // 2d only: key dim whose blocks rotate
  // unimodular only: rank x rank, det +-1. Row 0 is the wavefront coordinate (every dependence
  // advances it by >= 1), row 1 (when rank > 1) the coordinate split over threads in a wavefront.
  std::vector<std::vector<int64_t>> skew;
  bool data_parallel_permitted = false;
  // Cross-iteration dependence vectors; nullopt components are tessc's "*" (any distance).
  std::vector<std::vector<std::optional<int64_t>>> dependences;
  // Parallel to `dependences`: the dependence's "ray" r when tessc recorded one (the dependences
  // are exactly t * r, e.g. a coupled subscript key[0] + 3 * key[1]), else empty. A wavefront
  // carries such a dependence when it advances along r oriented forward in key order.
  std::vector<std::vector<int64_t>> rays;
  // Names of non-relaxed arrays on the servers that the body writes: in shared memory these are
  // the plain DistArray writes a data-parallel site lets race (see docs/runtime.md).
  std::vector<std::string> shared_written_arrays;
  // What the body may write, for executors that copy changes between workers: every non-relaxed
  // array it writes, and whether it writes the iteration space (arrays[0] of the JSON).
  // `writes_unknown`: the list cannot be trusted to name every written array (a may-alias name,
  // an unknown element size, no array list), so any array may be written anywhere.
  struct WrittenArray {
    int element_bytes = 0;
    int rank = 0;
    // When the array's dim 0 is partitioned like key dim `row_key_dim` (placement local or
    // rotating, array_dim 0): a block with keys [a, b] on that dim writes only rows
    // [a + halo_lo, b + halo_hi]. -1: anywhere.
    int row_key_dim = -1;
    int64_t halo_lo = 0;
    int64_t halo_hi = 0;
  };
  std::vector<WrittenArray> written;
  bool space_written = true;
  bool writes_unknown = true;

  // Every array the body touches, as tessc listed them (the iteration space first), for
  // executors that bind names to live arrays (schedule/array_binding.h).
  struct Origin {
    std::string file;
    unsigned line = 0;
    unsigned column = 0;
    std::string member;
  };
  struct Array {
    std::string name;
    std::string placement;  // "local", "rotating", "servers" or "replicated"
    bool relaxed = false;
    bool may_alias = false;
    int element_bytes = 0;
    int rank = 0;
    int array_dim = -1;  // local/rotating: the array dim partitioned like key dim `key_dim`
    int key_dim = -1;
    int64_t halo_lo = 0;
    int64_t halo_hi = 0;
    bool read = false;
    bool write = false;
    // Where the array the name denotes was created, when tessc could prove it; otherwise
    // `origin_unknown` says why (from tessc, or "not recorded" for older schedules).
    std::optional<Origin> origin;
    std::string origin_unknown;
    // With an origin: no code outside loops touches the array (tessc's `loop_only`).
    bool loop_only = false;
    // Every access indexes dim 0 with exactly key[row_key_dim] (no offset), so a block of
    // that key dim touches only its own rows; -1 otherwise.
    int row_key_dim = -1;
  };
  std::vector<Array> arrays;
};

// REQUIRES: nothing; any text is accepted and judged.
Result<LoopSchedule> ParseLoopSchedule(std::string_view json);

// Checks that `schedule` can run the call `site` over `space` and preserves its dependences.
Status CheckScheduleFitsSite(const LoopSchedule& schedule, const LoopSite& site,
                             const ArrayBase& space);

// The schedule of `site` (REQUIRES: site.schedule != nullptr), parsed and checked against the
// call; either failure aborts naming the call's file:line, the reason and the fix (rebuild).
LoopSchedule ScheduleForSiteOrDie(const LoopSite& site, const ArrayBase& space);

// The reasons of a tessc entry whose strategy is "serial" (tessc chose to run the site serially),
// each as tessc's warning gives it; nullopt for any other text (a schedule, or not JSON at all).
std::optional<std::vector<std::string>> TesscSerialReasons(std::string_view json);

// tessc's reasons as one text: one as it is, several numbered ("(1) ... (2) ...", since a reason
// may itself hold ';' or ','); "" for none.
std::string JoinSerialReasons(const std::vector<std::string>& reasons);

// Why `site` has no schedule, for the line an executor logs when it runs the site without one:
// "has no schedule from tessc (...)" naming site.no_schedule, with tessc's reasons when tessc
// chose to run the site serially. REQUIRES: site.schedule == nullptr.
std::string NoScheduleReason(const LoopSite& site);

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_SCHEDULE_LOOP_SCHEDULE_H_
