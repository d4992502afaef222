// End-to-end check of tessera_add_program: this program is built with its schedules embedded by
// tessc, and checks through the runtime's own lookup (Context -> LoopSite::schedule) that each of
// its parallel_for calls finds the schedule tessc chose for it, and that a loop tessc runs serially
// finds no schedule but tessc's entry saying so. Exit status 0 on success.
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <tessera/tessera.h>

namespace {

// Records what the runtime hands the executor for each loop, then runs the loop serially.
class RecordingExecutor : public tessera::Executor {
 public:
  explicit RecordingExecutor(std::vector<std::string>* seen) : seen_(seen) {}
  std::string_view name() const override { return "recording"; }
  void Run(const tessera::LoopSite& site, const tessera::internal::ArrayBase& space,
           const tessera::LoopTask& task) override {
    if (site.schedule != nullptr) {
      seen_->push_back(site.schedule->json);
    } else if (site.no_schedule == tessera::NoScheduleCause::kTesscSerial &&
               site.serial_entry != nullptr) {
      seen_->push_back(std::string("tessc-serial ") + site.serial_entry->json);
    } else {
      seen_->push_back("<none>");
    }
    serial_->Run(site, space, task);
  }

 private:
  std::vector<std::string>* seen_;
  std::unique_ptr<tessera::Executor> serial_ = tessera::MakeSerialExecutor();
};

bool Expect(const std::string& json, const std::string& needle, const char* what) {
  if (json.find(needle) != std::string::npos) return true;
  std::fprintf(stderr, "FAIL: %s: schedule lacks %s\n  schedule: %s\n", what, needle.c_str(),
               json.c_str());
  return false;
}

}  // namespace

int main() {
  std::vector<std::string> seen;
  tessera::ContextOptions options;
  options.executor = std::make_unique<RecordingExecutor>(&seen);
  options.read_environment = false;
  tessera::Context ctx(std::move(options));

  auto ratings = tessera::DistArray<float, 2>::sparse(ctx, {4, 4});
  ratings(0, 1) = 1.0f;
  ratings(2, 3) = 2.0f;
  auto W = tessera::DistArray<float, 2>::filled(ctx, {4, 2}, 1.0f);
  auto H = tessera::DistArray<float, 2>::filled(ctx, {4, 2}, 1.0f);

  const std::string first_line = "\"line\":" + std::to_string(__LINE__ + 1);
  tessera::parallel_for(W, [&](const tessera::Key<2>&, float& w) { w *= 0.5f; });
  const std::string second_line = "\"line\":" + std::to_string(__LINE__ + 1);
  tessera::parallel_for(ratings, [&](const tessera::Key<2>& key, float& r) {
    W(key[0], 0) += r * H(key[1], 0);
    H(key[1], 0) += r * W(key[0], 0);
  });
  // tessc runs this one serially (it writes `total`, shared by every iteration; tessc warns).
  float total = 0;
  const std::string third_line = "\"line\":" + std::to_string(__LINE__ + 1);
  tessera::parallel_for(W, [&](const tessera::Key<2>&, float& w) { total += w; });

  bool ok = seen.size() == 3;
  if (!ok) std::fprintf(stderr, "FAIL: expected 3 loops, saw %zu\n", seen.size());
  if (ok) {
    ok &= Expect(seen[0], "\"strategy\":\"independent\"", "first loop");
    ok &= Expect(seen[0], first_line, "first loop");
    ok &= Expect(seen[1], "\"strategy\":\"2d\"", "second loop");
    ok &= Expect(seen[1], second_line, "second loop");
    ok &= Expect(seen[1], "{\"name\":\"H\",\"placement\":\"rotating\"", "second loop");
    ok &= Expect(seen[2], "tessc-serial {", "third loop");
    ok &= Expect(seen[2], "\"strategy\":\"serial\"", "third loop");
    ok &= Expect(seen[2], third_line, "third loop");
    ok &= Expect(seen[2], "'total' writes 'total'", "third loop");
  }
  // The loops ran (serially) with the program's semantics: W(0,0) = 0.5 + 1 * 1.
  if (W(0, 0) != 1.5f) {
    std::fprintf(stderr, "FAIL: W(0, 0) = %f, expected 1.5\n", static_cast<double>(W(0, 0)));
    ok = false;
  }
  // Eight elements of 0.5, of which two grew by 1 and 2.
  if (total != 7.0f) {
    std::fprintf(stderr, "FAIL: total = %f, expected 7\n", static_cast<double>(total));
    ok = false;
  }
  std::printf("%s: %zu loop(s) found their embedded schedules\n", ok ? "OK" : "FAILED",
              seen.size());
  return ok ? 0 : 1;
}
