// Schedules that tessc embeds into a program, and how the runtime finds the one of a call site.
//
// tessc generates a translation unit per program that calls RegisterEmbeddedSchedules() during
// static initialization with one entry per parallel_for call site it analyzed: a schedule, or for
// a site tessc chose to run serially an entry whose strategy is "serial" (with its reasons). The
// runtime never requires an entry: without one (program not built with tessc), or with a serial
// one, a site runs unpartitioned, and a parallel or distributed run says so (and why) in a
// warning, once per site.
//
// Lookup rule (see Context::FindSchedule): a parallel_for call at std::source_location
// (file F, line L, column C) matches an entry E when
//   1. E.line == L, and
//   2. E.file and F name the same file. Both are compared under every spelling of theirs: the
//      lexical normal form ("./", "dir/../" and "//" removed; a relative path also loses its
//      leading "../", since the directory it climbed out of is unknown at run time) and, for an
//      absolute path that exists, the canonical path (symlinks resolved). They match when a
//      spelling of one equals a spelling of the other or is a suffix of it that starts right
//      after a '/' (so "apps/mf/mf.cc" and "../apps/mf/./mf.cc" match "/home/ada/tessera/apps/mf/mf.cc":
//      compilers and build systems disagree on how to spell a source path).
// When several entries match, those whose column equals C are kept (column 0 in an entry means
// "unknown" and never narrows); if more than one entry is still left the site is ambiguous and
// is reported as such. Columns are only a tie-break because GCC and Clang put the column of a
// defaulted std::source_location::current() argument at different places of the call.
//
// Thread safety: RegisterEmbeddedSchedules may only be called during static initialization (before
// main); afterwards the table is immutable and may be read from any thread.
#ifndef TESSERA_SCHEDULE_H_
#define TESSERA_SCHEDULE_H_

namespace tessera {

struct EmbeddedSchedule {
  const char* file;
  unsigned line;
  unsigned column;
  const char* json;
};

// Called from tessc-generated code during static initialization; the array must outlive the program.
void RegisterEmbeddedSchedules(const EmbeddedSchedule* begin, const EmbeddedSchedule* end);

}  // namespace tessera

#endif  // TESSERA_SCHEDULE_H_
