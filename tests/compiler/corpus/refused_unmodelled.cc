// Statements tessc does not model (inline assembly, a GNU statement expression), a lock, and a
// class whose constructor writes a global: each makes the loop run serially.
#include <mutex>

#include <tessera/tessera.h>

int64_t g_made = 0;
struct Counted {
  Counted() { ++g_made; }  // expected-note {{cannot see through: 'g_made' writes 'g_made', state outside the loop body that every iteration shares}}
  int64_t value = 1;
};

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto P = tessera::DistArray<int64_t, 1>::dense(ctx, {100});
  std::mutex mu;
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) {  // expected-warning {{parallel_for over 'P' will run serially}}
    asm volatile("" ::: "memory");  // expected-note {{cannot see through: tessc does not model a GCCAsmStmt in a loop body}}
    v += 1;
  });
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) {  // expected-warning {{parallel_for over 'P' will run serially}}
    v = ({ int64_t t = v; t + 1; });  // expected-note {{cannot see through: tessc does not model a StmtExpr in a loop body}}
  });
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) {  // expected-warning {{parallel_for over 'P' will run serially}}
    std::lock_guard<std::mutex> lock(mu);  // expected-note {{cannot see through: 'std::lock_guard' synchronizes threads}} expected-note {{cannot see through: 'mu' writes 'mu'}}
    v += 1;
  });
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) {  // expected-warning {{parallel_for over 'P' will run serially}}
    Counted c;
    v += c.value;
  });
}
