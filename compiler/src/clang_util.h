// Small Clang AST helpers shared by the front end: what a type is in the programming model, which
// wrappers do not change the object an expression denotes, constant folding and type names.
//
// Private to tessera_compiler (compiled with -fno-rtti like Clang itself). Pure functions.
#ifndef TESSERA_COMPILER_SRC_CLANG_UTIL_H_
#define TESSERA_COMPILER_SRC_CLANG_UTIL_H_

#include <cstdint>
#include <optional>
#include <string>

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/Expr.h"

namespace tessera::compiler {

// The programming model's types that the walk treats specially (everything else is kOther).
enum class TypeKind {
  kOther,
  kDistArray,
  kRelaxedArray,
  kRowView,
  kRelaxedRowView,
  kKey,
  kSparseRowView,  // and its Iterator and SparseRowEntry: views of one sparse row
  kAccumulator,
};

// The class of `t` (through references and one level of pointer), or null.
const clang::CXXRecordDecl* RecordOf(clang::QualType t);
TypeKind Classify(clang::QualType t);
// DistArray, RelaxedArray and their row views: names through which elements are accessed.
bool IsArrayLike(TypeKind k);
// True if `d` is declared inside namespace ::tessera (at any depth).
bool InTesseraNamespace(const clang::Decl* d);
// True if `rd` is declared in namespace ::std (at any depth).
bool InStdNamespace(const clang::Decl* d);

// A cast from an integer type to one that cannot hold all its values (fewer bits, or the same
// width below 64 bits with the other signedness): key values may wrap through it.
bool IsNarrowingIntCast(const clang::CastExpr* cast, const clang::ASTContext& ctx);

// A class type that points somewhere (has operator* / operator-> / operator[]): an iterator, a
// span, a smart pointer.
bool IsIteratorLike(clang::QualType t);
// An iterator-like class whose pointee is const (const_iterator, __normal_iterator<const T*>).
bool IteratorToConst(clang::QualType t);

// Strips the wrappers that do not change which object (or integer value) an expression denotes:
// parentheses, temporaries, copies, and casts other than narrowing integer casts.
const clang::Expr* Strip(const clang::Expr* e, const clang::ASTContext& ctx);

// The template arguments <T, N> of a DistArray/RelaxedArray type.
bool ArrayTypeArgs(clang::QualType t, clang::QualType* elem, int* rank);

// Element type names independent of the platform's spelling: int64 rather than "long".
std::string TypeName(clang::QualType t, const clang::ASTContext& ctx);

std::optional<int64_t> EvalConstInt(const clang::Expr* e, const clang::ASTContext& ctx);

}  // namespace tessera::compiler

#endif  // TESSERA_COMPILER_SRC_CLANG_UTIL_H_
