// Coefficients other than 1: writes go to odd elements A(2*key[0] + 1) and reads come from even
// ones A(2*key[0]). 2*d = 1 has no integer solution, so they never meet, and the write meets
// itself only in the same iteration: independent.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto A = tessera::DistArray<float, 1>::dense(ctx, {200});
  auto half = tessera::DistArray<float, 1>::dense(ctx, {100});
  tessera::parallel_for(half, [&](const tessera::Key<1>& key, float&) {  // expected-remark {{independent (space: key[0]); 'half' local, 'A' servers}}
    A(2 * key[0] + 1) = A(2 * key[0]);
  });
}
// JSON: "text": "2*key[0] + 1"
// JSON: "text": "2*key[0]"
