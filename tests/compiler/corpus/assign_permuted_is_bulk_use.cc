// DistArray::assign_permuted copies values between two orders of one data set where their
// elements live, collectively: for the array assigned and for its source alike it is a bulk use,
// not a serial one. So the tokens and their word order, touched only by loops, permuted and
// assign_permuted, both stay loop_only, and a sweep that reads its own row (the values the other
// order handed it) keeps them partitioned. An assignment under a rank-dependent condition, or
// inside a lambda, is a serial use of both arrays (only some workers, or some threads, would make
// it, so it cannot be collective).
#include <tessera/tessera.h>

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  tessera::DocwordOptions read;
  read.tokens = true;
  auto loaded = tessera::load_docword(ctx, argv[1], read);
  if (!loaded.ok()) return 1;
  auto& tokens = loaded->tokens;
  auto tokens_w =
      tokens.permuted({1, 0, 2});
  for (int sweep = 0; sweep < 2; ++sweep) {
    tokens_w.assign_permuted(tokens, {1, 0, 2});
    tessera::parallel_for(tokens_w, [&](const tessera::Key<3>& key, int64_t& v) {  // expected-remark {{parallel_for over 'tokens_w' partitioned 1D (space: key[0]); 'tokens_w' local}}
      auto row = tokens_w.sparse_row(key[0]);
      v = v + row.value(0);
    });
    tokens.assign_permuted(tokens_w, {1, 0, 2});
    tessera::parallel_for(tokens, [&](const tessera::Key<3>& key, int64_t& v) {  // expected-remark {{parallel_for over 'tokens' independent (space: key[0]); 'tokens' local}}
      v += key[2];
    });
  }
  // Under a rank condition, and inside a lambda: serial uses.
  auto a = tessera::DistArray<int64_t, 2>::sparse(ctx, {4, 4});
  auto b = tessera::DistArray<int64_t, 2>::sparse(ctx, {4, 4});
  auto c = tessera::DistArray<int64_t, 2>::sparse(ctx, {4, 4});
  auto d = tessera::DistArray<int64_t, 2>::sparse(ctx, {4, 4});
  if (ctx.job().rank == 0) b.assign_permuted(a, {1, 0});
  auto later = [&] { d.assign_permuted(c, {1, 0}); };
  later();
  tessera::parallel_for(a, [&](const tessera::Key<2>& key, int64_t& v) {  // expected-remark {{parallel_for over 'a' independent (space: key[0]); 'a' local}}
    v += key[1];
  });
  tessera::parallel_for(b, [&](const tessera::Key<2>& key, int64_t& v) {  // expected-remark {{parallel_for over 'b' independent (space: key[0]); 'b' local}}
    v += key[1];
  });
  tessera::parallel_for(c, [&](const tessera::Key<2>& key, int64_t& v) {  // expected-remark {{parallel_for over 'c' independent (space: key[0]); 'c' local}}
    v += key[1];
  });
  tessera::parallel_for(d, [&](const tessera::Key<2>& key, int64_t& v) {  // expected-remark {{parallel_for over 'd' independent (space: key[0]); 'd' local}}
    v += key[1];
  });
  return 0;
}
// JSON: "name": "tokens_w",
// JSON: "origin": {"file": "{{.*}}assign_permuted_is_bulk_use.cc", "line": 18, "column": 14, "member": ""},
// JSON-NEXT: "loop_only": true,
// JSON: "name": "tokens",
// JSON: "origin": {"file": "{{.*}}assign_permuted_is_bulk_use.cc", "line": 14, "column": 17, "member": "tokens"},
// JSON-NEXT: "loop_only": true,
// JSON: "name": "a",
// JSON: "loop_only": false,
// JSON-NEXT: "serial_use": "line 35"
// JSON: "name": "b",
// JSON: "loop_only": false,
// JSON-NEXT: "serial_use": "line 35"
// JSON: "name": "c",
// JSON: "loop_only": false,
// JSON-NEXT: "serial_use": "line 36"
// JSON: "name": "d",
// JSON: "loop_only": false,
// JSON-NEXT: "serial_use": "line 36"
