// A copy of the loop's key that the body changes is not the key: `prev` below names the previous
// element, so the loop is a running sum. Its subscript is unknown, which conflicts with the write
// of every element: an error, where an independent schedule would be wrong.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto P = tessera::DistArray<int64_t, 1>::dense(ctx, {100});
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) {  // expected-note {{to run it anyway, make 'P' a tessera::RelaxedArray}}
    if (key[0] == 0) return;
    tessera::Key<1> prev = key;
    prev.idx[0] -= 1;
    v += P.at(prev);  // expected-error {{accesses to 'P' conflict across iterations with dependence vector (*)}} expected-note {{conflicting access to 'P'}}
  });
  // The same copy, unchanged, is the key: the loop is independent.
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) {  // expected-remark {{independent (space: key[0]); 'P' local}}
    tessera::Key<1> same = key;
    P.at(same) += 1;
  });
}
