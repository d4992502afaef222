// The command-line manners of every binary a user runs: --version from the project version,
// every flag described with its default, and mf/lda's --threads (TESSERA_THREADS as default, a
// malformed value an error).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/version.h"
#include "tests/support/run_command.h"

namespace tessera {
namespace {

using testing::RunCommand;
using testing::RunResult;

std::string Bin(const std::string& name) {
  const char* dir = std::getenv("TESSERA_BIN_DIR");
  return std::string(dir != nullptr ? dir : ".") + "/" + name;
}

// Runs a binary with a clean TESSERA_* environment plus `env` (e.g. "TESSERA_THREADS=2").
RunResult RunBinary(const std::string& binary, const std::string& args,
                    const std::string& env = "") {
  return RunCommand("env -u TESSERA_THREADS -u TESSERA_LOG_LEVEL -u TESSERA_ROLE " + env + " " +
                    Bin(binary) + " " + args);
}

const std::vector<std::string> kBinaries = {"tessc", "tessera", "tessera-server",
                                            "mf",    "lda",     "ps_demo", "corpus"};

TEST(CliTest, EveryBinaryPrintsTheProjectVersion) {
  for (const std::string& b : kBinaries) {
    RunResult r = RunBinary(b, "--version");
    EXPECT_EQ(r.exit_code, 0) << b << ": " << r.output;
    EXPECT_EQ(r.output, b + " " + TESSERA_VERSION_STRING + "\n") << b;
  }
}

// One option of CLI11's --help: its first line (names, type, "=default", REQUIRED) and the rest.
struct HelpOption {
  std::string names_and_type;
  std::string description;
};

// CLI11 pads "  <names>" to 30 columns and starts the description there; names that do not fit
// take the whole line and the description follows on the next lines, indented by 30.
std::vector<HelpOption> ParseHelp(const std::string& help) {
  constexpr size_t kColumn = 30;
  std::vector<std::string> lines;
  std::istringstream in(help);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  auto trim = [](const std::string& t) {
    const size_t b = t.find_first_not_of(' ');
    const size_t e = t.find_last_not_of(' ');
    return b == std::string::npos ? std::string() : t.substr(b, e - b + 1);
  };
  std::vector<HelpOption> options;
  bool in_options = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line == "Options:" || line == "Positionals:") {
      in_options = true;
    } else if (line.empty()) {
      in_options = false;
    } else if (in_options && line.size() > 2 && line[2] != ' ') {
      const bool continued = i + 1 < lines.size() && lines[i + 1].size() > kColumn &&
                             lines[i + 1].find_first_not_of(' ') == kColumn;
      HelpOption o;
      o.names_and_type = trim(continued ? line : line.substr(0, std::min(kColumn, line.size())));
      if (!continued && line.size() > kColumn) o.description = trim(line.substr(kColumn));
      options.push_back(o);
    } else if (in_options && !options.empty()) {
      options.back().description += (options.back().description.empty() ? "" : " ") + trim(line);
    }
  }
  return options;
}

TEST(CliTest, EveryFlagIsDescribedWithItsDefault) {
  const std::vector<std::pair<std::string, std::string>> helps = {
      {"tessc", "--help"},          {"tessera", "--help"}, {"tessera", "run --help"},
      {"tessera-server", "--help"}, {"mf", "--help"},      {"lda", "--help"}, {"corpus", "--help"},
      {"ps_demo", "--help"}};
  for (const auto& [binary, args] : helps) {
    RunResult r = RunBinary(binary, args);
    ASSERT_EQ(r.exit_code, 0) << binary << " " << args << ": " << r.output;
    std::vector<HelpOption> options = ParseHelp(r.output);
    ASSERT_GE(options.size(), 2u) << binary << " " << args << ": " << r.output;
    for (const HelpOption& o : options) {
      const std::string what = binary + " " + args + ": " + o.names_and_type;
      EXPECT_FALSE(o.description.empty()) << what << " has no description";
      // A flag that takes a value (its names are followed by a type) says what it is when absent.
      const size_t names_end = o.names_and_type.find(' ');
      if (names_end == std::string::npos) continue;  // a switch: off unless given
      const bool shows_default = o.names_and_type.find('=') != std::string::npos ||
                                 o.names_and_type.find("REQUIRED") != std::string::npos ||
                                 o.description.find("(default") != std::string::npos;
      EXPECT_TRUE(shows_default) << what << " -- " << o.description;
    }
  }
}

TEST(CliTest, HelpParserSeesAFlagWithoutADefault) {
  // The check above must be able to fail: a value flag with neither "=" nor "(default".
  std::vector<HelpOption> o = ParseHelp(
      "Options:\n  -h,--help                   Print this help message and exit\n"
      "  --out TEXT                  where to write\n"
      "  --a-long-flag-name INT:POSITIVE=1\n"
      "                              described below\n"
      "  --full TEXT:{a,b,cc}=cc     a description at column 30\n"
      "\nOther section:\n  --not-an-option TEXT\n");
  ASSERT_EQ(o.size(), 4u);
  EXPECT_EQ(o[1].names_and_type, "--out TEXT");
  EXPECT_EQ(o[1].description, "where to write");
  EXPECT_EQ(o[2].names_and_type, "--a-long-flag-name INT:POSITIVE=1");
  EXPECT_EQ(o[2].description, "described below");
  EXPECT_EQ(o[3].names_and_type, "--full TEXT:{a,b,cc}=cc");
  EXPECT_EQ(o[3].description, "a description at column 30");
}

// A scratch directory with a tiny ratings file and a tiny UCI docword corpus.
class AppThreadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tessera_cli_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    std::ofstream ratings(dir_ / "ratings.txt");
    for (int u = 1; u <= 12; ++u) {
      for (int i = 1; i <= 9; i += 1 + u % 3)
        ratings << u << " " << i << " " << (u + i) % 5 + 1 << "\n";
    }
    std::ofstream docword(dir_ / "docword.txt");
    docword << "6\n8\n24\n";
    for (int d = 1; d <= 6; ++d) {
      for (int w = 1; w <= 4; ++w) docword << d << " " << (d + w) % 8 + 1 << " " << w << "\n";
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Mf(const std::string& flags, const std::string& env = "") {
    RunResult r = RunBinary("mf",
                            "--train " + (dir_ / "ratings.txt").string() +
                                " --epochs 1 -k 2 --log-level debug " + flags,
                            env);
    exit_code_ = r.exit_code;
    return r.output;
  }
  std::string Lda(const std::string& flags, const std::string& env = "") {
    RunResult r = RunBinary("lda",
                            "--docword " + (dir_ / "docword.txt").string() +
                                " --topics 2 --iterations 1 --log-level debug " + flags,
                            env);
    exit_code_ = r.exit_code;
    return r.output;
  }

  std::filesystem::path dir_;
  int exit_code_ = -1;
};

TEST_F(AppThreadsTest, ThreadsFlagRunsTheParallelExecutor) {
  std::string out = Mf("--threads 2");
  EXPECT_EQ(exit_code_, 0) << out;
  EXPECT_NE(out.find("executor=parallel"), std::string::npos) << out;
  out = Mf("");
  EXPECT_EQ(exit_code_, 0) << out;
  EXPECT_NE(out.find("executor=serial"), std::string::npos) << out;
  out = Lda("--threads 2");
  EXPECT_EQ(exit_code_, 0) << out;
  EXPECT_NE(out.find("executor=parallel"), std::string::npos) << out;
}

TEST_F(AppThreadsTest, TesseraThreadsIsTheDefault) {
  std::string out = Mf("", "TESSERA_THREADS=2");
  EXPECT_EQ(exit_code_, 0) << out;
  EXPECT_NE(out.find("executor=parallel"), std::string::npos) << out;
  out = Lda("", "TESSERA_THREADS=2");
  EXPECT_EQ(exit_code_, 0) << out;
  EXPECT_NE(out.find("executor=parallel"), std::string::npos) << out;
  // The flag wins over the environment.
  out = Mf("--threads 1", "TESSERA_THREADS=2");
  EXPECT_EQ(exit_code_, 0) << out;
  EXPECT_NE(out.find("executor=serial"), std::string::npos) << out;
}

TEST_F(AppThreadsTest, AMalformedTesseraThreadsIsAnError) {
  for (const char* bad : {"abc", "0", "2x", "64"}) {
    const std::string env = std::string("TESSERA_THREADS=") + bad;
    std::string out = Mf("", env);
    EXPECT_EQ(exit_code_, 2) << bad << ": " << out;
    EXPECT_NE(out.find("mf: TESSERA_THREADS='" + std::string(bad) +
                       "' is not a number of executor threads"),
              std::string::npos)
        << out;
    EXPECT_EQ(out.find("epoch"), std::string::npos) << "trained anyway: " << out;
    out = Lda("", env);
    EXPECT_EQ(exit_code_, 2) << bad << ": " << out;
    EXPECT_NE(out.find("lda: TESSERA_THREADS='" + std::string(bad) + "'"), std::string::npos)
        << out;
  }
}

TEST_F(AppThreadsTest, ABadThreadsFlagIsAnError) {
  for (const char* bad : {"0", "64", "two"}) {
    std::string out = Mf(std::string("--threads ") + bad);
    EXPECT_NE(exit_code_, 0) << out;
    EXPECT_NE(out.find("--threads"), std::string::npos) << out;
    out = Lda(std::string("--threads ") + bad);
    EXPECT_NE(exit_code_, 0) << out;
    EXPECT_NE(out.find("--threads"), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace tessera
