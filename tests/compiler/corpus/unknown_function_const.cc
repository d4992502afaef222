// NEGATIVE (serial): W is passed by const reference to a function whose definition is not in this
// translation unit. Reading W would be harmless, but tessc cannot see what else RowNorm reaches
// (a global array, a counter): the loop runs serially, with a warning naming the call.
// unknown_function_defined.cc is the same loop with RowNorm defined: independent.
#include <tessera/tessera.h>

float RowNorm(const tessera::DistArray<float, 2>& W, int64_t row);  // defined elsewhere

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto out = tessera::DistArray<float, 1>::dense(ctx, {100});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  tessera::parallel_for(out, [&](const tessera::Key<1>& key, float& o) {  // expected-warning {{parallel_for over 'out' will run serially: its body reaches state tessc cannot model (1 reason below)}}
    o = RowNorm(W, key[0]);  // expected-note {{conservative: 'W' is passed to RowNorm, whose body tessc cannot see; assuming it reads any element}} expected-note {{cannot see through: 'RowNorm' is not defined in this translation unit: tessc cannot see what it reads and writes}}
  });
}
