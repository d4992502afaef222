// Loops of kinds found wrong before: a static local set from the key (set once, by whichever
// iteration runs first), a dense array's name given a sparse array (swap, assignment), atomics
// updated by operations that do not commute with one another or in floating point, and row views
// made from pointers.
#include <algorithm>
#include <array>
#include <atomic>
#include <utility>

#include <tessera/tessera.h>

using Array = tessera::DistArray<int64_t, 1>;

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto A = Array::dense(ctx, {100});
  tessera::parallel_for(A, [&](const tessera::Key<1>& k, int64_t& v) {  // expected-note {{make 'A' a tessera::RelaxedArray}}
    static const int64_t s = k[0];
    v += A(s);  // expected-error {{accesses to 'A' conflict across iterations with dependence vector (*)}} expected-note {{conflicting access to 'A'}}
  });
  // Dense when made, sparse after the swap: a lookup may insert.
  auto Out = Array::dense(ctx, {100});
  auto Sp = Array::sparse(ctx, {100});
  std::swap(Out, Sp);
  tessera::parallel_for(A, [&](const tessera::Key<1>& k, int64_t& v) { Out(k[0]) += v; });  // expected-warning {{will run serially}} expected-note {{'Out' may be given another array at line 24}}
  auto Re = Array::dense(ctx, {100});
  Re = Array::sparse(ctx, {100});
  tessera::parallel_for(A, [&](const tessera::Key<1>& k, int64_t& v) { Re(k[0]) += v; });  // expected-warning {{will run serially}} expected-note {{'Re' may be given another array at line 27}}
  // Handed to a function that keeps it, and read through a reference: still dense.
  auto Kept = Array::dense(ctx, {100});
  auto& kept_ref = Kept;
  tessera::parallel_for(A, [&](const tessera::Key<1>& k, int64_t& v) { kept_ref(k[0]) += v; });  // expected-remark {{parallel_for over 'A' independent (space: key[0]); 'A' local, 'Kept' local}}

  std::atomic<int64_t> x{0};
  tessera::parallel_for(A, [&](const tessera::Key<1>& k, int64_t&) {  // expected-warning {{will run serially}}
    x.fetch_add(k[0]);  // expected-note {{'x' is a std::atomic updated by commuting operations}}
    x.fetch_xor(k[0] * 3);  // expected-note {{'x' is a std::atomic updated by operations that do not commute with one another}} expected-note {{'x' is a std::atomic updated by commuting operations}}
  });
  std::atomic<double> d{0};
  tessera::parallel_for(A, [&](const tessera::Key<1>& k, int64_t&) { d += 1.0 / static_cast<double>(k[0] + 1); });  // expected-warning {{will run serially}} expected-note {{'std::__atomic_float' is read or updated in a way whose result depends on the order}} expected-note {{'d' writes 'd', state outside the loop body}}

  tessera::parallel_for(A, [&](const tessera::Key<1>& k, int64_t& v) {  // expected-note {{make 'A' a tessera::RelaxedArray}}
    if (k[0] > 0) {
      tessera::RowView<int64_t> rv(&v - 1, 2);  // expected-note {{'expression at line 44' may name any array of its type}}
      v = rv[1] * 3 + rv[0];  // expected-error {{accesses to 'A' conflict across iterations with dependence vector (*)}} expected-note {{conflicting access to 'A'}}
    }
  });
  tessera::RowView<int64_t> all(A.data(), 100);  // expected-note {{'expression at line 48' may name any array of its type}}
  tessera::parallel_for(A, [&](const tessera::Key<1>& k, int64_t& v) {  // expected-note {{make 'A' a tessera::RelaxedArray}}
    if (k[0] > 0) v = v * 3 + all[k[0] - 1];  // expected-error {{accesses to 'A' conflict across iterations with dependence vector (*)}} expected-note {{conflicting access to 'A'}}
  });
  // A lambda made before the loop and passed by name to an algorithm is walked like one written
  // in the call.
  auto upd = [&A](int64_t i) {
    if (i > 0) A(i) = A(i) * 3 + A(i - 1);  // expected-error {{accesses to 'A' conflict across iterations with dependence vector (*)}} expected-note {{the conflict is between this access}}
  };
  tessera::parallel_for(A, [&](const tessera::Key<1>& k, int64_t&) {  // expected-note {{make 'A' a tessera::RelaxedArray}}
    std::array<int64_t, 1> ix{k[0]};
    std::for_each(ix.begin(), ix.end(), upd);
  });
  return static_cast<int>(x.load() + static_cast<int64_t>(d.load()));
}
