// Where the array a name denotes was created, for binding schedules to live arrays at run time.
//
// The runtime knows arrays by the call that created them (internal::ArrayOrigin: the factory's
// std::source_location), not by name. For a name a parallel_for body uses, FindArrayOrigin returns
// that call's location when it can prove the name still denotes the array created there when the
// loop runs; otherwise the reason it cannot. Conservative by construction: only a variable that
// is initialized by a DistArray/RelaxedArray factory call (dense, filled, random, sparse, clone),
// or a reference to a field of a loader's result (FindLoaderFieldOrigin),
// and whose every use keeps its storage in place (member calls, element access, const references,
// by-reference lambda captures, parallel_for) gets an origin; an assignment, std::move/swap, a
// non-const reference passed to any other function, a taken address or a use tessc does not
// recognize gives none. It also says whether code outside parallel_for bodies uses the array
// other than by asking its shape and counts, reordering it, saving it unconditionally or reading
// and writing single elements in code every worker runs (`loop_only`). Without an origin the runtime treats the name as possibly any array of
// its type (docs/runtime.md, "Binding arrays").
//
// Private to tessera_compiler (compiled with -fno-rtti like Clang itself).
#ifndef TESSERA_COMPILER_SRC_ARRAY_ORIGIN_H_
#define TESSERA_COMPILER_SRC_ARRAY_ORIGIN_H_

#include <string>

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "tessera/compiler/strategy.h"

namespace tessera::compiler {

struct OriginResult {
  bool found = false;
  ArrayOrigin origin;   // when found
  std::string why_not;  // when not found
  // When found: whether every use of the variable is inside a parallel_for body (the lambda
  // passed to parallel_for, directly or through a variable used only that way) or is the
  // iteration space of a parallel_for. Code outside loops then never reads or writes the array,
  // so a runtime may keep it partitioned between loops. Otherwise `serial_use` names the first
  // use outside a loop.
  bool loop_only = false;
  std::string serial_use;
  // When loop_only: "line N", the first read or write of one element from code outside loops
  // (ElementAccess in array_origin.cc), which the runtime serves from the element's holder; empty
  // when there is none.
  std::string serial_access;
};

OriginResult FindArrayOrigin(const clang::ValueDecl* decl, clang::ASTContext& ctx);

// The same for a reference bound to a field of a loader's result (`auto& ratings =
// loaded->train;` with `auto loaded = tessera::load_triples(...)`): the loader's call with the
// field as `member`, when every use of the result is ok(), status() or a field, and every use of
// the field keeps its storage. Uses of the field outside loops count like uses of the reference.
OriginResult FindLoaderFieldOrigin(const clang::VarDecl* ref, clang::ASTContext& ctx);

// A call to tessera::save_array or tessera::save_array_text (bulk operations the runtime runs
// where a partitioned array lives, collectively: every worker must make the call).
bool IsSaveCall(const clang::CallExpr* call);

// Where the code containing `s` runs only under a condition that depends on the worker's rank
// (JobInfo::rank, read directly or through local variables initialized from it), in an if, ?:,
// && / || or loop condition of its function: that condition's location; invalid otherwise.
// FIXME: an early `return` on a rank test before `s` is not seen (the runtime reports that save).
clang::SourceLocation RankCondition(const clang::Stmt* s, clang::ASTContext& ctx);

}  // namespace tessera::compiler

#endif  // TESSERA_COMPILER_SRC_ARRAY_ORIGIN_H_
