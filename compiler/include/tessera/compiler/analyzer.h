// tessc's front end: runs Clang 16 over translation units and analyses every parallel_for.
//
// Diagnostics go through each translation unit's clang DiagnosticsEngine (so they print in
// clang's format and `-Xclang -verify` can check them): a remark per analysed site, notes for
// what tessc had to treat conservatively, and an error (with notes) for a loop that no strategy
// can run.
#ifndef TESSERA_COMPILER_ANALYZER_H_
#define TESSERA_COMPILER_ANALYZER_H_

#include <string>
#include <vector>

#include "tessera/common/status.h"
#include "tessera/compiler/schedule_json.h"

namespace tessera::compiler {

struct AnalyzerOptions {
  // Source files to analyse. REQUIRES: non-empty.
  std::vector<std::string> sources;
  // Directory holding compile_commands.json. Default: empty, meaning `fixed_args` is the whole
  // command line (after `--` on tessc's), or the database is searched upward from the sources.
  std::string build_path;
  // Compiler arguments given after `--`.
  std::vector<std::string> fixed_args;
  bool have_fixed_args = false;
  // Give sites that carry DataParallel a data_parallel schedule even where a serializable one is
  // legal (SiteModel::prefer_data_parallel). Default: false.
  bool prefer_data_parallel = false;
};

struct AnalysisResult {
  std::vector<SiteResult> sites;  // every analysed site with a schedule, in source order
  std::vector<SerialSite> serial_sites;  // every site tessc runs serially, in source order
  int sites_total = 0;            // including sites that failed
  bool ok = false;                // no Clang error and no site error in any translation unit
  std::vector<std::string> dependencies;  // every file the translation units read (for depfiles)
};

// Runs the analysis. The Status is an error only when tessc cannot start (no compilation
// database); failures inside a translation unit are diagnostics and make `ok` false.
Result<AnalysisResult> Analyze(const AnalyzerOptions& options);

}  // namespace tessera::compiler

#endif  // TESSERA_COMPILER_ANALYZER_H_
