// The parameter-server demo as a user runs it: `tessera run -w 2 -s 2 -- ps_demo`, real
// processes over tcp. The loss must fall to near the noise floor (0.5 * 0.1^2 = 0.005).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <sstream>
#include <string>

namespace {

std::string RunCommand(const std::string& command, int* exit_code) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  int status = pclose(pipe);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// The last loss worker 0 printed ("[worker 0]   30   0.00499   977163").
double LastLoss(const std::string& out) {
  std::istringstream in(out);
  std::string line;
  double loss = -1;
  while (std::getline(in, line)) {
    if (line.rfind("[worker 0]", 0) != 0) continue;
    std::istringstream fields(line.substr(10));
    int clock;
    double l;
    if (fields >> clock >> l) loss = l;
  }
  return loss;
}

TEST(DemoEndToEndTest, TwoWorkersTwoServersConverge) {
  int code = -1;
  std::string out =
      RunCommand(std::string(TESSERA_LAUNCHER_BIN) + " run -w 2 -s 2 --log-level warn -- " +
                     TESSERA_PS_DEMO_BIN + " --clocks 40 --staleness 2 2>&1",
                 &code);
  EXPECT_EQ(code, 0) << out;
  double loss = LastLoss(out);
  EXPECT_GT(loss, 0.0) << out;
  EXPECT_LT(loss, 0.01) << out;
}

TEST(DemoEndToEndTest, AloneItRunsAsAOneProcessJob) {
  int code = -1;
  std::string out = RunCommand(std::string(TESSERA_PS_DEMO_BIN) + " --clocks 40 2>&1", &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("loss"), std::string::npos) << out;
}

}  // namespace
