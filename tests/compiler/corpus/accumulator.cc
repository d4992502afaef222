// A reduction through tessera::Accumulator is not an array access: the loop stays independent.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto x = tessera::DistArray<double, 1>::dense(ctx, {100});
  tessera::Accumulator<double> total(ctx);
  tessera::parallel_for(x, [&](const tessera::Key<1>& key, double& v) {  // expected-remark {{independent (space: key[0]); 'x' local}}
    total += v * v;
  });
  return total.value() > 0 ? 0 : 1;
}
