// Binding a schedule's array names to the live arrays of the running program.
//
// tessc names the arrays a parallel_for body touches by their names in the source; names do not
// exist at run time. Where tessc can prove which creation a name denotes -- the factory or loader
// call whose array the variable still holds when the loop runs -- it records that call's location
// (docs/schedule-json.md, `origin`), and every array records where it was created
// (internal::ArrayOrigin). A name is bound when exactly one live array has its origin (file by the
// schedule lookup's rule, line, loader field; the column only breaks ties) and agrees on element
// size, rank and kind. Anything else leaves the name unbound, with the reason: executors must then
// treat every array it could be as possibly touched, exactly as before binding existed.
//
// Thread safety: pure function of its arguments.
#ifndef TESSERA_RUNTIME_SRC_SCHEDULE_ARRAY_BINDING_H_
#define TESSERA_RUNTIME_SRC_SCHEDULE_ARRAY_BINDING_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "schedule/loop_schedule.h"
#include "tessera/executor.h"

namespace tessera::internal {

struct SiteBinding {
  // Parallel to LoopSchedule::arrays: the live array each name denotes, or nullptr.
  std::vector<ArrayBase*> arrays;
  // Parallel to LoopSchedule::arrays: why a name is unbound (empty when bound).
  std::vector<std::string> why_unbound;

  // Every name that is not a RelaxedArray is bound.
  bool complete(const LoopSchedule& s) const;
  // The schedule's entry of a live array (the first name bound to it), or -1.
  int IndexOf(const ArrayBase* a) const;
};

// REQUIRES: `space` is the call's iteration space, and `live` every live array of the Context.
// The iteration space (the schedule's first array) is always bound to `space`.
SiteBinding BindArrays(const LoopSchedule& s, const ArrayBase& space,
                       const std::map<int64_t, ArrayBase*>& live);

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_SCHEDULE_ARRAY_BINDING_H_
