// The written-down list of library code a parallel_for body may call (docs/tessc.md, "What a body
// may call"). tessc does not walk the bodies of library functions, so it trusts a library function
// only if it is on this list: known to touch nothing but its arguments (the objects it is called
// on, the values, references, pointers and iterator ranges it is given) and to call back only
// the callables it is given, synchronously, on the calling thread. What it may write through its
// arguments is still checked like a write in the body. Everything else -- hidden state (a global
// generator, the clock, the environment), I/O, locks, threads, atomics read back, arrays created
// or talked about collectively -- is refused: the site runs serially, with a note naming the
// function and the fix.
//
// Private to tessera_compiler (compiled with -fno-rtti like Clang itself). Pure functions.
#ifndef TESSERA_COMPILER_SRC_KNOWN_LIBRARY_H_
#define TESSERA_COMPILER_SRC_KNOWN_LIBRARY_H_

#include <string>

#include "clang/AST/DeclCXX.h"
#include "clang/Basic/SourceManager.h"

namespace tessera::compiler {

struct LibraryVerdict {
  bool known = false;       // on the list: touches only its arguments
  bool reads_only = false;  // an algorithm that only reads the ranges it is given
  std::string why;          // !known: why not, and what to do instead (one sentence each)
};

// True for a function or class declared in a system header or in namespace std / __gnu_cxx:
// library code, which tessc never walks.
bool IsLibraryDecl(const clang::Decl* d, const clang::SourceManager& sm);

// True for a declaration of the programming model itself: in namespace tessera and declared in
// one of Tessera's public headers (a file under an `include/tessera/` directory). A program's own
// code in namespace tessera (a test's helpers, say) is not: tessc walks it like any other.
bool IsProgrammingModelDecl(const clang::Decl* d, const clang::SourceManager& sm);

// A call to library function `fd` (a free function, a static or non-static member of a library
// class, an operator, or the operator() of a library function object such as a std::ranges
// algorithm). REQUIRES: IsLibraryDecl(fd).
LibraryVerdict ClassifyLibraryFunction(const clang::FunctionDecl* fd);

// An object of library class `rd` constructed (or destroyed) in a body.
LibraryVerdict ClassifyLibraryClass(const clang::CXXRecordDecl* rd);

// A call into the programming model (namespace ::tessera) that is not an element access through
// an array or view (those are modelled one by one in body_calls.cc).
LibraryVerdict ClassifyTesseraFunction(const clang::FunctionDecl* fd);

// The name a std::ranges algorithm object's class stands for (`__for_each_fn` -> "for_each");
// empty for other classes.
std::string RangesAlgorithmName(const clang::CXXRecordDecl* rd);

}  // namespace tessera::compiler

#endif  // TESSERA_COMPILER_SRC_KNOWN_LIBRARY_H_
