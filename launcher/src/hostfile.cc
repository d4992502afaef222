#include "tessera/launcher/hostfile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace tessera::launcher {
namespace {

std::vector<std::string_view> SplitWords(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

}  // namespace

Result<std::vector<HostEntry>> ParseHostfile(std::string_view text, std::string_view source_name) {
  std::vector<HostEntry> hosts;
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    std::vector<std::string_view> words = SplitWords(line);
    if (words.empty()) continue;
    auto error = [&](const std::string& what) {
      return Status::InvalidArgument(std::string(source_name) + ":" + std::to_string(line_no) +
                                     ": " + what);
    };
    HostEntry entry;
    entry.host = std::string(words[0]);
    if (entry.host.find('=') != std::string::npos) {
      return error("expected a host name first, got '" + entry.host + "'");
    }
    for (size_t w = 1; w < words.size(); ++w) {
      std::string_view word = words[w];
      constexpr std::string_view kSlots = "slots=";
      if (word.substr(0, kSlots.size()) != kSlots) {
        return error("unknown field '" + std::string(word) + "' (expected slots=N)");
      }
      std::string_view value = word.substr(kSlots.size());
      int slots = 0;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), slots);
      if (ec != std::errc() || ptr != value.data() + value.size() || slots < 1) {
        return error("slots must be a positive integer, got '" + std::string(value) + "'");
      }
      entry.slots = slots;
    }
    hosts.push_back(std::move(entry));
  }
  if (hosts.empty()) {
    return Status::InvalidArgument(std::string(source_name) + ": no hosts in hostfile");
  }
  return hosts;
}

Result<std::vector<HostEntry>> ReadHostfile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::NotFound("cannot read hostfile " + path + ": " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::NotFound("cannot read hostfile " + path + ": not a regular file");
  }
  std::string text;
  char buf[4096];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return Status::NotFound("cannot read hostfile " + path + ": " + std::strerror(err));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return ParseHostfile(text, path);
}

}  // namespace tessera::launcher
