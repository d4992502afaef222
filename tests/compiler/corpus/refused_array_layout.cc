// Creating an array and changing a sparse array's layout inside a body are not safe on executor
// threads; neither is a lookup by key that may insert into an array tessc cannot prove dense
// (operator() of a key a sparse array does not store inserts it). Looking up the loop's own
// element of a sparse space is fine, and so is get, which never inserts.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto P = tessera::DistArray<int64_t, 1>::dense(ctx, {100});
  auto S = tessera::DistArray<int64_t, 1>::sparse(ctx, {100});
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) {  // expected-warning {{will run serially}}
    auto scratch = tessera::DistArray<int64_t, 1>::dense(ctx, {4});  // expected-note {{cannot see through: 'tessera::DistArray<long, 1>::dense' creates an array inside a loop body}} expected-note {{conservative: 'expression at line 12' may name any array of its type}}
    v = scratch.size();
  });
  // The insert also reads and writes any element of S as far as the dependences go: an error,
  // which carries the note.
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) { S.insert(key, v); });  // expected-error {{accesses to 'S' conflict across iterations with dependence vector (*)}} expected-note {{the conflict is between this access in different iterations}} expected-note {{to run it anyway, make 'S' a tessera::RelaxedArray}} expected-note {{cannot see through: 'S.insert()' changes the layout of an array inside a loop body}} expected-note {{conservative: 'S.insert()' may read and write (or reorder) any element of 'S'}}
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) { S(key[0]) = v; });  // expected-warning {{will run serially}} expected-note {{cannot see through: 'S' is looked up by key (operator()) and tessc cannot prove it dense}}
  // get never inserts: fine at any key.
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) { v = S.get(key); });  // expected-remark {{parallel_for over 'P' independent (space: key[0]); 'P' local, 'S' local}}
  tessera::parallel_for(S, [&](const tessera::Key<1>& key, int64_t& v) { v += S.at(key); });  // expected-remark {{independent (space: key[0]); 'S' local}}
}
