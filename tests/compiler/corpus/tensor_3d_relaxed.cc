// CP tensor factorization with the third factor relaxed: the remaining (0, *, *) and (*, 0, *)
// are the 2D pattern over key[0] (space) and key[1] (time).
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto T = tessera::DistArray<float, 3>::sparse(ctx, {10, 10, 10});
  auto A = tessera::DistArray<float, 2>::dense(ctx, {10, 4});
  auto B = tessera::DistArray<float, 2>::dense(ctx, {10, 4});
  auto C = tessera::RelaxedArray<float, 2>::dense(ctx, {10, 4}, 1);
  tessera::parallel_for(T, [&](const tessera::Key<3>& key, float& t) {  // expected-remark {{partitioned 2D (space: key[0], time: key[1]); 'T' local, 'A' local, 'B' rotating, 'C' servers (relaxed)}}
    A(key[0], 0) += t;
    B(key[1], 0) += t;
    C.row(key[2]).add(0, t);
  });
}
