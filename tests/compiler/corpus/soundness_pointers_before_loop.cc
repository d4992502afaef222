// Pointers, views and references made before the loop and used inside it: tessc follows them to
// the array they were made from (data(), row(), an element), never re-pointed.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto R = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto H = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  const int64_t K = 4;
  float* Hb = H.data();
  auto wrow = W.row(3);
  const float& h00 = H(0, 0);
  // NEGATIVE: Hb[k[1] * K + f] is some element of H (tessc does not split a flattened index).
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {  // expected-note {{make 'H' a tessera::RelaxedArray}}
    for (int64_t f = 0; f < K; ++f) Hb[k[1] * K + f] += r;  // expected-error {{accesses to 'H' conflict across iterations with dependence vector (*, *)}} expected-note {{the conflict is between this access}}
  });
  // Reads through Hb are reads of H, which nothing writes: H replicated.
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {  // expected-remark {{partitioned 1D (space: key[0]); 'R' local, 'H' replicated, 'W' local}}
    r += Hb[k[1] * K];
    W(k[0], 0) += r;
  });
  // NEGATIVE: a row view made before the loop is one row for every iteration.
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {  // expected-note {{make 'W' a tessera::RelaxedArray}}
    wrow[0] += r;  // expected-error {{accesses to 'W' conflict across iterations with dependence vector (*, *)}} expected-note {{the conflict is between this access}}
  });
  // NEGATIVE: a reference to H(0, 0) read while other iterations write H.
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {  // expected-note {{make 'H' a tessera::RelaxedArray}}
    H(k[1], 0) += r * h00;  // expected-error {{accesses to 'H' conflict across iterations with dependence vector (*, *)}} expected-note {{conflicting access to 'H'}}
  });
  // The fix: row() inside the body.
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {  // expected-remark {{partitioned 1D (space: key[1]); 'R' local, 'H' local}}
    auto h = H.row(k[1]);
    for (int64_t f = 0; f < K; ++f) h[f] += r;
  });
}
