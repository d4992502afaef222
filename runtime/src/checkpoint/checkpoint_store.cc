#include "checkpoint/checkpoint_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "tessera/common/checked_file.h"

namespace tessera::internal::checkpoint {
namespace {

constexpr char kPrefix[] = "ckpt-";
constexpr char kManifest[] = "MANIFEST";
// Format 3 added partitioned arrays' shares, data-parallel tables and accumulator states; a
// format-2 manifest (none of those, accumulator values) is still read.
constexpr int kFormat = 3;
constexpr int kOldestFormat = 2;

std::string Errno(const std::string& what, const std::string& path) {
  return fmt::format("{} {}: {}", what, path, std::strerror(errno));
}

Status FsyncPath(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) return Status::Unavailable(Errno("cannot open", path));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Status::Unavailable(Errno("cannot fsync", path));
  return Status::Ok();
}

std::string Hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

bool Unhex(const std::string& hex, std::string* out) {
  if (hex.size() % 2 != 0) return false;
  out->clear();
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = digit(hex[i]), lo = digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
  }
  return true;
}

// Loop numbers of the checkpoint directories in `dir`, ascending.
std::vector<int64_t> ListLoops(const std::string& dir) {
  std::vector<int64_t> loops;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return loops;
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (!name.starts_with(kPrefix)) continue;
    name.remove_prefix(sizeof(kPrefix) - 1);
    if (name.empty() || name.size() > 18 ||
        !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    loops.push_back(std::stoll(std::string(name)));
  }
  ::closedir(d);
  std::sort(loops.begin(), loops.end());
  return loops;
}

}  // namespace

std::string EncodeManifest(const Manifest& m) {
  nlohmann::json j;
  j["format"] = kFormat;
  j["loop"] = m.loop;
  j["workers"] = m.workers;
  j["sites"] = m.sites;
  j["site_of_loop"] = m.site_of_loop;
  nlohmann::json accs = nlohmann::json::array();
  for (const auto& loop : m.accumulators) {
    nlohmann::json values = nlohmann::json::array();
    for (const std::string& v : loop) values.push_back(Hex(v));
    accs.push_back(std::move(values));
  }
  j["accumulators"] = std::move(accs);
  nlohmann::json arrays = nlohmann::json::array();
  for (const ArrayRecord& a : m.arrays) {
    nlohmann::json files = nlohmann::json::array();
    for (const FileRecord& f : a.files) {
      nlohmann::json file = {
          {"name", f.name}, {"bytes", f.bytes}, {"crc32", f.crc32}, {"ranges", f.ranges}};
      if (f.share) {
        file["share"] = {{"worker", f.share->worker},
                         {"dim", f.share->dim},
                         {"lo", f.share->lo},
                         {"hi", f.share->hi},
                         {"count", f.share->count}};
      }
      if (f.worker >= 0) file["worker"] = f.worker;
      files.push_back(std::move(file));
    }
    arrays.push_back({{"id", a.id},
                      {"element_bytes", a.element_bytes},
                      {"count", a.count},
                      {"rows", a.rows},
                      {"sparse", a.sparse},
                      {"on_servers", a.on_servers},
                      {"partitioned", a.partitioned},
                      {"held", a.held},
                      {"files", std::move(files)}});
  }
  j["arrays"] = std::move(arrays);
  nlohmann::json tables = nlohmann::json::array();
  for (const DataParallelTable& t : m.data_parallel_tables) {
    tables.push_back({{"array", t.array}, {"staleness", t.staleness}});
  }
  j["data_parallel_tables"] = std::move(tables);
  nlohmann::json servers = nlohmann::json::array();
  for (const FileRecord& f : m.server_files) {
    servers.push_back(
        {{"name", f.name}, {"bytes", f.bytes}, {"crc32", f.crc32}, {"server", f.ranges.at(0)}});
  }
  j["server_files"] = std::move(servers);
  return j.dump(1) + "\n";
}

Result<Manifest> DecodeManifest(std::string_view text, const std::string& where) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    const int format = j.at("format").get<int>();
    if (format < kOldestFormat || format > kFormat) {
      return Status::DataLoss(where + ": checkpoint format " + j.at("format").dump() +
                              ", this program reads formats " + std::to_string(kOldestFormat) +
                              " to " + std::to_string(kFormat));
    }
    Manifest m;
    m.loop = j.at("loop").get<int64_t>();
    m.workers = j.at("workers").get<int>();
    m.sites = j.at("sites").get<std::vector<std::string>>();
    m.site_of_loop = j.at("site_of_loop").get<std::vector<int32_t>>();
    for (const auto& loop : j.at("accumulators")) {
      std::vector<std::string> values;
      for (const auto& v : loop) {
        std::string bytes;
        if (!Unhex(v.get<std::string>(), &bytes)) {
          return Status::DataLoss(where + ": malformed accumulator value");
        }
        values.push_back(std::move(bytes));
      }
      m.accumulators.push_back(std::move(values));
    }
    for (const auto& a : j.at("arrays")) {
      ArrayRecord r;
      r.id = a.at("id").get<int64_t>();
      r.element_bytes = a.at("element_bytes").get<int64_t>();
      r.count = a.at("count").get<int64_t>();
      r.rows = a.at("rows").get<int64_t>();
      r.sparse = a.at("sparse").get<bool>();
      r.on_servers = a.at("on_servers").get<bool>();
      r.partitioned = a.value("partitioned", false);
      r.held = a.value("held", false);
      for (const auto& f : a.at("files")) {
        FileRecord fr;
        fr.name = f.at("name").get<std::string>();
        fr.bytes = f.at("bytes").get<uint64_t>();
        fr.crc32 = f.at("crc32").get<uint32_t>();
        fr.ranges = f.at("ranges").get<std::vector<int64_t>>();
        fr.worker = f.value("worker", -1);
        if (f.contains("share")) {
          const auto& sh = f.at("share");
          fr.share = RecordShare{.worker = sh.at("worker").get<int>(),
                                 .dim = sh.at("dim").get<int>(),
                                 .lo = sh.at("lo").get<int64_t>(),
                                 .hi = sh.at("hi").get<int64_t>(),
                                 .count = sh.at("count").get<int64_t>()};
        }
        if (fr.name.empty() || fr.name.find('/') != std::string::npos || fr.ranges.size() % 2 ||
            fr.share.has_value() != r.partitioned || fr.worker < -1 ||
            (fr.share && (fr.share->worker < 0 || fr.share->dim < 0 || fr.share->count < 0 ||
                          fr.share->lo < 0 || fr.share->hi < fr.share->lo))) {
          return Status::DataLoss(where + ": malformed file entry");
        }
        r.files.push_back(std::move(fr));
      }
      m.arrays.push_back(std::move(r));
    }
    for (const auto& f : j.at("server_files")) {
      FileRecord fr;
      fr.name = f.at("name").get<std::string>();
      fr.bytes = f.at("bytes").get<uint64_t>();
      fr.crc32 = f.at("crc32").get<uint32_t>();
      fr.ranges = {f.at("server").get<int64_t>()};
      if (fr.name.empty() || fr.name.find('/') != std::string::npos) {
        return Status::DataLoss(where + ": malformed server file entry");
      }
      m.server_files.push_back(std::move(fr));
    }
    if (j.contains("data_parallel_tables")) {
      for (const auto& t : j.at("data_parallel_tables")) {
        m.data_parallel_tables.push_back(
            {t.at("array").get<int64_t>(), t.at("staleness").get<int>()});
      }
    }
    if (m.loop < 0 || static_cast<int64_t>(m.site_of_loop.size()) != m.loop ||
        static_cast<int64_t>(m.accumulators.size()) != m.loop) {
      return Status::DataLoss(where + ": the loop log does not match the loop count");
    }
    for (int32_t s : m.site_of_loop) {
      if (s < 0 || static_cast<size_t>(s) >= m.sites.size()) {
        return Status::DataLoss(where + ": malformed loop log");
      }
    }
    return m;
  } catch (const nlohmann::json::exception& e) {
    return Status::DataLoss(where + ": not a checkpoint manifest (" + e.what() + ")");
  }
}

std::string CheckpointPath(const std::string& dir, int64_t loop) {
  return fmt::format("{}/{}{:012d}", dir, kPrefix, loop);
}

Status PrepareDirectory(const std::string& dir) {
  if (dir.empty()) return Status::InvalidArgument("the checkpoint directory is empty");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    return Status::InvalidArgument(fmt::format("checkpoint directory {}: cannot create it: {}", dir,
                                               ec ? ec.message() : std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument(
        fmt::format("checkpoint directory {}: exists and is not a directory", dir));
  }
  const std::string probe = fmt::format("{}/.tessera-probe-{}", dir, ::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::InvalidArgument(fmt::format(
        "checkpoint directory {}: cannot create files in it: {}", dir, std::strerror(errno)));
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return Status::Ok();
}

Result<FileRecord> WriteDataFile(const std::string& dir, const std::string& name,
                                 const std::vector<std::span<const char>>& pieces) {
  FileRecord r;
  r.name = name;
  for (std::span<const char> p : pieces) {
    r.crc32 = Crc32(p, r.crc32);
    r.bytes += p.size();
  }
  if (Status s = WriteFileAtomically(dir + "/" + name, pieces); !s.ok()) return s;
  return r;
}

Status WriteManifest(const std::string& dir, const Manifest& m) {
  if (Status s = FsyncPath(dir, /*directory=*/true); !s.ok()) return s;
  const std::string text = EncodeManifest(m);
  const std::string path = dir + "/" + kManifest;
  if (Status s = WriteFileAtomically(path, {std::span<const char>(text)}); !s.ok()) return s;
  return FsyncPath(dir, /*directory=*/true);
}

Status ReadDataFile(const std::string& dir, const FileRecord& record, std::string* out) {
  Result<std::string> text = ReadCheckedFile(dir + "/" + record.name, record.bytes, record.crc32);
  if (!text.ok()) return text.status();
  *out = std::move(text).value();
  return Status::Ok();
}

Status ReadDataFileInto(const std::string& dir, const FileRecord& record,
                        const std::vector<std::span<char>>& pieces) {
  const std::string path = dir + "/" + record.name;
  uint64_t want = 0;
  for (std::span<char> p : pieces) want += p.size();
  if (want != record.bytes) {
    return Status::DataLoss(fmt::format("{}: the manifest says {} bytes, its entry needs {}", path,
                                        record.bytes, want));
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::DataLoss(Errno("cannot open", path));
  uint32_t crc = 0;
  uint64_t got = 0;
  Status status = Status::Ok();
  for (std::span<char> p : pieces) {
    size_t at = 0;
    while (at < p.size()) {
      const ssize_t n = ::read(fd, p.data() + at, p.size() - at);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) status = Status::DataLoss(Errno("cannot read", path));
      if (n <= 0) break;
      at += static_cast<size_t>(n);
    }
    got += at;
    crc = Crc32(p.first(at), crc);
    if (!status.ok() || at < p.size()) break;
  }
  char extra;
  while (status.ok() && got == record.bytes) {
    const ssize_t n = ::read(fd, &extra, 1);
    if (n < 0 && errno == EINTR) continue;
    got += n > 0 ? 1 : 0;
    break;
  }
  ::close(fd);
  if (!status.ok()) return status;
  if (got != record.bytes) {
    return Status::DataLoss(fmt::format("{}: {} bytes, the manifest says {}", path,
                                        got > record.bytes ? "more" : std::to_string(got),
                                        record.bytes));
  }
  if (crc != record.crc32) {
    return Status::DataLoss(fmt::format(
        "{}: crc32 {:08x}, the manifest says {:08x} (the file is damaged)", path, crc,
        record.crc32));
  }
  return Status::Ok();
}

Result<std::optional<Found>> FindLatest(const std::string& dir, std::vector<std::string>* notes) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument(fmt::format("checkpoint directory {}: not a directory", dir));
  }
  std::vector<int64_t> loops = ListLoops(dir);
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
    const std::string path = CheckpointPath(dir, *it);
    const std::string manifest = path + "/" + kManifest;
    Result<std::string> text = ReadWholeFile(manifest);
    if (!text.ok()) {
      notes->push_back(path + " is incomplete (no MANIFEST); not used");
      continue;
    }
    Result<Manifest> m = DecodeManifest(*text, manifest);
    if (!m.ok()) {
      notes->push_back(m.status().message() + "; not used");
      continue;
    }
    if (m->loop != *it) {
      notes->push_back(manifest + " is for loop " + std::to_string(m->loop) + "; not used");
      continue;
    }
    return std::optional<Found>(Found{path, std::move(m).value()});
  }
  return std::optional<Found>();
}

bool HasCheckpoints(const std::string& dir) { return !ListLoops(dir).empty(); }

namespace {
void RemoveCheckpointDir(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}
}  // namespace

void Prune(const std::string& dir, int keep) {
  std::vector<int64_t> loops = ListLoops(dir);
  int complete_kept = 0;
  bool seen_complete = false;
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
    const std::string path = CheckpointPath(dir, *it);
    const std::string manifest = path + "/" + kManifest;
    Result<std::string> text = ReadWholeFile(manifest);
    const bool complete = text.ok() && DecodeManifest(*text, manifest).ok();
    if (complete && complete_kept < keep) {
      ++complete_kept;
      seen_complete = true;
      continue;
    }
    if (!complete && !seen_complete) continue;  // newer than every complete one
    RemoveCheckpointDir(path);
  }
}

void RemoveAfter(const std::string& dir, int64_t loop) {
  for (int64_t l : ListLoops(dir)) {
    if (l > loop) RemoveCheckpointDir(CheckpointPath(dir, l));
  }
}

}  // namespace tessera::internal::checkpoint
