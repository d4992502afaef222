// Hostfiles for multi-host jobs (`tessera run --hostfile FILE`).
//
// Format, one host per line:
//   # comment (also after a host)
//   node1 slots=4
//   10.0.0.2          # slots defaults to 1
// `slots` is how many workers the host takes before the next host is used (see MemberSpecs).
#ifndef TESSERA_LAUNCHER_HOSTFILE_H_
#define TESSERA_LAUNCHER_HOSTFILE_H_

#include <string>
#include <string_view>
#include <vector>

#include "tessera/common/status.h"

namespace tessera::launcher {

struct HostEntry {
  std::string host;  // name or address, as written; what the ssh command is given
  int slots = 1;     // >= 1
  // The address processes on this host bind to (TESSERA_BIND_HOST). Not in the file: the driver
  // fills it with ResolveHostAddress(host) (net.h). Empty: `host` is used.
  std::string address;
};

// Parses hostfile text. Errors are InvalidArgument "NAME:LINE: what is wrong", where NAME is
// `source_name` (the file's path, for messages). An empty host list is an error.
Result<std::vector<HostEntry>> ParseHostfile(std::string_view text, std::string_view source_name);

// Reads and parses the file at `path`; NotFound if it cannot be read.
Result<std::vector<HostEntry>> ReadHostfile(const std::string& path);

}  // namespace tessera::launcher

#endif  // TESSERA_LAUNCHER_HOSTFILE_H_
