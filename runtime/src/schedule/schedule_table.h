// Lookup of embedded schedules (the rule is documented in tessera/schedule.h).
#ifndef TESSERA_RUNTIME_SRC_SCHEDULE_SCHEDULE_TABLE_H_
#define TESSERA_RUNTIME_SRC_SCHEDULE_SCHEDULE_TABLE_H_

#include <cstddef>
#include <string>
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

// The spellings a source path is compared under: its lexical normal form ("." and "dir/.."
// removed, "//" collapsed; a relative path loses its leading "../" components, since what they
// climb out of is unknown at run time), and, for an absolute path that exists, also its
// canonical form (symlinks resolved). Relative paths are never resolved against the current
// directory, which at run time is not the compiler's.
std::vector<std::string> SourcePathSpellings(std::string_view path);

// Whether a and b name the same file: some spelling of one equals some spelling of the other, or
// is a suffix of it that starts right after a '/'.
bool SameSourceFile(std::string_view a, std::string_view b);

struct ScheduleMatch {
  const EmbeddedSchedule* schedule = nullptr;  // set when exactly one entry matched
  size_t count = 0;                            // entries left after the column tie-break
};
ScheduleMatch MatchSchedule(const std::vector<const EmbeddedSchedule*>& entries,
                            std::string_view file, unsigned line, unsigned column);

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_SCHEDULE_SCHEDULE_TABLE_H_
