// NEGATIVE: LDA with the topic totals as an ordinary DistArray. Every token updates totals(z) for
// a data-dependent z, so any two iterations may conflict (dependence (*, *)): no partition is
// legal, and the error names the totals and suggests relaxing them.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  const int64_t topics = 16;
  auto tokens = tessera::DistArray<int32_t, 2>::sparse(ctx, {50, 1000});
  auto doc_topic = tessera::DistArray<int32_t, 2>::dense(ctx, {50, topics});
  auto word_topic = tessera::DistArray<int32_t, 2>::dense(ctx, {1000, topics});
  auto totals = tessera::DistArray<int64_t, 1>::dense(ctx, {topics});
  tessera::parallel_for(tokens, [&](const tessera::Key<2>& key, int32_t& z) {  // expected-note {{make 'totals' a tessera::RelaxedArray}}
    auto dt = doc_topic.row(key[0]);
    auto wt = word_topic.row(key[1]);
    --dt[z];
    --wt[z];
    --totals(z);  // expected-error {{parallel_for over 'tokens' cannot be parallelized: accesses to 'totals' conflict across iterations with dependence vector (*, *)}} expected-note {{the conflict is between this access in different iterations}}
    z = (z + 1) % static_cast<int32_t>(topics);
    ++dt[z];
    ++wt[z];
    ++totals(z);
  });
}
