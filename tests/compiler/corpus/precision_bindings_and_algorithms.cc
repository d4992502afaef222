// Precision: structured bindings of a key are the key's components, and a row view's range
// handed to <algorithm>/<numeric> is an access to that row only (read-only for algorithms that
// only read), not to the whole array.
#include <algorithm>
#include <numeric>

#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto R = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  auto H = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  auto out = tessera::DistArray<float, 1>::dense(ctx, {100});
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {  // expected-remark {{partitioned 2D (space: key[0], time: key[1]); 'R' local, 'W' local, 'H' rotating}}
    auto [u, i] = k.idx;
    W(u, 0) += r;
    H(i, 1) += r;
  });
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {  // expected-remark {{partitioned 1D (space: key[0]); 'R' local, 'W' local, 'H' replicated, 'out' local}}
    auto w = W.row(k[0]);
    auto h = H.row(k[1]);
    out(k[0]) += std::inner_product(w.begin(), w.end(), h.begin(), 0.0f);
    std::fill(w.begin(), w.end(), r);
  });
  // NEGATIVE: a binding that is modified is not the key any more.
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {  // expected-note {{make 'W' a tessera::RelaxedArray}}
    auto [u, i] = k.idx;
    u = i;
    W(u, 0) += r;  // expected-error {{accesses to 'W' conflict across iterations with dependence vector (*, *)}} expected-note {{the conflict is between this access}}
  });
}
