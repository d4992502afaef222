// Collapsed Gibbs LDA: doc_topic row key[0] and word_topic row key[1] are updated; the topic totals
// are a relaxed table (staleness 1), excluded from the dependence analysis. 2D: doc_topic local,
// word_topic rotating, totals on the servers.
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  const int64_t topics = 16;
  auto tokens = tessera::DistArray<int32_t, 2>::sparse(ctx, {50, 1000});   // (doc, word) -> topic
  auto doc_topic = tessera::DistArray<int32_t, 2>::dense(ctx, {50, topics});
  auto word_topic = tessera::DistArray<int32_t, 2>::dense(ctx, {1000, topics});
  auto totals = tessera::RelaxedArray<int64_t, 1>::dense(ctx, {topics}, /*staleness=*/1);
  tessera::parallel_for(tokens, [&](const tessera::Key<2>& key, int32_t& z) {  // expected-remark {{partitioned 2D (space: key[0], time: key[1]); 'tokens' local, 'doc_topic' local, 'word_topic' rotating, 'totals' servers (relaxed)}}
    auto dt = doc_topic.row(key[0]);
    auto wt = word_topic.row(key[1]);
    --dt[z];
    --wt[z];
    totals.add(z, -1);
    int32_t best = 0;
    double best_p = -1;
    for (int32_t k = 0; k < topics; ++k) {
      const double p = (dt[k] + 0.1) * (wt[k] + 0.01) / (totals(k) + 10.0);
      if (p > best_p) {
        best_p = p;
        best = k;
      }
    }
    z = best;
    ++dt[z];
    ++wt[z];
    totals.add(z, 1);
  });
}
// JSON: "strategy": "2d",
// JSON: "name": "tokens",
// JSON-NEXT: "placement": "local",
// JSON: "name": "doc_topic",
// JSON-NEXT: "placement": "local",
// JSON: "name": "word_topic",
// JSON-NEXT: "placement": "rotating",
// JSON: "name": "totals",
// JSON-NEXT: "placement": "servers",
// JSON-NEXT: "kind": "relaxed",
// JSON: "staleness": 1,
