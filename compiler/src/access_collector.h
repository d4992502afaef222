// The Clang side of the analysis: from one parallel_for call to a SiteModel.
//
// Private to tessera_compiler (compiled with -fno-rtti like Clang itself).
#ifndef TESSERA_COMPILER_SRC_ACCESS_COLLECTOR_H_
#define TESSERA_COMPILER_SRC_ACCESS_COLLECTOR_H_

#include <map>
#include <string>
#include <vector>

#include "clang/AST/ASTContext.h"
#include "clang/AST/Expr.h"
#include "tessera/compiler/schedule_json.h"

namespace tessera::compiler {

// Calls in the main file, by callee, so that the alias check of reference parameters can look at
// every call of the function that contains a parallel_for.
using CallIndex = std::map<const clang::FunctionDecl*, std::vector<const clang::CallExpr*>>;

struct CollectedSite {
  SiteResult result;
  bool analyzable = false;            // false: the body could not be seen (see `why_not`)
  std::string why_not;
  std::vector<clang::SourceLocation> access_locs;  // parallel to result.model.accesses
  // For accesses inside a walked helper: the call in the loop body that leads there (invalid
  // for accesses written in the body itself). Parallel to access_locs.
  std::vector<clang::SourceLocation> access_via;
  // Conservative notes with the place they refer to.
  std::vector<std::pair<clang::SourceLocation, std::string>> notes;
  // What the body may reach that tessc cannot model (shared state it writes, code it cannot see):
  // the site must run serially. Each names the expression, why, and what the user can do.
  std::vector<std::pair<clang::SourceLocation, std::string>> serial_reasons;
};

// Collects the accesses of the parallel_for `call`, made inside `enclosing` (may be null).
// REQUIRES: `call` calls tessera::parallel_for and is not type-dependent.
CollectedSite CollectSite(clang::ASTContext& ctx, const clang::CallExpr* call,
                          const clang::FunctionDecl* enclosing, const CallIndex& calls);

// True if `call` calls tessera::parallel_for.
bool IsParallelForCall(const clang::CallExpr* call);

}  // namespace tessera::compiler

#endif  // TESSERA_COMPILER_SRC_ACCESS_COLLECTOR_H_
