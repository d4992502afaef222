// A lookup by key into a sparse array may insert (operator() or at() of a key it does not store),
// which is not safe on executor threads. It is safe where the key is certainly stored: at the
// permuted key of an array made from the loop's space by permuted(...) (or the space made from
// it), when neither can gain a key afterwards; and lookups that never insert (get, find,
// contains, const access) are always safe.
#include <tessera/tessera.h>

using tessera::DistArray;
using tessera::Key;

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto X = DistArray<double, 2>::sparse(ctx, {50, 40});
  for (int64_t i = 0; i < 50; ++i) X.insert({{i, (i * 7) % 40}}, 1.0);
  auto Y = X.permuted({1, 0});
  // Both orders of one set of keys hand each other values at the permuted key, both ways.
  tessera::parallel_for(X, [&](const Key<2>& key, double& v) { Y(key[1], key[0]) = v * 2; });  // expected-remark {{parallel_for over 'X' independent}}
  tessera::parallel_for(Y, [&](Key<2> key, double& v) { X.at({{key[1], key[0]}}) += v; });  // expected-remark {{parallel_for over 'Y' independent}}
  // Get and find never insert, at any key.
  tessera::parallel_for(X, [&](const Key<2>& key, double& v) {  // expected-remark {{parallel_for over 'X' independent}}
    v += Y.get({{key[1], 0}});
    if (const double* w = Y.find({{0, key[0]}})) v += *w;
  });

  // Not the permutation the pair was made with: that key may not be stored (and the lookup may
  // add one, so the pair no longer proves any lookup).
  auto P = DistArray<double, 2>::sparse(ctx, {40, 40});
  auto Q = P.permuted({1, 0});
  tessera::parallel_for(P, [&](const Key<2>& key, double& v) { v += Q(key[0], key[1]); });  // expected-warning {{will run serially}} expected-note {{'Q' is looked up by key (operator()) and tessc cannot prove it dense nor the key stored: operator() of a key a sparse array does not store inserts it, which is not safe on executor threads ('Q' is looked up at another permutation of the loop's key than the one it was made with}}
  tessera::parallel_for(P, [&](const Key<2>& key, double& v) { Q(key[1], key[0]) = v; });  // expected-warning {{will run serially}} expected-note {{'Q' is looked up at line 29 at a key other than a loop's own key (or its permutation between 'P' and 'Q'), which may add one}}

  // A transposition into an empty sparse array inserts every element.
  auto T = DistArray<double, 2>::sparse(ctx, {40, 50});
  tessera::parallel_for(X, [&](const Key<2>& key, double& v) { T(key[1], key[0]) = v; });  // expected-warning {{will run serially}} expected-note {{'T' is looked up by key (operator()) and tessc cannot prove it dense nor the key stored: operator() of a key a sparse array does not store inserts it, which is not safe on executor threads ('T' was not made from 'X' by permuted(...)}}

  // A key added to the space after its other order was made: that key has no counterpart.
  auto A = DistArray<double, 2>::sparse(ctx, {50, 40});
  A.insert({{1, 2}}, 1.0);
  auto B = A.permuted({1, 0});
  A.insert({{3, 4}}, 1.0);
  tessera::parallel_for(A, [&](const Key<2>& key, double& v) { B(key[1], key[0]) = v; });  // expected-warning {{will run serially}} expected-note {{'A.insert()' at line 40 may add a key to 'A'}}

  // A helper lambda that may insert, defined before the pair is made, counts too.
  auto C = DistArray<double, 2>::sparse(ctx, {50, 40});
  auto grow = [&](int64_t i) { C(i, 0) = 1.0; };
  auto D = C.permuted({1, 0});
  grow(7);
  tessera::parallel_for(C, [&](const Key<2>& key, double& v) { D(key[1], key[0]) = v; });  // expected-warning {{will run serially}} expected-note {{'C' is looked up at line 45 at a key other than a loop's own key}}

  return 0;
}
