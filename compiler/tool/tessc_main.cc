// tessc: analyses the parallel_for loops of Tessera programs.
//
//   tessc [-p build-dir] [--emit=none|json|cpp] [-o out] source... [-- compiler-args...]
//
// Exit status: 0 when every translation unit compiled and every site got a schedule; 1 when a
// site cannot be parallelized or Clang reported an error (diagnostics on stderr); 2 on bad usage.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "tessera/common/logging.h"
#include "tessera/compiler/analyzer.h"
#include "tessera/compiler/schedule_json.h"
#include "tessera/version.h"

namespace {

// An installed tessc carries its own copy of Clang's builtin headers at
// <its directory>/TESSC_INSTALLED_RESOURCE_DIR, so that an installed tree works wherever it is
// moved; the one in the build tree uses the Clang it was built against. Empty when there is none.
std::string InstalledResourceDir() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const std::filesystem::path dir = self.parent_path() / TESSC_INSTALLED_RESOURCE_DIR;
  return std::filesystem::is_directory(dir / "include", ec) ? dir.lexically_normal().string() : "";
}

}  // namespace

int main(int argc, char** argv) {
  // Everything after `--` is the compiler command line, which CLI11 must not parse.
  tessera::compiler::AnalyzerOptions options;
  int own_argc = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      own_argc = i;
      options.have_fixed_args = true;
      for (int j = i + 1; j < argc; ++j) options.fixed_args.push_back(argv[j]);
      break;
    }
  }

  CLI::App app{"tessc: partitions Tessera parallel_for loops (Clang 16 LibTooling)"};
  app.set_version_flag("--version", std::string("tessc ") + tessera::kVersion);
  app.option_defaults()->always_capture_default();
  std::string emit = "none";
  std::string output;
  std::string log_level = "warn";
  std::string depfile;
  app.add_option("sources", options.sources, "Source files to analyse")->required();
  app.add_option(
      "-p,--build-path", options.build_path,
      "Directory with compile_commands.json (flags after -- are appended) (default: none: "
      "the flags after --, else the compile_commands.json found above the sources)");
  app.add_option("--emit", emit, "What to write: none, json (schedules) or cpp (registration)")
      ->check(CLI::IsMember({"none", "json", "cpp"}));
  app.add_option("-o,--output", output, "Output file (default: stdout)");
  app.add_option("--depfile", depfile,
                 "Write a Make-style dependency file for -o (every file the sources include) "
                 "(default: none)");
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error|critical|off");
  app.add_flag("--prefer-data-parallel", options.prefer_data_parallel,
               "Give loops that carry tessera::DataParallel a data_parallel schedule even where a "
               "serializable one is legal (default: the permission only allows it)");
  try {
    app.parse(own_argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  // The compiler arguments are where the resource directory goes (appended, so that Clang takes
  // it over the built-in default); with neither -p nor `--` the database found next to the
  // sources is used as it is.
  if (options.have_fixed_args || !options.build_path.empty()) {
    bool given = false;
    for (const std::string& a : options.fixed_args) given |= a.rfind("-resource-dir", 0) == 0;
    if (const std::string dir = InstalledResourceDir(); !given && !dir.empty()) {
      options.fixed_args.push_back("-resource-dir=" + dir);
      options.have_fixed_args = true;
    }
  }
  if (!depfile.empty() && output.empty()) {
    spdlog::error("tessc: --depfile needs -o");
    return 2;
  }
  if (tessera::Status s = tessera::SetLogLevel(log_level); !s.ok()) {
    spdlog::error("{}", s.ToString());
    return 2;
  }

  tessera::Result<tessera::compiler::AnalysisResult> result = tessera::compiler::Analyze(options);
  if (!result.ok()) {
    spdlog::error("tessc: {}", result.status().message());
    return 2;
  }
  spdlog::info("tessc: {} site(s), {} scheduled, {} serial", result->sites_total,
               result->sites.size(), result->serial_sites.size());
  // Never emit a partial schedule, except under -Xclang -verify (golden tests of diagnostics),
  // where failing sites are expected and the JSON of the others is still checked.
  if (!result->ok) {
    // A schedule file left over from an earlier, successful run must not outlive the error.
    if (!output.empty()) std::remove(output.c_str());
    return 1;
  }

  std::string text;
  if (emit == "json") {
    text = tessera::compiler::PrettyJson(tessera::compiler::TranslationUnitToJson(
        options.sources.size() == 1 ? options.sources.front() : "", result->sites,
        result->serial_sites));
  } else if (emit == "cpp") {
    std::string what;
    for (const std::string& s : options.sources) what += (what.empty() ? "" : ", ") + s;
    text = tessera::compiler::EmitRegistrationCpp(what, result->sites, result->serial_sites);
  } else {
    return 0;
  }
  if (output.empty()) {
    std::cout << text;
    return 0;
  }
  if (!depfile.empty()) {
    // Make syntax: spaces in paths are escaped with a backslash.
    auto escape = [](const std::string& p) {
      std::string o;
      for (char c : p) {
        if (c == ' ') o += '\\';
        o += c;
      }
      return o;
    };
    std::ofstream dep(depfile, std::ios::trunc);
    dep << escape(output) << ":";
    for (const std::string& f : result->dependencies) dep << " \\\n  " << escape(f);
    dep << "\n";
    if (!dep) {
      spdlog::error("tessc: cannot write {}", depfile);
      return 2;
    }
  }
  // Write to a temporary and rename, so an interrupted build never leaves a truncated file.
  const std::string tmp = output + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) {
      spdlog::error("tessc: cannot write {}", tmp);
      return 2;
    }
  }
  if (std::rename(tmp.c_str(), output.c_str()) != 0) {
    spdlog::error("tessc: cannot rename {} to {}", tmp, output);
    return 2;
  }
  return 0;
}
