#include "tessera/launcher/restarts.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "tessera/transport/liveness.h"

namespace tessera::launcher {
namespace {

bool HoldsCheckpoints(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return false;
  bool any = false;
  while (dirent* e = ::readdir(d)) any = any || std::string_view(e->d_name).starts_with("ckpt-");
  ::closedir(d);
  return any;
}

}  // namespace

Status PrepareCheckpointFlags(CheckpointFlags* flags) {
  if (flags->max_restarts < 0) {
    return Status::InvalidArgument("--max-restarts must be >= 0");
  }
  if (!(flags->interval_seconds >= 0)) {
    return Status::InvalidArgument("--checkpoint-interval must be a number of seconds >= 0");
  }
  if (flags->dir.empty()) {
    if (flags->resume) return Status::InvalidArgument("--resume needs --checkpoint-dir");
    if (flags->max_restarts > 0) {
      return Status::InvalidArgument(
          "--max-restarts needs --checkpoint-dir (a restart continues "
          "from the last checkpoint)");
    }
    return Status::Ok();
  }
  const std::string& dir = flags->dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    return Status::InvalidArgument(fmt::format("--checkpoint-dir {}: cannot create it: {}", dir,
                                               ec ? ec.message() : std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument(
        fmt::format("--checkpoint-dir {}: exists and is not a directory", dir));
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return Status::InvalidArgument(fmt::format("--checkpoint-dir {}: cannot create files in it: {}",
                                               dir, std::strerror(errno)));
  }
  if (!flags->resume && HoldsCheckpoints(dir)) {
    return Status::InvalidArgument(fmt::format(
        "--checkpoint-dir {} already holds checkpoints: add --resume to continue from the newest "
        "one, or choose an empty directory",
        dir));
  }
  flags->dir = std::filesystem::absolute(dir, ec).lexically_normal().string();
  return Status::Ok();
}

EnvList CheckpointEnv(const CheckpointFlags& flags) {
  EnvList env;
  if (flags.dir.empty()) return env;
  env.emplace_back(kEnvCheckpointDir, flags.dir);
  env.emplace_back(kEnvCheckpointInterval, fmt::format("{:g}", flags.interval_seconds));
  if (flags.resume) env.emplace_back(kEnvResume, "1");
  return env;
}

bool Restartable(int exit_code) {
  return exit_code > 128 || exit_code == kExitUnresponsive || exit_code == kExitJobFailed;
}

Result<int> RunJobWithRestarts(const RunOptions& options, const RunIo& io, int max_restarts,
                               const std::function<bool()>& cancelled) {
  RunOptions attempt = options;
  for (int restart = 0;; ++restart) {
    Result<int> code = RunJob(attempt, io);
    if (!code.ok() || *code == 0 || restart >= max_restarts || cancelled() || !Restartable(*code)) {
      return code;
    }
    spdlog::warn(
        "the job failed (exit {}); restarting it from its newest checkpoint (restart {} "
        "of {})",
        *code, restart + 1, max_restarts);
    bool resume_set = false;
    for (auto& [name, value] : attempt.job.extra_env) {
      if (name == kEnvResume) {
        value.assign(1, '1');  // not `= "1"`: g++ 12 warns falsely (-Wrestrict) on that
        resume_set = true;
      }
    }
    if (!resume_set) attempt.job.extra_env.emplace_back(kEnvResume, "1");
  }
}

}  // namespace tessera::launcher
