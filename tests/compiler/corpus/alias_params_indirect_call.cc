// Two reference parameters are distinct only if every call passes distinct arrays. A function
// used as a value (its address taken, a reference to it, std::invoke) may be called in ways tessc
// does not index, with one array for both (here `run(B, B)`): its parameters may alias.
#include <tessera/tessera.h>

using DA = tessera::DistArray<int64_t, 1>;

void Run(DA& X, DA& Y) {  // expected-note {{'X' and 'Y' may name the same array ('Run' is used as a value at line 24}}
  tessera::parallel_for(X, [&](const tessera::Key<1>& k, int64_t& v) {  // expected-note {{make 'X' a tessera::RelaxedArray}}
    if (k[0] > 0) v = (v * 3 + Y(k[0] - 1)) % 1000003;  // expected-error {{accesses to 'X' conflict across iterations with dependence vector (1)}} expected-note {{conflicting access to 'X'}} expected-note {{'Y' is looked up by key (operator()) and tessc cannot prove it dense}}
  });
}
void RunDirect(DA& X, DA& Y) {
  tessera::parallel_for(X, [&](const tessera::Key<1>& k, int64_t& v) {  // expected-remark {{parallel_for over 'X' independent (space: key[0]); 'X' local, 'Y' local}}
    if (k[0] > 0) v = (v * 3 + Y(k[0] - 1)) % 1000003;
  });
}

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto A = DA::dense(ctx, {100});
  auto B = DA::dense(ctx, {100});
  Run(A, B);
  auto* run = &Run;
  run(B, B);
  // Arrays of their own: B was handed to the indirect call, which might have replaced it.
  auto C = DA::dense(ctx, {100});
  auto D = DA::dense(ctx, {100});
  RunDirect(C, D);
  return 0;
}
