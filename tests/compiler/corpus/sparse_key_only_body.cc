// A body that takes only the key (no element reference) over a sparse 1-D space; counts[key[0]]
// is its own slot: independent.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto present = tessera::DistArray<int8_t, 1>::sparse(ctx, {1000});
  auto counts = tessera::DistArray<int64_t, 1>::dense(ctx, {1000});
  tessera::parallel_for(present, [&](const tessera::Key<1>& key) {  // expected-remark {{independent (space: key[0]); 'present' local, 'counts' local}}
    ++counts(key[0]);
  });
}
