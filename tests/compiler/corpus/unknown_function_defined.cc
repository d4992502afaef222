// unknown_function_const.cc with RowNorm defined in this translation unit: tessc walks it, sees
// that it only reads W, and the loop is independent (W replicated).
#include <tessera/tessera.h>

float RowNorm(const tessera::DistArray<float, 2>& W, int64_t row) {
  float s = 0;
  for (int64_t j = 0; j < W.extent(1); ++j) s += W(row, j) * W(row, j);
  return s;
}

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto out = tessera::DistArray<float, 1>::dense(ctx, {100});
  auto W = tessera::DistArray<float, 2>::dense(ctx, {100, 4});
  tessera::parallel_for(out, [&](const tessera::Key<1>& key, float& o) {  // expected-remark {{independent (space: key[0]); 'out' local, 'W' local}}
    o = RowNorm(W, key[0]);
  });
}
