// Lookup of embedded schedules (the rule is documented in tessera/schedule.h).
#ifndef TESSERA_RUNTIME_SRC_INTERNAL_SCHEDULE_TABLE_H_
#define TESSERA_RUNTIME_SRC_INTERNAL_SCHEDULE_TABLE_H_

#include <cstddef>
#include <string_view>
#include <vector>

#include "tessera/schedule.h"

namespace tessera::internal {

struct ScheduleRange {
  const EmbeddedSchedule* begin;
  const EmbeddedSchedule* end;
};

// Every registered entry, in registration order.
std::vector<const EmbeddedSchedule*> AllEmbeddedSchedules();

// Equal paths, or one a suffix of the other starting right after a '/'.
bool SameSourceFile(std::string_view a, std::string_view b);

struct ScheduleMatch {
  const EmbeddedSchedule* schedule = nullptr;  // set when exactly one entry matched
  size_t count = 0;                            // entries left after the column tie-break
};
ScheduleMatch MatchSchedule(const std::vector<const EmbeddedSchedule*>& entries,
                            std::string_view file, unsigned line, unsigned column);

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_INTERNAL_SCHEDULE_TABLE_H_
