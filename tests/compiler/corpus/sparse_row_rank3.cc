// sparse_row(i) of a rank-3 sparse array is the elements whose key[0] is i, whatever their other
// key components: a body that reads its own row of the space and writes its own element stays
// within key[0] (the LDA sweep's pattern); a write through another row's view conflicts across
// rows. Positive and negative.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto X = tessera::DistArray<int64_t, 3>::sparse(ctx, {100, 50, 20});
  auto Y = tessera::DistArray<int64_t, 3>::sparse(ctx, {50, 100, 20});
  // Reads of the own row, a write of the own element: within key[0].
  tessera::parallel_for(X, [&](const tessera::Key<3>& k, int64_t& v) {  // expected-remark {{partitioned 1D (space: key[0]); 'X' local}}
    int64_t sum = 0;
    for (auto [key, value] : X.sparse_row(k[0])) sum += value + key[2];
    v = sum;
  });
  // Writes through Y's row k[1]: the rows of Y by key[1] of the space.
  tessera::parallel_for(X, [&](const tessera::Key<3>& k, int64_t& v) {  // expected-remark {{partitioned 1D (space: key[1]); 'X' local, 'Y' local}}
    for (auto [key, value] : Y.sparse_row(k[1])) value += v;
  });
  // NEGATIVE: a write through the row of another document of the space itself.
  tessera::parallel_for(X, [&](const tessera::Key<3>& k, int64_t& v) {  // expected-note {{make 'X' a tessera::RelaxedArray}}
    for (auto [key, value] : X.sparse_row(k[1])) value += v;  // expected-error {{accesses to 'X' conflict across iterations with dependence vector (*, *, *)}} expected-note {{conflicting access to 'X'}}
  });
}
