// A Tessera program for the launcher's output tests: it reads neither TESSERA_LOG_LEVEL nor any
// flag, so what it logs shows what the runtime set up for it. Logs one line per level of
// interest, prints "probe: first line" without flushing, then (with PROBE_GO_FILE set) waits for
// that file to exist before printing "probe: second line": under a block-buffered stdout the first
// line would not reach the launcher before the file exists, and the test would time out.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "tessera/tessera.h"

int main(int argc, char** argv) {
  tessera::Context ctx(argc, argv);
  spdlog::debug("probe: debug line");
  spdlog::info("probe: info line");
  spdlog::warn("probe: warning line");
  std::printf("probe: first line\n");
  if (const char* go = std::getenv("PROBE_GO_FILE"); go != nullptr) {
    // Bounded: a test that never creates the file fails on its own timeout, not ours.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (::access(go, F_OK) != 0) {
      if (std::chrono::steady_clock::now() > deadline) return 4;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  std::printf("probe: second line\n");
  return 0;
}
