// Cap'n Proto 0.9 (Debian 12) under clang 16 in C++20: capnp/blob.h compares a `const char*`
// with a kj::StringPtr, for which kj declares no operator in C++20 mode (g++ accepts the
// comparison, clang does not). Force-included into the clang fuzz build only (scripts/fuzz.sh).
#ifndef TESSERA_FUZZ_CAPNP_CLANG_COMPAT_H_
#define TESSERA_FUZZ_CAPNP_CLANG_COMPAT_H_

#include <kj/string.h>

// kj declares them itself without three-way comparison (e.g. CMake's compiler check, which
// compiles in the compiler's default standard).
#if __cpp_impl_three_way_comparison
namespace kj {
inline bool operator==(const char* a, const StringPtr& b) { return b == StringPtr(a); }
inline bool operator!=(const char* a, const StringPtr& b) { return !(b == StringPtr(a)); }
}  // namespace kj
#endif

#endif  // TESSERA_FUZZ_CAPNP_CLANG_COMPAT_H_
