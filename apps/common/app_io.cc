#include "common/app_io.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace tessera::apps {

namespace fs = std::filesystem;

Status CheckInputFile(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return Status::NotFound(fmt::format("'{}' does not exist", path));
  if (fs::is_directory(path, ec)) {
    return Status::InvalidArgument(fmt::format("'{}' is a directory, not a file", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::InvalidArgument(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  }
  return Status::Ok();
}

Status CheckOutputFile(const std::string& path) {
  std::error_code ec;
  if (path.empty()) return Status::InvalidArgument("empty output path");
  if (fs::is_directory(path, ec)) {
    return Status::InvalidArgument(fmt::format("cannot write '{}': it is a directory", path));
  }
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    return Status::NotFound(
        fmt::format("cannot write '{}': directory '{}' does not exist", path, parent.string()));
  }
  const bool existed = fs::exists(path, ec);
  // Append mode: an existing file is neither truncated nor changed by the check.
  std::FILE* f = std::fopen(path.c_str(), "ab");
  if (f == nullptr) {
    return Status::InvalidArgument(
        fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  }
  std::fclose(f);
  if (!existed) std::remove(path.c_str());
  return Status::Ok();
}

Status PrepareOutputDir(const std::string& dir) {
  std::error_code ec;
  if (dir.empty()) return Status::InvalidArgument("empty directory path");
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    return Status::InvalidArgument(fmt::format("'{}' exists and is not a directory", dir));
  }
  fs::create_directories(dir, ec);
  if (ec) {
    return Status::InvalidArgument(
        fmt::format("cannot create directory '{}': {}", dir, ec.message()));
  }
  const std::string probe = (fs::path(dir) / fmt::format(".write-test-{}", ::getpid())).string();
  std::FILE* f = std::fopen(probe.c_str(), "wb");
  if (f == nullptr) {
    return Status::InvalidArgument(
        fmt::format("cannot write in directory '{}': {}", dir, std::strerror(errno)));
  }
  std::fclose(f);
  std::remove(probe.c_str());
  return Status::Ok();
}

Status CheckModelDir(const std::string& dir, const std::vector<std::string>& files) {
  std::error_code ec;
  if (!fs::exists(dir, ec))
    return Status::NotFound(fmt::format("model directory '{}' does not exist", dir));
  if (!fs::is_directory(dir, ec)) {
    return Status::InvalidArgument(fmt::format("'{}' is not a model directory", dir));
  }
  for (const std::string& name : files) {
    const fs::path p = fs::path(dir) / name;
    if (!fs::exists(p, ec)) {
      return Status::NotFound(
          fmt::format("model directory '{}' has no {} (written by --save-model)", dir, name));
    }
  }
  return Status::Ok();
}

}  // namespace tessera::apps
