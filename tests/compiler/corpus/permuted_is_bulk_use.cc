// DistArray::permuted makes a new array at its call, where the source's elements live: the call
// is the new array's origin (as a factory's is), and for the source it is a bulk use the runtime
// runs collectively, not a serial use. So the tokens and their word order, touched only by loops
// and permuted, both stay loop_only and a distributed job keeps both partitioned. A result that
// serial code reads is not loop_only; a permutation made under a rank-dependent condition is a
// serial use of its source (only some workers would make it, so it cannot be collective).
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  tessera::DocwordOptions read;
  read.tokens = true;
  auto loaded = tessera::load_docword(ctx, argv[1], read);
  if (!loaded.ok()) return 1;
  auto& tokens = loaded->tokens;
  auto doc_len = tessera::DistArray<int64_t, 1>::dense(ctx, {tokens.extent(0)});
  auto word_len = tessera::DistArray<int64_t, 1>::dense(ctx, {tokens.extent(1)});
  auto tokens_w =
      tokens.permuted({1, 0, 2});
  tessera::parallel_for(tokens, [&](const tessera::Key<3>& key, int64_t& v) {  // expected-remark {{parallel_for over 'tokens' partitioned 1D (space: key[0]); 'tokens' local, 'doc_len' local}}
    doc_len(key[0]) += 1;
    v = key[2];
  });
  tessera::parallel_for(tokens_w, [&](const tessera::Key<3>& key, int64_t& v) {  // expected-remark {{parallel_for over 'tokens_w' partitioned 1D (space: key[0]); 'tokens_w' local, 'word_len' local}}
    word_len(key[0]) += 1;
    v += key[1];
  });
  // Read by serial code: whole.
  auto other = tokens.permuted({2, 1, 0});
  const int64_t first = other.nnz() > 0 ? other.value_at(0) : 0;
  // Under a rank condition: its source is a serial use.
  auto counts = tessera::DistArray<int64_t, 2>::sparse(ctx, {4, 4});
  if (ctx.job().rank == 0) {
    auto transposed = counts.permuted({1, 0});
    (void)transposed.nnz();
  }
  tessera::parallel_for(other, [&](const tessera::Key<3>& key, int64_t& v) {  // expected-remark {{parallel_for over 'other' independent (space: key[0]); 'other' local}}
    v += key[0] + first;
  });
  tessera::parallel_for(counts, [&](const tessera::Key<2>& key, int64_t& v) {  // expected-remark {{parallel_for over 'counts' independent (space: key[0]); 'counts' local}}
    v += key[1];
  });
  return 0;
}
// JSON: "name": "tokens",
// JSON: "origin": {"file": "{{.*}}permuted_is_bulk_use.cc", "line": 13, "column": 17, "member": "tokens"},
// JSON-NEXT: "loop_only": true,
// JSON: "name": "tokens_w",
// JSON: "origin": {"file": "{{.*}}permuted_is_bulk_use.cc", "line": 19, "column": 14, "member": ""},
// JSON-NEXT: "loop_only": true,
// JSON: "name": "other",
// JSON: "origin": {"file": "{{.*}}permuted_is_bulk_use.cc", "line": 29, "column": 23, "member": ""},
// JSON-NEXT: "loop_only": false,
// JSON-NEXT: "serial_use": "line 30"
// JSON: "name": "counts",
// JSON: "loop_only": false,
// JSON-NEXT: "serial_use": "line 34"
