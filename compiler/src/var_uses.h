// Whether a variable holding a DistArray keeps the array its initializer made: no use of it
// could put another array in its place (an assignment, std::swap, std::move, a non-const
// reference handed out). tessc's facts about an array's kind (dense, made by permuted) hold only
// for such a variable.
#ifndef TESSERA_COMPILER_SRC_VAR_USES_H_
#define TESSERA_COMPILER_SRC_VAR_USES_H_

#include <string>

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"

namespace tessera::compiler {

// True if every use of `vd` (in its function, or in the whole translation unit for a variable
// outside functions) is the object of a member call or element access (operator(), at, row,
// ...), a lambda capture, the iteration space of a parallel_for, a const reference, or a
// non-const reference parameter of a function defined here that keeps it in turn. Otherwise
// `why` names the first other use, for a note.
bool KeepsItsArray(const clang::VarDecl* vd, clang::ASTContext& ctx, std::string* why,
                   int depth = 0);

// True if `fn` is only ever called directly by name: no use of it as a value (its address taken,
// a reference bound, passed to std::invoke or a template), through which calls tessc does not
// index may pass any arguments. Otherwise `why` names the first such use.
bool CalledOnlyDirectly(const clang::FunctionDecl* fn, clang::ASTContext& ctx, std::string* why);

}  // namespace tessera::compiler

#endif  // TESSERA_COMPILER_SRC_VAR_USES_H_
