// The table of schedules tessc embedded in the program.
//
// This is the one piece of process-wide state in the runtime, and it is deliberately limited:
// it is filled only during static initialization (by tessc-generated code, before main), it only
// ever appends pointers to constant data, and after main starts it is read-only. Everything that
// changes at run time hangs off a Context.
#include "tessera/schedule.h"

#include <vector>

#include "internal/schedule_table.h"

namespace tessera {
namespace {

std::vector<internal::ScheduleRange>& Table() {
  // Function-local so that registration from other translation units' static initializers works
  // regardless of initialization order.
  static std::vector<internal::ScheduleRange> table;
  return table;
}

}  // namespace

void RegisterEmbeddedSchedules(const EmbeddedSchedule* begin, const EmbeddedSchedule* end) {
  if (begin != nullptr && begin < end) Table().push_back({begin, end});
}

namespace internal {

std::vector<const EmbeddedSchedule*> AllEmbeddedSchedules() {
  std::vector<const EmbeddedSchedule*> all;
  for (const ScheduleRange& r : Table()) {
    for (const EmbeddedSchedule* e = r.begin; e != r.end; ++e) all.push_back(e);
  }
  return all;
}

bool SameSourceFile(std::string_view a, std::string_view b) {
  if (a == b) return true;
  if (a.size() < b.size()) std::swap(a, b);
  // b must be a suffix of a that starts right after a '/'.
  if (b.empty() || !a.ends_with(b)) return false;
  return a[a.size() - b.size() - 1] == '/';
}

ScheduleMatch MatchSchedule(const std::vector<const EmbeddedSchedule*>& entries,
                            std::string_view file, unsigned line, unsigned column) {
  std::vector<const EmbeddedSchedule*> candidates;
  for (const EmbeddedSchedule* e : entries) {
    if (e->line == line && e->file != nullptr && SameSourceFile(e->file, file)) {
      candidates.push_back(e);
    }
  }
  if (candidates.size() > 1) {
    std::vector<const EmbeddedSchedule*> narrowed;
    for (const EmbeddedSchedule* e : candidates) {
      if (e->column != 0 && e->column == column) narrowed.push_back(e);
    }
    if (!narrowed.empty()) candidates.swap(narrowed);
  }
  ScheduleMatch m;
  m.count = candidates.size();
  if (candidates.size() == 1) m.schedule = candidates[0];
  return m;
}

}  // namespace internal
}  // namespace tessera
