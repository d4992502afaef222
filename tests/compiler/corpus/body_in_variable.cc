// The body is a named lambda passed to parallel_for: tessc follows the variable to the lambda.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto A = tessera::DistArray<float, 2>::dense(ctx, {10, 10});
  auto rows = tessera::DistArray<float, 1>::dense(ctx, {10});
  auto body = [&](const tessera::Key<2>& key, float& a) { rows(key[0]) += a; };
  tessera::parallel_for(A, body);  // expected-remark {{partitioned 1D (space: key[0]); 'A' local, 'rows' local}}
}
