// save_array and save_array_text of an array from code outside loops are bulk operations the
// runtime runs where the array lives (a collective of every worker): they do not make the array
// a serial use, so W, H and the bias stay loop_only and a distributed job keeps them partitioned.
// The same call under a condition that depends on the worker's rank is a serial use (only some
// workers make it, so it cannot be collective): the array stays whole, and tessc warns.
#include <tessera/tessera.h>

#include <string>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {100, 200});
  auto W = tessera::DistArray<float, 2>::random(ctx, {100, 8}, 1, 0.f, 1.f);
  auto H = tessera::DistArray<float, 2>::random(ctx, {200, 8}, 2, 0.f, 1.f);
  auto bias = tessera::DistArray<float, 1>::dense(ctx, {100});
  auto R = tessera::DistArray<float, 2>::random(ctx, {200, 8}, 3, 0.f, 1.f);
  auto S = tessera::DistArray<float, 2>::random(ctx, {200, 8}, 4, 0.f, 1.f);
  const float lr = 0.01f;
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& rating) {  // expected-remark {{parallel_for over 'ratings' partitioned 2D (space: key[1], time: key[0]); 'ratings' local, 'W' rotating, 'H' local, 'R' local, 'S' local, 'bias' rotating}}
    auto w = W.row(key[0]);
    auto h = H.row(key[1]);
    auto r = R.row(key[1]);
    auto s = S.row(key[1]);
    float pred = bias(key[0]);
    for (int64_t j = 0; j < w.size(); ++j) pred += w[j] * h[j] + r[j] * s[j];
    const float err = rating - pred;
    bias(key[0]) += lr * err;
    for (int64_t j = 0; j < w.size(); ++j) {
      const float wj = w[j];
      w[j] += lr * err * h[j];
      h[j] += lr * err * wj;
      r[j] += lr * err;
      s[j] += lr * err;
    }
  });
  const std::string dir = argc > 1 ? argv[1] : ".";
  // Every worker calls these: collective saves of partitioned arrays.
  tessera::Status st = tessera::save_array(W, dir + "/W.tarr");
  if (st.ok()) st = tessera::save_array_text(H, dir + "/H.txt");
  if (st.ok()) st = tessera::save_array(bias, dir + "/bias.tarr");
  // Only worker 0: not collective, so R stays whole (and saves locally).
  const bool report = ctx.job().rank == 0;
  if (report) {  // expected-note {{the rank-dependent condition}}
    st = tessera::save_array(R, dir + "/R.tarr");  // expected-warning {{save_array under a condition that depends on the worker's rank: the array stays whole on every worker of a distributed job for it; call save_array on every worker instead (it is collective, and saves a partitioned array where its rows live)}}
  }
  // The rank read directly, in a ?: this time.
  st = ctx.job().rank != 0 ? tessera::Status::Ok() : tessera::save_array_text(S, dir + "/S.txt");  // expected-warning {{save_array_text under a condition}} expected-note {{the rank-dependent condition}}
  return st.ok() ? 0 : 1;
}
// JSON: "name": "W",
// JSON: "loop_only": true,
// JSON: "name": "H",
// JSON: "loop_only": true,
// JSON: "name": "R",
// JSON: "loop_only": false,
// JSON-NEXT: "serial_use": "line 44"
// JSON: "name": "S",
// JSON: "loop_only": false,
// JSON-NEXT: "serial_use": "line 47"
// JSON: "name": "bias",
// JSON: "loop_only": true,
