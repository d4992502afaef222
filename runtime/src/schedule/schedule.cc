// The table of schedules tessc embedded in the program.
//
// This is the one piece of process-wide state in the runtime, and it is deliberately limited:
// it is filled only during static initialization (by tessc-generated code, before main), it only
// ever appends pointers to constant data, and after main starts it is read-only. Everything that
// changes at run time hangs off a Context.
#include "tessera/schedule.h"

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "schedule/schedule_table.h"

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

namespace {

// Equal, or the shorter one is a suffix of the longer starting right after a '/'.
bool SameSpelling(std::string_view a, std::string_view b) {
  if (a == b) return true;
  if (a.size() < b.size()) std::swap(a, b);
  if (b.empty() || !a.ends_with(b)) return false;
  return a[a.size() - b.size() - 1] == '/';
}

bool SameSpellings(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (const std::string& x : a) {
    for (const std::string& y : b) {
      if (SameSpelling(x, y)) return true;
    }
  }
  return false;
}

}  // namespace

std::vector<std::string> SourcePathSpellings(std::string_view path) {
  namespace fs = std::filesystem;
  std::vector<std::string> spellings;
  if (path.empty()) return spellings;
  fs::path lexical = fs::path(path).lexically_normal();
  if (lexical.is_relative()) {
    fs::path rest;
    bool leading = true;
    for (const fs::path& part : lexical) {
      if (leading && part == "..") continue;
      leading = false;
      rest /= part;
    }
    lexical = rest;
  }
  if (lexical.empty() || lexical == ".") return spellings;
  spellings.push_back(lexical.string());
  if (lexical.is_absolute()) {
    std::error_code ec;
    const fs::path canonical = fs::canonical(lexical, ec);
    if (!ec && canonical != lexical) spellings.push_back(canonical.string());
  }
  return spellings;
}

bool SameSourceFile(std::string_view a, std::string_view b) {
  if (a == b) return !a.empty();
  return SameSpellings(SourcePathSpellings(a), SourcePathSpellings(b));
}

ScheduleMatch MatchSchedule(const std::vector<const EmbeddedSchedule*>& entries,
                            std::string_view file, unsigned line, unsigned column) {
  // Spellings are computed only for entries on the right line: the others cost a comparison.
  const std::vector<std::string> site = SourcePathSpellings(file);
  std::vector<const EmbeddedSchedule*> candidates;
  for (const EmbeddedSchedule* e : entries) {
    if (e->line == line && e->file != nullptr &&
        ((!file.empty() && std::string_view(e->file) == file) ||
         SameSpellings(SourcePathSpellings(e->file), site))) {
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
