// W is passed by const reference to a function tessc cannot see: it may read any element, which
// is harmless because nothing in the loop writes W. Only out(key[0]) is written: independent, W
// replicated, with a conservative note.
#include <tessera/tessera.h>

float RowNorm(const tessera::DistArray<float, 2>& W, int64_t row);  // defined elsewhere

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto out = tessera::DistArray<float, 1>::dense(ctx, {100});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  tessera::parallel_for(out, [&](const tessera::Key<1>& key, float& o) {  // expected-remark {{independent (space: key[0]); 'out' local, 'W' replicated; conservative where tessc could not see through (1 note)}}
    o = RowNorm(W, key[0]);  // expected-note {{conservative: 'W' is passed to RowNorm, whose body tessc cannot see; assuming it reads any element}}
  });
}
// JSON: "conservative": ["'W' is passed to RowNorm
