// Reads of the previous element through an accessor method, a std::vector of arrays and a pointer
// to a DistArray loaded from memory: each expression may name any array of its type, so the read
// counts against P, which the loop writes: a recurrence, reported as an error. (The lookup by key
// into an array tessc cannot prove dense is a second reason it could not run in parallel.)
#include <vector>

#include <tessera/tessera.h>

using Array = tessera::DistArray<int64_t, 1>;

struct Model {
  Array* p;
  Array& P() { return *p; }
};

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto P = Array::dense(ctx, {100});
  Model m{&P};
  std::vector<Array*> arrays{&P};
  Array* ptr = arrays[0];
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) {  // expected-note {{to run it anyway, make 'P' a tessera::RelaxedArray}}
    if (key[0] > 0) v += m.P()(key[0] - 1);  // expected-error {{accesses to 'P' conflict across iterations with dependence vector (1)}} expected-note {{conflicting access to 'P'}} expected-note {{cannot see through: 'expression at line 23' is looked up by key (operator())}} expected-note {{conservative: 'expression at line 23' may name any array of its type}}
  });
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) {  // expected-note {{to run it anyway, make 'P' a tessera::RelaxedArray}}
    if (key[0] > 0) v += (*arrays[0])(key[0] - 1);  // expected-error {{accesses to 'P' conflict across iterations with dependence vector (1)}} expected-note {{conflicting access to 'P'}} expected-note {{cannot see through: 'expression at line 26' is looked up by key (operator())}} expected-note {{conservative: 'expression at line 26' may name any array of its type}}
  });
  tessera::parallel_for(P, [&](const tessera::Key<1>& key, int64_t& v) {  // expected-note {{to run it anyway, make 'P' a tessera::RelaxedArray}}
    if (key[0] > 0) v += ptr->get({{key[0] - 1}});  // expected-error {{accesses to 'P' conflict across iterations with dependence vector (1)}} expected-note {{conflicting access to 'P'}} expected-note {{conservative: 'ptr' may name any array of its type}}
  });
}
