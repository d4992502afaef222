#include "tessera/launcher/rank_env.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace tessera::launcher {
namespace {

std::map<std::string, std::string> EnvOf(const ProcessSpec& spec) {
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : spec.env) env[k] = v;
  return env;
}

JobOptions OneServerTwoWorkers() {
  JobOptions o;
  o.num_servers = 1;
  o.num_workers = 2;
  o.program = {"./prog", "x"};
  o.server_bin = "/bin/tessera-server";
  o.job_secret = "k";
  return o;
}

// Name resolution and routing without the network: "head" is 10.1.2.1, this node reaches
// anything through 10.1.2.9.
FromEnvOptions Fakes() {
  FromEnvOptions options;
  options.resolve = [](std::string_view host) -> Result<std::string> {
    if (host == "head") return std::string("10.1.2.1");
    if (host == "nowhere") return Status::NotFound("cannot resolve host 'nowhere'");
    return std::string(host);
  };
  options.local_address_toward = [](std::string_view host) -> Result<std::string> {
    if (host == "10.99.99.99") return Status::Unavailable("no route to '10.99.99.99'");
    return std::string("10.1.2.9");
  };
  return options;
}

EnvMap Slurm(int rank, int ntasks) {
  return {{"SLURM_PROCID", std::to_string(rank)},
          {"SLURM_NTASKS", std::to_string(ntasks)},
          {"SLURM_LAUNCH_NODE_IPADDR", "10.1.2.3"},
          {"SLURM_JOB_ID", "4242"},
          {"SLURM_STEP_ID", "0"}};
}

// The coordinator port of the job Slurm() describes.
std::string JobPort() {
  std::optional<int> port = JobCoordinatorPort(Slurm(0, 1), "slurm");
  return port ? std::to_string(*port) : "none";
}

TEST(RankEnvTest, DetectsSlurmThenOpenMpi) {
  Result<TaskRank> slurm = DetectTaskRank({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}});
  ASSERT_TRUE(slurm.ok());
  EXPECT_EQ(slurm->rank, 3);
  EXPECT_EQ(slurm->size, 4);
  EXPECT_EQ(slurm->source, "slurm");
  Result<TaskRank> ompi =
      DetectTaskRank({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  ASSERT_TRUE(ompi.ok());
  EXPECT_EQ(ompi->source, "openmpi");

  EXPECT_EQ(DetectTaskRank({}).status().code(), StatusCode::kNotFound);
  EXPECT_NE(DetectTaskRank({{"SLURM_PROCID", "1"}}).status().message().find("SLURM_NTASKS"),
            std::string::npos);
  EXPECT_NE(DetectTaskRank({{"SLURM_PROCID", "x"}, {"SLURM_NTASKS", "4"}})
                .status()
                .message()
                .find("SLURM_PROCID must be a non-negative integer"),
            std::string::npos);
  EXPECT_FALSE(DetectTaskRank({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}}).ok());
}

TEST(RankEnvTest, RankZeroIsTheCoordinatorOnTheLaunchNode) {
  Result<ProcessSpec> spec = SpecFromTaskRank(OneServerTwoWorkers(), Fakes(), Slurm(0, 4));
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->role, Role::kCoordinator);
  const std::vector<std::string> argv = {
      "/bin/tessera-server", "--role", "coordinator",   "--listen", "tcp://10.1.2.3:" + JobPort(),
      "--num-servers",       "1",      "--num-workers", "2"};
  EXPECT_EQ(spec->argv, argv);
  auto env = EnvOf(*spec);
  EXPECT_EQ(env["TESSERA_ROLE"], "coordinator");
  EXPECT_EQ(env["TESSERA_COORDINATOR"], "tcp://10.1.2.3:" + JobPort());
  EXPECT_EQ(env["TESSERA_BIND_HOST"], "10.1.2.3");
  EXPECT_EQ(env.count("TESSERA_ENDPOINT_FILE"), 0u);
}

TEST(RankEnvTest, NextRanksAreServersThenWorkers) {
  const JobOptions job = OneServerTwoWorkers();
  Result<ProcessSpec> server = SpecFromTaskRank(job, Fakes(), Slurm(1, 4));
  ASSERT_TRUE(server.ok());
  EXPECT_EQ(server->Label(), "server 0");
  EXPECT_EQ(server->argv.back(), "tcp://10.1.2.3:" + JobPort());
  EXPECT_EQ(EnvOf(*server)["TESSERA_BIND_HOST"], "10.1.2.9");
  for (int rank : {2, 3}) {
    Result<ProcessSpec> worker = SpecFromTaskRank(job, Fakes(), Slurm(rank, 4));
    ASSERT_TRUE(worker.ok());
    EXPECT_EQ(worker->Label(), "worker " + std::to_string(rank - 2));
    EXPECT_EQ(worker->argv, job.program);
    auto env = EnvOf(*worker);
    EXPECT_EQ(env["TESSERA_RANK"], std::to_string(rank - 2));
    EXPECT_EQ(env["TESSERA_NUM_WORKERS"], "2");
    EXPECT_EQ(env["TESSERA_COORDINATOR"], "tcp://10.1.2.3:" + JobPort());
    EXPECT_EQ(env["TESSERA_JOB_SECRET"], "k");
  }
}

TEST(RankEnvTest, CoordinatorFlagAndBindOverride) {
  FromEnvOptions options = Fakes();
  options.coordinator = "tcp://192.168.0.5:6000";
  options.bind_host = "0.0.0.0";
  Result<ProcessSpec> c = SpecFromTaskRank(OneServerTwoWorkers(), options, Slurm(0, 4));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->argv[4], "tcp://0.0.0.0:6000");
  EXPECT_EQ(EnvOf(*c)["TESSERA_COORDINATOR"], "tcp://192.168.0.5:6000");
  options.coordinator = "head";  // default port
  Result<ProcessSpec> w = SpecFromTaskRank(OneServerTwoWorkers(), options, Slurm(3, 4));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(EnvOf(*w)["TESSERA_COORDINATOR"], "tcp://head:" + JobPort());
  EXPECT_EQ(EnvOf(*w)["TESSERA_BIND_HOST"], "0.0.0.0");
  // A coordinator named by host name listens on its address.
  options.bind_host.reset();
  Result<ProcessSpec> named = SpecFromTaskRank(OneServerTwoWorkers(), options, Slurm(0, 4));
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->argv[4], "tcp://10.1.2.1:" + JobPort());
  options.coordinator = "nowhere";
  EXPECT_FALSE(SpecFromTaskRank(OneServerTwoWorkers(), options, Slurm(0, 4)).ok());
  options.coordinator = "10.99.99.99";
  Result<ProcessSpec> unroutable = SpecFromTaskRank(OneServerTwoWorkers(), options, Slurm(2, 4));
  ASSERT_FALSE(unroutable.ok());
  EXPECT_NE(unroutable.status().message().find("pass --bind ADDR"), std::string::npos);
  options.coordinator = "head:notaport";
  EXPECT_FALSE(SpecFromTaskRank(OneServerTwoWorkers(), options, Slurm(3, 4)).ok());
}

TEST(RankEnvTest, OpenMpiOnOneNodeUsesLoopback) {
  EnvMap env = {{"OMPI_COMM_WORLD_RANK", "2"},
                {"OMPI_COMM_WORLD_SIZE", "4"},
                {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                {"OMPI_MCA_ess_base_jobid", "3735552001"}};
  Result<ProcessSpec> w = SpecFromTaskRank(OneServerTwoWorkers(), Fakes(), env);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->Label(), "worker 0");
  EXPECT_EQ(EnvOf(*w)["TESSERA_COORDINATOR"],
            "tcp://127.0.0.1:" + std::to_string(*JobCoordinatorPort(env, "openmpi")));
  EXPECT_EQ(EnvOf(*w)["TESSERA_BIND_HOST"], "127.0.0.1");
  // Across nodes nothing says where rank 0 is.
  env["OMPI_COMM_WORLD_LOCAL_SIZE"] = "2";
  Result<ProcessSpec> unknown = SpecFromTaskRank(OneServerTwoWorkers(), Fakes(), env);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("pass --coordinator"), std::string::npos);
}

TEST(RankEnvTest, TaskCountMustMatch) {
  Result<ProcessSpec> spec = SpecFromTaskRank(OneServerTwoWorkers(), Fakes(), Slurm(0, 3));
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("has 3 tasks"), std::string::npos);
  EXPECT_NE(spec.status().message().find("= 4"), std::string::npos);
}

}  // namespace
}  // namespace tessera::launcher

namespace tessera::launcher {
namespace {

std::map<std::string, std::string> EnvOfSpec(const ProcessSpec& spec) {
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : spec.env) env[k] = v;
  return env;
}

// The port every task of one job derives from its job id: the same in all of them, different
// for another job or another step of the same job, the default without any id.
TEST(RankEnvTest, CoordinatorPortIsPerJob) {
  auto port_of = [](EnvMap env) {
    Result<ProcessSpec> w = SpecFromTaskRank(OneServerTwoWorkers(), Fakes(), env);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    return w.ok() ? EnvOfSpec(*w)["TESSERA_COORDINATOR"] : std::string();
  };
  EnvMap job1 = Slurm(3, 4);
  job1["SLURM_JOB_ID"] = "1001";
  job1["SLURM_STEP_ID"] = "0";
  EnvMap job1_rank2 = Slurm(2, 4);
  job1_rank2["SLURM_JOB_ID"] = "1001";
  job1_rank2["SLURM_STEP_ID"] = "0";
  EnvMap job2 = job1;
  job2["SLURM_JOB_ID"] = "1002";
  EnvMap job1_step1 = job1;
  job1_step1["SLURM_STEP_ID"] = "1";
  const std::string a = port_of(job1);
  EXPECT_EQ(a, port_of(job1_rank2));
  EXPECT_NE(a, port_of(job2));
  EXPECT_NE(a, port_of(job1_step1));
  EXPECT_NE(a, "tcp://10.1.2.3:" + JobPort());
  EXPECT_NE(a, "tcp://10.1.2.3:47017");
  // The coordinator (rank 0) listens on the same derived port.
  EnvMap job1_rank0 = job1;
  job1_rank0["SLURM_PROCID"] = "0";
  Result<ProcessSpec> c = SpecFromTaskRank(OneServerTwoWorkers(), Fakes(), job1_rank0);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->argv[4], a);  // tcp://10.1.2.3:PORT, the address SLURM_LAUNCH_NODE_IPADDR names
  // An explicit port wins.
  FromEnvOptions options = Fakes();
  options.coordinator = "10.1.2.3:6000";
  Result<ProcessSpec> given = SpecFromTaskRank(OneServerTwoWorkers(), options, job1);
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(EnvOfSpec(*given)["TESSERA_COORDINATOR"], "tcp://10.1.2.3:6000");

  // OpenMPI: two mpirun jobs on one node differ by their job id.
  EnvMap ompi = {{"OMPI_COMM_WORLD_RANK", "2"},
                 {"OMPI_COMM_WORLD_SIZE", "4"},
                 {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                 {"OMPI_MCA_ess_base_jobid", "3735552001"}};
  EnvMap ompi2 = ompi;
  ompi2["OMPI_MCA_ess_base_jobid"] = "3735617537";
  EXPECT_NE(port_of(ompi), port_of(ompi2));
  EnvMap pmix = {{"OMPI_COMM_WORLD_RANK", "2"},
                 {"OMPI_COMM_WORLD_SIZE", "4"},
                 {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                 {"PMIX_NAMESPACE", "prterun-node1-4242@1"}};
  EXPECT_NE(port_of(pmix), "tcp://127.0.0.1:47017");
  const std::optional<int> port = JobCoordinatorPort(job1, "slurm");
  ASSERT_TRUE(port.has_value());
  EXPECT_GE(*port, kDefaultCoordinatorPort);
  EXPECT_LT(*port, kDefaultCoordinatorPort + kCoordinatorPortSpan);
}

// Without a job id there is no port every task would derive alike and no other job would: no
// fixed default (two such jobs on one node would collide), the task asks for --coordinator.
TEST(RankEnvTest, WithoutAJobIdThePortMustBeGiven) {
  for (const std::string& source : {std::string("slurm"), std::string("openmpi")}) {
    SCOPED_TRACE(source);
    EnvMap env = source == "slurm" ? Slurm(3, 4)
                                   : EnvMap{{"OMPI_COMM_WORLD_RANK", "3"},
                                            {"OMPI_COMM_WORLD_SIZE", "4"},
                                            {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}};
    env.erase("SLURM_JOB_ID");
    EXPECT_FALSE(JobCoordinatorPort(env, source).has_value());
    for (int rank : {0, 3}) {
      env[source == "slurm" ? "SLURM_PROCID" : "OMPI_COMM_WORLD_RANK"] = std::to_string(rank);
      Result<ProcessSpec> spec = SpecFromTaskRank(OneServerTwoWorkers(), Fakes(), env);
      ASSERT_FALSE(spec.ok());
      EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(spec.status().message().find("no job id"), std::string::npos)
          << spec.status().message();
      EXPECT_NE(spec.status().message().find("pass --coordinator HOST:PORT"), std::string::npos)
          << spec.status().message();
      // A port given with the host is enough.
      FromEnvOptions options = Fakes();
      options.coordinator = "127.0.0.1:6123";
      Result<ProcessSpec> given = SpecFromTaskRank(OneServerTwoWorkers(), options, env);
      ASSERT_TRUE(given.ok()) << given.status().ToString();
      EXPECT_EQ(EnvOfSpec(*given)["TESSERA_COORDINATOR"], "tcp://127.0.0.1:6123");
    }
  }
}

// A wildcard bind advertises a routable address: --advertise, else the node's address toward the
// coordinator (the coordinator itself: its own address); a specific bind advertises nothing more.
TEST(RankEnvTest, WildcardBindAdvertisesARoutableAddress) {
  FromEnvOptions options = Fakes();
  options.coordinator = "head:6000";
  options.bind_host = "0.0.0.0";
  Result<ProcessSpec> w = SpecFromTaskRank(OneServerTwoWorkers(), options, Slurm(3, 4));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(EnvOfSpec(*w)["TESSERA_ADVERTISE_HOST"], "10.1.2.9");
  Result<ProcessSpec> c = SpecFromTaskRank(OneServerTwoWorkers(), options, Slurm(0, 4));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(EnvOfSpec(*c)["TESSERA_ADVERTISE_HOST"], "10.1.2.1");
  options.advertise = "192.168.7.7";
  Result<ProcessSpec> given = SpecFromTaskRank(OneServerTwoWorkers(), options, Slurm(1, 4));
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(EnvOfSpec(*given)["TESSERA_ADVERTISE_HOST"], "192.168.7.7");
  options.advertise.reset();
  options.bind_host = "10.1.2.9";
  Result<ProcessSpec> specific = SpecFromTaskRank(OneServerTwoWorkers(), options, Slurm(3, 4));
  ASSERT_TRUE(specific.ok());
  EXPECT_EQ(EnvOfSpec(*specific).count("TESSERA_ADVERTISE_HOST"), 0u);
  // No route toward the coordinator: say what to pass.
  options.bind_host = "0.0.0.0";
  options.coordinator = "10.99.99.99:6000";
  Result<ProcessSpec> unroutable = SpecFromTaskRank(OneServerTwoWorkers(), options, Slurm(3, 4));
  ASSERT_FALSE(unroutable.ok());
  EXPECT_NE(unroutable.status().message().find("--advertise ADDR"), std::string::npos)
      << unroutable.status().message();
}

}  // namespace
}  // namespace tessera::launcher
