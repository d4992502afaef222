// A narrowing cast of a key component wraps, so it is not the identity; `key[0] / 2` is not
// affine. A loop in a template whose subscripts depend on a template parameter gets an error when
// its instantiations need different schedules (the runtime has one per call site).
#include <tessera/tessera.h>

template <int D>
void Spread(tessera::DistArray<float, 2>& R, tessera::DistArray<float, 1>& out) {
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& v) { out(k[D]) += v; });  // expected-error {{parallel_for over 'R' is instantiated 2 times with different accesses (its subscripts depend on a template parameter)}} expected-note {{partitioned 1D (space: key[0])}} expected-note {{partitioned 1D (space: key[1])}} expected-note {{give each instantiation its own parallel_for call}}
}

template <int D>
void Same(tessera::DistArray<float, 2>& R, tessera::DistArray<float, 1>& out) {
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& v) { out(k[0]) += v * D; });  // expected-remark {{partitioned 1D (space: key[0]); 'R' local, 'out' local}}
}

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto R = tessera::DistArray<float, 2>::sparse(ctx, {1000, 100});
  auto shard = tessera::DistArray<float, 1>::dense(ctx, {1000});
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& v) {  // expected-note {{make 'shard' a tessera::RelaxedArray}}
    shard(static_cast<uint8_t>(k[0])) += v;  // expected-error {{accesses to 'shard' conflict across iterations with dependence vector (*, *)}} expected-note {{the conflict is between this access}} expected-note {{conservative: 'k[0]' narrows a key-dependent value to uint8_t (8 bits): larger values wrap}}
  });
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& v) {  // expected-remark {{partitioned 1D (space: key[0]); 'R' local, 'shard' local}}
    shard(static_cast<int64_t>(k[0])) += v;
  });
  tessera::parallel_for(R, [&](const tessera::Key<2>& k, float& v) {  // expected-note {{make 'shard' a tessera::RelaxedArray}}
    shard(k[0] / 2) += v;  // expected-error {{accesses to 'shard' conflict across iterations with dependence vector (*, *)}} expected-note {{the conflict is between this access}} expected-note {{conservative: 'k[0] / 2' is not an affine function of the key ('/' is not + - or * by a constant)}}
  });
  Spread<0>(R, shard);
  Spread<1>(R, shard);
  Same<1>(R, shard);
  Same<2>(R, shard);
}
