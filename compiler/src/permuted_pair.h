// Two sparse arrays that hold the same keys under a permutation by construction, so that a loop
// over one may look the other up at the permuted key and always find a stored element:
//
//   auto Y = X.permuted({1, 0, 2});
//   parallel_for(X, [&](const Key<3>& key, int64_t& v) { Y(key[1], key[0], key[2]) = v; });
//
// A keyed lookup into a sparse array is unsafe on executor threads only when it may insert (a
// non-const operator() or at() of a key the array does not store); here every key asked for is
// stored, because Y was made from X's keys and, as checked, neither array can gain a key afterwards.
#ifndef TESSERA_COMPILER_SRC_PERMUTED_PAIR_H_
#define TESSERA_COMPILER_SRC_PERMUTED_PAIR_H_

#include <string>
#include <vector>

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"

namespace tessera::compiler {

// True if a loop over the array variable `space` may look `target` up at the key
// (k[perm[0]], ..., k[perm[N-1]]) of each visited key k and always find a stored element:
//   - both are non-reference local variables of one function, one initialized as
//     `other.permuted({...})` of the other, with the permutation this lookup takes;
//   - after that initialization (and in any lambda of the function) each of them is only the
//     object of a member that keeps its keys (nnz, find, sparse_row, shuffle, assign_permuted, ...),
//     a const access, a parallel_for's iteration space, a const reference argument, or a keyed
//     access inside a parallel_for body over one of the two at the loop's own key (permuted as the
//     pair is, when the loop is over the other one).
// Otherwise `why` says, for a note, what failed.
bool PermutedPairCovers(const clang::ValueDecl* space, const clang::ValueDecl* target,
                        const std::vector<int>& perm, clang::ASTContext& ctx, std::string* why);

}  // namespace tessera::compiler

#endif  // TESSERA_COMPILER_SRC_PERMUTED_PAIR_H_
