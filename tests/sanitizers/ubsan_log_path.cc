// Linked into every executable of a g++ ASan + UBSan build (cmake/TesseraOptions.cmake) so that
// UBSan's reports honour UBSAN_OPTIONS's log_path, as ASan's do.
//
// g++ links two sanitizer runtimes, libasan and libubsan, each with its own copy of the report
// file. Both export __sanitizer_set_report_path, and libasan comes first in the lookup order
// (ASan requires it), so libubsan's own call that applies log_path binds to libasan's: ASan's
// report file gets UBSan's path and UBSan's stays stderr. Looking the function up in libubsan
// itself (dlsym on its handle searches that library first) sets UBSan's.
#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace {

// The value of `log_path` in a sanitizer options string (flags separated by ':', ',' or
// whitespace, as the runtimes parse them), or "" if it is not set.
std::string LogPathOption(const char* options) {
  if (options == nullptr) return "";
  const std::string s(options);
  const std::string kSeparators = ": ,\t\n\r";
  std::string path;
  for (size_t start = 0; start < s.size();) {
    size_t end = s.find_first_of(kSeparators, start);
    if (end == std::string::npos) end = s.size();
    const std::string flag = s.substr(start, end - start);
    if (flag.rfind("log_path=", 0) == 0) path = flag.substr(9);  // the last one wins
    start = end + 1;
  }
  if (path.size() >= 2 && (path.front() == '"' || path.front() == '\'') &&
      path.back() == path.front()) {
    path = path.substr(1, path.size() - 2);
  }
  return path;
}

__attribute__((constructor)) void RouteUbsanReports() {
  const std::string path = LogPathOption(std::getenv("UBSAN_OPTIONS"));
  if (path.empty()) return;
  void* ubsan = dlopen("libubsan.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (ubsan == nullptr) return;  // UBSan linked statically or not at all: nothing to route
  auto* set_path =
      reinterpret_cast<void (*)(const char*)>(dlsym(ubsan, "__sanitizer_set_report_path"));
  if (set_path != nullptr) set_path(path.c_str());
  dlclose(ubsan);
}

}  // namespace
