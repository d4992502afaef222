// tessera-server: runs the job's coordinator or one server shard.
//
//   tessera-server --role coordinator --listen tcp://127.0.0.1:0 --endpoint-file F
//                  --num-servers S --num-workers W
//   tessera-server --role server --rank I --coordinator tcp://HOST:PORT
//
// Every flag falls back to the launcher's environment (TESSERA_ROLE, TESSERA_RANK,
// TESSERA_NUM_SERVERS, TESSERA_NUM_WORKERS, TESSERA_COORDINATOR, TESSERA_BIND_HOST,
// TESSERA_JOB_SECRET, TESSERA_LOG_LEVEL, TESSERA_ENDPOINT_FILE), so `tessera run` may pass
// either; for a coordinator TESSERA_COORDINATOR is the address to listen on. Managed
// communication: TESSERA_COMM_POLICY and TESSERA_COMM_BYTES_PER_SECOND (the job's budget).
// Liveness: TESSERA_HEARTBEAT_TIMEOUT (--heartbeat-timeout), see docs/faults.md. A coordinator
// that failed the job itself (no launcher watching) exits with the failure's code.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tessera/common/logging.h"
#include "tessera/server/coordinator.h"
#include "tessera/server/server.h"
#include "tessera/transport/liveness.h"
#include "tessera/version.h"

namespace {

std::string EnvOr(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

// Writes atomically so a launcher polling for the file never reads half an endpoint.
tessera::Status WriteEndpointFile(const std::string& path, const std::string& endpoint) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << endpoint << "\n";
    if (!out) return tessera::Status::InvalidArgument("cannot write endpoint file " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return tessera::Status::InvalidArgument("cannot rename " + tmp + ": " + ec.message());
  return tessera::Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  // Line-buffered under the launcher; the level is parsed again below, with the flags.
  (void)tessera::ApplyJobOutputDefaults();
  CLI::App app{"Tessera parameter-server node (coordinator or server shard)"};
  app.set_version_flag("--version", std::string("tessera-server ") + tessera::kVersion);
  app.option_defaults()->always_capture_default();
  std::string role = EnvOr("TESSERA_ROLE", "");
  std::string listen;
  std::string endpoint_file = EnvOr("TESSERA_ENDPOINT_FILE", "");
  std::string coordinator = EnvOr("TESSERA_COORDINATOR", "");
  std::string secret = EnvOr("TESSERA_JOB_SECRET", "");
  std::string log_level = EnvOr("TESSERA_LOG_LEVEL", "info");
  int rank = std::atoi(EnvOr("TESSERA_RANK", "0").c_str());
  int num_servers = std::atoi(EnvOr("TESSERA_NUM_SERVERS", "1").c_str());
  int num_workers = std::atoi(EnvOr("TESSERA_NUM_WORKERS", "1").c_str());
  std::string bind_host = EnvOr("TESSERA_BIND_HOST", "127.0.0.1");
  std::string heartbeat_timeout = EnvOr(tessera::kEnvHeartbeatTimeout, "");

  app.add_option("--role", role, "coordinator or server (default: TESSERA_ROLE)")
      ->check(CLI::IsMember({"coordinator", "server"}))
      ->required(role.empty());
  app.add_option(
      "--listen", listen,
      "endpoint to bind (tcp port 0 = ephemeral) (default: a coordinator's TESSERA_COORDINATOR, "
      "else tcp://TESSERA_BIND_HOST:0, that is tcp://127.0.0.1:0)");
  app.add_option(
      "--endpoint-file", endpoint_file,
      "coordinator: write the bound endpoint here (default: TESSERA_ENDPOINT_FILE, else none)");
  app.add_option("--coordinator", coordinator,
                 "server: the coordinator's endpoint (default: TESSERA_COORDINATOR)");
  app.add_option("--rank", rank, "server: this server's rank (default: TESSERA_RANK, else 0)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--num-servers", num_servers,
                 "coordinator: servers in the job (default: TESSERA_NUM_SERVERS, else 1)")
      ->check(CLI::PositiveNumber);
  app.add_option("--num-workers", num_workers,
                 "coordinator: workers in the job (default: TESSERA_NUM_WORKERS, else 1)")
      ->check(CLI::PositiveNumber);
  app.add_option("--secret", secret,
                 "job secret required from every node (default: TESSERA_JOB_SECRET, else none)");
  app.add_option("--log-level", log_level,
                 "trace, debug, info, warn, error, critical or off (default: "
                 "TESSERA_LOG_LEVEL, else info)");
  app.add_option("--heartbeat-timeout", heartbeat_timeout,
                 "seconds a process may stay unheard before the job fails, 0: no checks "
                 "(default: TESSERA_HEARTBEAT_TIMEOUT, else 10)");
  CLI11_PARSE(app, argc, argv);
  auto liveness_timeout =
      heartbeat_timeout.empty()
          ? tessera::Result<std::chrono::milliseconds>(tessera::kDefaultHeartbeatTimeout)
          : tessera::ParseHeartbeatTimeout(heartbeat_timeout, "--heartbeat-timeout");
  if (!liveness_timeout.ok()) {
    spdlog::error("{}", liveness_timeout.status().message());
    return 2;
  }

  if (auto s = tessera::SetLogLevel(log_level); !s.ok()) {
    spdlog::error("{}", s.ToString());
    return 2;
  }
  if (listen.empty()) {
    // The launcher tells a coordinator where to listen through TESSERA_COORDINATOR.
    listen =
        role == "coordinator" && !coordinator.empty() ? coordinator : "tcp://" + bind_host + ":0";
  }

  zmq::context_t context;
  if (role == "coordinator") {
    tessera::CoordinatorOptions options;
    options.listen = listen;
    options.num_servers = num_servers;
    options.num_workers = num_workers;
    options.secret = secret;
    options.heartbeat_timeout = *liveness_timeout;
    tessera::Coordinator node(options, context);
    if (auto s = node.Start(); !s.ok()) {
      spdlog::error("coordinator: {}", s.ToString());
      return 1;
    }
    if (!endpoint_file.empty()) {
      if (auto s = WriteEndpointFile(endpoint_file, node.endpoint()); !s.ok()) {
        spdlog::error("coordinator: {}", s.ToString());
        return 1;
      }
    }
    node.WaitUntilDone();
    return node.exit_code();
  }
  if (coordinator.empty()) {
    spdlog::error("server: no coordinator endpoint (--coordinator or TESSERA_COORDINATOR)");
    return 2;
  }
  tessera::ServerOptions options;
  options.rank = rank;
  options.coordinator = coordinator;
  options.listen = listen;
  options.secret = secret;
  options.heartbeat_timeout = *liveness_timeout;
  options.checkpoint_dir = EnvOr("TESSERA_CHECKPOINT_DIR", "");  // tessera run --checkpoint-dir
  // Managed communication: the job's budget (TESSERA_COMM_*), shared by the servers.
  auto comm = tessera::CommOptionsFromEnv(num_servers);
  if (!comm.ok()) {
    spdlog::error("server {}: {}", rank, comm.status().ToString());
    return 2;
  }
  options.comm = *comm;
  tessera::Server node(options, context);
  if (auto s = node.Start(); !s.ok()) {
    spdlog::error("server {}: {}", rank, s.ToString());
    return 1;
  }
  node.WaitUntilDone();
  return 0;
}
