// DistArray members other than operator(), at() and row() are accesses too: find() gives a
// pointer to one element, sparse_row() a view of one row, data() the whole storage, fill() writes
// every element, value_at() an element by position (unknown subscripts). Positive and negative.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto R = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto stats = tessera::DistArray<float, 2>::sparse(ctx, {100, 1});
  auto S = tessera::DistArray<float, 2>::sparse(ctx, {100, 100});
  auto D = tessera::DistArray<float, 1>::dense(ctx, {100});
  // find() into a sparse array other than the loop's space never inserts (its index is built
  // under a lock): the pointer it gives is element (k[1], 0), written by every iteration of a
  // k[1], so the loop is split by k[1]; by k[0] in the second.
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {  // expected-remark {{parallel_for over 'R' partitioned 1D (space: key[1]); 'R' local, 'stats' local}}
    if (float* s = stats.find({{k[1], 0}})) *s += r;
  });
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {  // expected-remark {{parallel_for over 'R' partitioned 1D (space: key[0]); 'R' local, 'stats' local}}
    if (float* s = stats.find({{k[0], 0}})) *s += r;
  });
  // Writes through sparse_row(i): row i, any column.
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {  // expected-remark {{partitioned 1D (space: key[0]); 'R' local, 'S' local}}
    for (auto [col, v] : S.sparse_row(k[0])) v += r;
  });
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {  // expected-remark {{partitioned 1D (space: key[1]); 'R' local, 'S' local}}
    for (auto [col, v] : S.sparse_row(k[1])) v += r;
  });
  // NEGATIVE: data() hands out the whole storage.
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {  // expected-note {{make 'D' a tessera::RelaxedArray}}
    D.data()[k[1]] += r;  // expected-error {{accesses to 'D' conflict across iterations with dependence vector (*, *)}} expected-note {{the conflict is between this access}} expected-note {{conservative: a pointer into 'D' escapes ('data()' is called)}}
  });
  // NEGATIVE: fill() writes every element.
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {  // expected-note {{make 'D' a tessera::RelaxedArray}}
    if (k[0] == 0) D.fill(r);  // expected-error {{accesses to 'D' conflict across iterations with dependence vector (*, *)}} expected-note {{the conflict is between this access}}
  });
  // NEGATIVE: value_at(p) is an element by storage position, which tessc cannot relate to keys.
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& r) {  // expected-note {{make 'S' a tessera::RelaxedArray}}
    r += S.value_at(k[0]);  // expected-error {{accesses to 'S' conflict across iterations with dependence vector (*, *)}}
    S.value_at(k[1]) = r;  // expected-note {{conflicting access to 'S'}}
  });
}
