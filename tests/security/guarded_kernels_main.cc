// A Tessera program for the security tests: joins the job, then (with PAUSE_PREFIX) waits until
// the test has attacked every port of the running job and says go, then runs the runtime_parallel
// kernels and writes one line per kernel -- name, element count, FNV-1a hash of the values -- to
// OUT.<rank>. Run alone (no PAUSE_PREFIX) it is the serial reference.
#include <fcntl.h>
#include <tessera/tessera.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "kernels.h"

namespace {

uint64_t Fnv1a(const std::vector<int64_t>& values) {
  uint64_t h = 1469598103934665603ULL;
  for (int64_t v : values) {
    for (int b = 0; b < 8; ++b) {
      h ^= static_cast<uint64_t>(v >> (8 * b)) & 0xff;
      h *= 1099511628211ULL;
    }
  }
  return h;
}

// Blocks until a writer has opened and closed the FIFO `path` (the test's "go").
bool AwaitGo(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  char buf[64];
  while (::read(fd, buf, sizeof(buf)) > 0) {
  }
  ::close(fd);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: %s OUT_PREFIX [PAUSE_PREFIX]\n", argv[0]);
    return 2;
  }
  tessera::Context ctx(argc, argv);  // under tessera run: the peer mesh is up when this returns
  const std::string rank = std::to_string(ctx.job().rank);
  if (argc == 3 && !AwaitGo(std::string(argv[2]) + "." + rank)) {
    std::perror("guarded_kernels: opening the pause FIFO");
    return 3;
  }
  std::ofstream out(std::string(argv[1]) + "." + rank);
  auto emit = [&out](const char* name, const tessera::testing::KernelRun& run) {
    out << name << " " << run.values.size() << " " << Fnv1a(run.values) << "\n";
  };
  using namespace tessera::testing;
  emit("column_recurrence", ColumnRecurrence(ctx, 41, 23));
  emit("sparse_row_fold_reshuffled", SparseRowFoldReshuffled(ctx, 31, 37, 500, 3));
  emit("matrix_update_2d", MatrixUpdate2D(ctx, 61, 43, 1200));
  emit("skewed_wavefront", SkewedWavefront(ctx, 21));
  emit("data_parallel_sums", DataParallelSums(ctx, 40, 16, /*lock_free=*/false));
  return out.good() ? 0 : 1;
}
