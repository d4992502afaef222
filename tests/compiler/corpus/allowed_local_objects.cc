// Body-local C arrays and structs, a class of the program whose constructor and destructor touch
// only the object, and small index helpers in the same file keep the parallel schedule.
#include <tessera/tessera.h>

namespace {

int64_t Left(int64_t i) { return i; }
int64_t Clamped(int64_t i, int64_t n) { return i < n ? i : n - 1; }

struct Pair {
  double lo, hi;
};

class Window {
 public:
  explicit Window(double x) : sum_(x) { count_ = 1; }
  ~Window() { sum_ = 0; }
  void Add(double x) {
    sum_ += x;
    ++count_;
  }
  double Mean() const { return sum_ / count_; }

 private:
  double sum_;
  int count_;
};

}  // namespace

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  auto A = tessera::DistArray<double, 2>::dense(ctx, {100, 4});
  auto out = tessera::DistArray<double, 1>::dense(ctx, {100});
  tessera::parallel_for(out, [&](const tessera::Key<1>& key, double& v) {  // expected-remark {{independent (space: key[0]); 'out' local, 'A' replicated}}
    double buf[4];
    for (int j = 0; j < 4; ++j) buf[j] = A(Left(key[0]), j);
    Pair p{buf[0], buf[3]};
    Window w(p.lo);
    w.Add(p.hi);
    w.Add(A(Clamped(key[0], 100), 1));
    v = w.Mean();
  });
}
