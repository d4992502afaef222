#include "known_library.h"

#include "llvm/Support/Path.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "clang_util.h"

namespace tessera::compiler {

using namespace clang;  // NOLINT(build/namespaces): the file is all Clang AST code

namespace {

using Names = std::set<std::string_view>;

// <cmath>, <cstdlib> and <numeric> arithmetic on values: a function of its arguments only (errno,
// which some of them set, is thread-local). lgamma also stores the sign of Γ in the global
// `signgam` (glibc); tessc allows it because no Tessera program reads `signgam` (a read of it in
// a body is a read of global state that the library writes -- documented in docs/tessc.md).
// frexp, modf, remquo write through their pointer argument, which is checked like any write.
const Names& MathFunctions() {
  static const Names k = {
      "abs", "labs", "llabs", "fabs", "div", "ldiv", "lldiv", "sqrt", "cbrt", "exp", "exp2",
      "expm1", "log", "log2", "log10", "log1p", "logb", "ilogb", "pow", "hypot", "sin", "cos",
      "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
      "erf", "erfc", "tgamma", "lgamma", "ceil", "floor", "trunc", "round", "lround", "llround",
      "nearbyint", "rint", "lrint", "llrint", "fmod", "remainder", "remquo", "fma", "fmin", "fmax",
      "fdim", "copysign", "nextafter", "nexttoward", "frexp", "ldexp", "modf", "scalbn", "scalbln",
      "isnan", "isinf", "isfinite", "isnormal", "signbit", "fpclassify", "isgreater",
      "isgreaterequal", "isless", "islessequal", "islessgreater", "isunordered", "nan", "gcd",
      "lcm", "midpoint", "lerp", "assoc_laguerre", "beta", "expint", "riemann_zeta"};
  return k;
}

// <algorithm> / <numeric> / <iterator> / std::ranges algorithms that only read the ranges they are
// given (callbacks they call are walked with their parameters bound to the ranges' elements).
const Names& ReadingAlgorithms() {
  static const Names k = {
      "accumulate", "inner_product", "reduce", "transform_reduce", "max_element", "min_element",
      "minmax_element", "find", "find_if", "find_if_not", "find_end", "find_first_of",
      "adjacent_find", "count", "count_if", "equal", "all_of", "any_of", "none_of", "for_each",
      "for_each_n", "lower_bound", "upper_bound", "binary_search", "equal_range", "is_sorted",
      "is_sorted_until", "is_partitioned", "partition_point", "is_heap", "is_heap_until",
      "is_permutation", "mismatch", "search", "search_n", "lexicographical_compare", "includes",
      "max", "min", "minmax", "clamp", "distance", "size", "ssize", "empty", "contains",
      "starts_with", "ends_with", "fold_left", "fold_right"};
  return k;
}

// Algorithms that write through the iterators or ranges they are given (and nothing else).
// random_shuffle is not here: it draws from std::rand's hidden state.
const Names& WritingAlgorithms() {
  static const Names k = {
      "copy", "copy_if", "copy_n", "copy_backward", "move", "move_backward", "fill", "fill_n",
      "transform", "generate", "generate_n", "iota", "partial_sum", "exclusive_scan",
      "inclusive_scan", "transform_exclusive_scan", "transform_inclusive_scan",
      "adjacent_difference", "sort", "stable_sort", "partial_sort", "partial_sort_copy",
      "nth_element", "reverse", "reverse_copy", "rotate", "rotate_copy", "swap_ranges",
      "replace", "replace_if", "replace_copy", "replace_copy_if", "remove", "remove_if",
      "remove_copy", "remove_copy_if", "unique", "unique_copy", "partition", "stable_partition",
      "partition_copy", "merge", "inplace_merge", "set_union", "set_intersection",
      "set_difference", "set_symmetric_difference", "push_heap", "pop_heap", "make_heap",
      "sort_heap", "next_permutation", "prev_permutation", "shuffle", "sample", "iter_swap",
      "swap", "exchange", "advance"};
  return k;
}

// Utilities that return (a part of, a view of, an iterator into) their arguments or compute
// from their values: <utility>, <tuple>, <iterator>, <bit>, <string> conversions, <cstring>.
const Names& Utilities() {
  static const Names k = {
      "forward", "as_const", "get", "tie", "make_pair", "make_tuple", "forward_as_tuple",
      "apply", "invoke", "declval", "to_underlying", "addressof", "begin", "end", "cbegin",
      "cend", "rbegin", "rend", "crbegin", "crend", "data", "next", "prev", "make_move_iterator",
      "make_reverse_iterator", "bit_cast", "popcount", "countl_zero", "countl_one",
      "countr_zero", "countr_one", "bit_width", "bit_floor", "bit_ceil", "has_single_bit",
      "rotl", "rotr", "byteswap", "to_string", "stoi", "stol", "stoll", "stoul", "stoull",
      "stof", "stod", "stold", "memcpy", "memmove", "memset", "memcmp", "strlen", "strcmp",
      "strncmp", "strchr", "hash", "make_unique", "construct_at", "destroy_at", "launder",
      "assume_aligned"};
  return k;
}

// GCC/Clang builtins a body may name directly (hints and bit tricks, no state).
const Names& Builtins() {
  static const Names k = {
      "__builtin_expect", "__builtin_assume", "__builtin_unreachable", "__builtin_prefetch",
      "__builtin_popcount", "__builtin_popcountl", "__builtin_popcountll", "__builtin_clz",
      "__builtin_clzl", "__builtin_clzll", "__builtin_ctz", "__builtin_ctzl", "__builtin_ctzll",
      "__builtin_bswap32", "__builtin_bswap64", "__builtin_isnan", "__builtin_isinf",
      "__builtin_huge_val", "__builtin_huge_valf", "__builtin_inf", "__builtin_inff",
      "__builtin_nan", "__builtin_nanf", "__builtin_is_constant_evaluated",
      "__builtin_assume_aligned", "__builtin_addressof", "__builtin_memcpy", "__builtin_memset",
      "__builtin_memmove", "__builtin_fabs", "__builtin_fabsf", "__builtin_sqrt",
      "__builtin_sqrtf", "__builtin_launder", "__assert_fail"};
  return k;
}

// Library classes whose members touch only the object they are called on and their arguments:
// containers and strings (they own their storage), views and iterators (they point into what
// they were made from, which tessc follows), value types, random engines and distributions (all
// of their state is in the object, so one declared in the body is per iteration, and one shared
// by iterations is a write to shared state, refused), function objects without state.
const Names& ValueClasses() {
  static const Names k = {
      "vector", "array", "deque", "basic_string", "basic_string_view", "span", "map", "multimap",
      "set", "multiset", "unordered_map", "unordered_multimap", "unordered_set",
      "unordered_multiset", "list", "forward_list", "optional", "pair", "tuple", "variant",
      "complex", "valarray", "bitset", "unique_ptr", "default_delete", "initializer_list",
      "priority_queue", "queue", "stack", "numeric_limits", "allocator", "hash",
      "__normal_iterator", "reverse_iterator", "move_iterator", "_Rb_tree_iterator",
      "_Rb_tree_const_iterator", "_Node_iterator", "_Node_const_iterator", "_List_iterator",
      "_List_const_iterator", "_Deque_iterator", "_Bit_iterator", "_Bit_const_iterator",
      "_Bit_reference", "_Fwd_list_iterator", "_Fwd_list_const_iterator",
      "back_insert_iterator", "insert_iterator", "front_insert_iterator", "subrange",
      "iota_view", "ref_view", "reverse_view", "mersenne_twister_engine",
      "linear_congruential_engine", "subtract_with_carry_engine", "discard_block_engine",
      "independent_bits_engine", "shuffle_order_engine", "uniform_int_distribution",
      "uniform_real_distribution", "normal_distribution", "bernoulli_distribution",
      "binomial_distribution", "negative_binomial_distribution", "geometric_distribution",
      "poisson_distribution", "exponential_distribution", "gamma_distribution",
      "weibull_distribution", "extreme_value_distribution", "lognormal_distribution",
      "chi_squared_distribution", "cauchy_distribution", "fisher_f_distribution",
      "student_t_distribution", "discrete_distribution", "piecewise_constant_distribution",
      "piecewise_linear_distribution", "param_type", "plus", "minus", "multiplies", "divides",
      "modulus", "negate", "equal_to", "not_equal_to", "greater", "less", "greater_equal",
      "less_equal", "logical_and", "logical_or", "logical_not", "bit_and", "bit_or", "bit_xor",
      "bit_not", "identity", "_Iota", "compare_three_way", "strong_ordering", "weak_ordering",
      "partial_ordering", "__cmp_cat_type", "_Tuple_impl", "_Head_base", "integral_constant",
      "ratio", "_Vector_base", "_Deque_base", "_Rb_tree", "_Hashtable", "_Bvector_base"};
  return k;
}

// Why a well-known library function is not on the list, with the fix; a generic reason
// otherwise.
std::string WhyNot(const std::string& qualified, std::string_view name) {
  const std::string callee = "'" + qualified + "'";
  if (name == "rand" || name == "srand" || name == "random_shuffle" || name == "rand_r" ||
      name == "drand48" || name == "lrand48" || name == "random") {
    return callee + " draws from the C library's hidden generator, so the values depend on the "
                    "order iterations run in; use a generator declared in the body and seeded "
                    "from the key (std::mt19937_64 rng(seed ^ key[0]))";
  }
  if (name == "time" || name == "clock" || name == "now" || name == "gettimeofday" ||
      name == "clock_gettime" || name == "getenv") {
    return callee + " reads state outside the program (the clock, the environment), which "
                    "differs between iterations and runs; read it once before the loop";
  }
  if (name.find("printf") != std::string_view::npos || name.find("scanf") != std::string_view::npos ||
      name == "puts" || name == "putchar" || name == "fputs" || name == "fwrite" ||
      name == "fread" || name == "fopen" || name == "fclose" || name == "fflush" ||
      name == "getline" || name == "getchar" || name == "fputc" || name == "fgetc" ||
      name == "print" || name == "println" || name == "format_to" || name == "vprint") {
    return callee + " does I/O, whose order depends on the order iterations run in; store the "
                    "values in a DistArray indexed by the key and print them after the loop";
  }
  if (name == "exit" || name == "abort" || name == "quick_exit" || name == "_Exit" ||
      name == "terminate") {
    return callee + " ends the program, which iterations on other threads would race with; "
                    "check the condition after the loop";
  }
  if (name == "malloc" || name == "calloc" || name == "realloc" || name == "free") {
    return callee + " manages raw memory tessc cannot follow; use a std::vector or a local";
  }
  return callee + " is not on tessc's list of library functions known to touch only their "
                  "arguments (docs/tessc.md, \"What a body may call\"): it may read or write "
                  "hidden state; call it before the loop, or write the computation in this file";
}

std::string StripLibraryPrefix(std::string name) {
  for (const char* p : {"__builtin_", "__gnu_cxx::", "std::"}) {
    const std::string prefix(p);
    if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
  }
  return name;
}

// A math function spelled with its float/long double suffix (sqrtf, expl).
bool IsMath(std::string_view name) {
  if (MathFunctions().count(name) != 0) return true;
  if (name.size() > 1 && (name.back() == 'f' || name.back() == 'l')) {
    return MathFunctions().count(name.substr(0, name.size() - 1)) != 0;
  }
  return false;
}

const CXXRecordDecl* OwnerClass(const FunctionDecl* fd) {
  if (const auto* m = dyn_cast<CXXMethodDecl>(fd)) return m->getParent();
  return nullptr;
}

bool TakesExecutionPolicy(const FunctionDecl* fd) {
  for (const ParmVarDecl* p : fd->parameters()) {
    const CXXRecordDecl* rd = p->getType().getNonReferenceType()->getAsCXXRecordDecl();
    if (rd != nullptr && rd->getName().endswith("_policy")) return true;
  }
  return false;
}

}  // namespace

bool IsLibraryDecl(const Decl* d, const SourceManager& sm) {
  if (d == nullptr) return false;
  if (InStdNamespace(d)) return true;
  for (const DeclContext* dc = d->getDeclContext(); dc != nullptr; dc = dc->getParent()) {
    if (const auto* ns = dyn_cast<NamespaceDecl>(dc); ns != nullptr && ns->getName() == "__gnu_cxx") {
      return true;
    }
  }
  return sm.isInSystemHeader(sm.getExpansionLoc(d->getLocation())) && !InTesseraNamespace(d);
}

bool IsProgrammingModelDecl(const Decl* d, const SourceManager& sm) {
  if (d == nullptr || !InTesseraNamespace(d)) return false;
  const SourceLocation loc = sm.getExpansionLoc(d->getLocation());
  llvm::StringRef path = sm.getFilename(loc);
  if (path.empty()) return true;  // no file (a builtin, an implicit declaration): the model's
  // Some ancestor directory named "tessera" whose parent is named "include".
  for (llvm::StringRef dir = llvm::sys::path::parent_path(path); !dir.empty();
       dir = llvm::sys::path::parent_path(dir)) {
    if (llvm::sys::path::filename(dir) == "tessera" &&
        llvm::sys::path::filename(llvm::sys::path::parent_path(dir)) == "include") {
      return true;
    }
    if (dir == llvm::sys::path::parent_path(dir)) break;
  }
  return false;
}

std::string RangesAlgorithmName(const CXXRecordDecl* rd) {
  if (rd == nullptr || !InStdNamespace(rd)) return "";
  std::string_view n = rd->getName();
  if (n.size() < 6 || n.substr(0, 2) != "__" || n.substr(n.size() - 3) != "_fn") return "";
  return std::string(n.substr(2, n.size() - 5));
}

LibraryVerdict ClassifyLibraryClass(const CXXRecordDecl* rd) {
  LibraryVerdict v;
  if (rd == nullptr) {
    v.known = true;
    return v;
  }
  const std::string name = rd->getName().str();
  if (rd->isLambda() || ValueClasses().count(name) != 0 || !RangesAlgorithmName(rd).empty()) {
    v.known = true;
    return v;
  }
  const std::string q = rd->getQualifiedNameAsString();
  if (name == "atomic" || name == "atomic_ref" || name == "__atomic_base" ||
      name == "__atomic_float" || name == "atomic_flag") {
    v.why = "'" + q + "' is read or updated in a way whose result depends on the order "
            "iterations run in (only a commuting update whose result is unused, `n += 1;` or "
            "`n.fetch_add(1);` as a statement, is order-free); for a sum use a "
            "tessera::Accumulator and read it after the loop";
    return v;
  }
  if (name.find("_clock") != std::string::npos || name == "time_point" || name == "duration") {
    v.why = "'" + q + "' reads (or carries a reading of) the clock, which differs between "
            "iterations and runs; read it once before the loop";
    return v;
  }
  if (name.find("mutex") != std::string::npos || name == "lock_guard" || name == "unique_lock" ||
      name == "scoped_lock" || name == "shared_lock" || name == "condition_variable" ||
      name == "condition_variable_any" || name == "thread" || name == "jthread" ||
      name == "counting_semaphore" || name == "barrier" || name == "latch") {
    v.why = "'" + q + "' synchronizes threads: a lock makes updates race-free, not ordered, so "
            "the result may differ from the serial one; use an Accumulator, a RelaxedArray or "
            "a DistArray indexed by the key";
    return v;
  }
  if (name.find("stream") != std::string::npos || name == "basic_ostream" ||
      name == "basic_istream" || name == "basic_ios" || name == "ios_base" ||
      name == "basic_streambuf" || name == "basic_filebuf") {
    v.why = "'" + q + "' does I/O, whose order depends on the order iterations run in; store "
            "the values in a DistArray indexed by the key and print them after the loop";
    return v;
  }
  if (name == "random_device") {
    v.why = "'" + q + "' reads the system's entropy, which differs between iterations and "
            "runs; seed a generator from the key instead (std::mt19937_64 rng(seed ^ key[0]))";
    return v;
  }
  if (name == "function" || name == "move_only_function" || name == "reference_wrapper" ||
      name == "shared_ptr" || name == "weak_ptr") {
    v.why = "'" + q + "' holds a callable or object chosen at run time (or a shared count), "
            "which tessc cannot follow; call a lambda defined in this file by name, or keep the "
            "object in a local";
    return v;
  }
  v.why = "'" + q + "' is not on tessc's list of library classes whose members touch only the "
          "object and their arguments (docs/tessc.md, \"What a body may call\"); use it before "
          "the loop, or a container, view or value type from the list";
  return v;
}

LibraryVerdict ClassifyLibraryFunction(const FunctionDecl* fd) {
  LibraryVerdict v;
  const std::string qualified = fd->getQualifiedNameAsString();
  std::string name = fd->getNameAsString();
  if (fd->getBuiltinID() != 0 || name.rfind("__builtin_", 0) == 0) {
    if (Builtins().count(name) != 0) {
      v.known = true;
      return v;
    }
    name = StripLibraryPrefix(name);
  }
  // Gives up the rest of the thread's time slice: no state read or written.
  if (qualified == "std::this_thread::yield") {
    v.known = true;
    return v;
  }
  if (TakesExecutionPolicy(fd)) {
    v.why = "'" + qualified + "' is given an execution policy: it may run its callbacks on "
            "several threads at once, racing on the iteration's own state; drop the policy";
    return v;
  }
  // A library object of a class that is not on the list, passed to any function (std::getline of
  // std::cin, operator<< of a stream, std::swap of atomics): that class's reason.
  for (const ParmVarDecl* p : fd->parameters()) {
    const CXXRecordDecl* rd = RecordOf(p->getType());
    if (rd != nullptr && InStdNamespace(rd)) {
      LibraryVerdict c = ClassifyLibraryClass(rd);
      if (!c.known) return c;
    }
  }
  if (const CXXRecordDecl* owner = OwnerClass(fd)) {
    // A member (or the call operator of a library function object).
    const std::string algo = RangesAlgorithmName(owner);
    if (!algo.empty()) {
      if (ReadingAlgorithms().count(algo) != 0) {
        v.known = true;
        v.reads_only = true;
        return v;
      }
      if (WritingAlgorithms().count(algo) != 0) {
        v.known = true;
        return v;
      }
      v.why = WhyNot("std::ranges::" + algo, algo);
      return v;
    }
    LibraryVerdict c = ClassifyLibraryClass(owner);
    if (!c.known) {
      c.why = c.why.empty() ? WhyNot(qualified, name) : c.why;
      return c;
    }
    // std::numeric_limits<T>::max(), std::vector::size(), a generator's operator(): members of
    // classes on the list.
    v.known = true;
    return v;
  }
  if (IsMath(name) || Utilities().count(name) != 0) {
    v.known = true;
    return v;
  }
  if (ReadingAlgorithms().count(name) != 0) {
    v.known = true;
    v.reads_only = true;
    return v;
  }
  if (WritingAlgorithms().count(name) != 0) {
    v.known = true;
    return v;
  }
  // Free operators of library classes on the list (operator+ of two strings, operator== of two
  // vectors): their operands are their arguments.
  if (fd->isOverloadedOperator()) {
    v.known = true;
    return v;
  }
  v.why = WhyNot(qualified, name);
  return v;
}

LibraryVerdict ClassifyTesseraFunction(const FunctionDecl* fd) {
  LibraryVerdict v;
  const std::string q = fd->getQualifiedNameAsString();
  const CXXRecordDecl* owner = OwnerClass(fd);
  const std::string cls = owner != nullptr ? owner->getName().str() : "";
  const std::string name = fd->getNameAsString();
  // Keys are values, views' members only locate elements (each access through them is modelled
  // where it is used); the check that aborts on a broken invariant ends the program in any order.
  if (cls == "Key" || cls == "SparseRowView" || cls == "Iterator" || cls == "SparseRowEntry" ||
      cls == "RowView" || cls == "RelaxedRowView" || q == "tessera::internal::CheckFailed" ||
      q == "tessera::internal::SplitMix64" || q == "tessera::internal::SplitMix64At" ||
      // Reads the calling thread's executor slot (a thread_local): the runtime's tests record it
      // to see which executor ran an iteration; its value depends on the schedule by design.
      q == "tessera::internal::CurrentExecutorSlot") {
    v.known = true;
    return v;
  }
  if (cls == "Accumulator") {
    if (fd->getOverloadedOperator() == OO_PlusEqual) {
      v.known = true;
      return v;
    }
    v.why = "'" + q + "' reads back (or resets) an Accumulator inside the loop: its value "
            "mid-loop depends on which iterations ran before; read it after the loop";
    return v;
  }
  if (name == "parallel_for") {
    v.why = "a parallel_for inside a loop body is not supported; write the inner loop as a "
            "plain for loop, or move it out of the body";
    return v;
  }
  if (name == "dense" || name == "filled" || name == "random" || name == "sparse" ||
      name == "WithOrigin" || name == "clone" || name == "permuted" || name == "DistArray" ||
      name == "RelaxedArray" || name.rfind("load_", 0) == 0) {
    v.why = "'" + q + "' creates an array inside a loop body, which is not safe on executor "
            "threads (the context registers every array); create it before the loop, or use a "
            "local std::vector for per-iteration scratch";
    return v;
  }
  v.why = "'" + q + "' is part of the programming model that a loop body may not call (it "
          "talks to the job or changes arrays as a whole); call it before or after the loop";
  return v;
}

}  // namespace tessera::compiler
