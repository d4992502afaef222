// Addresses for binding: ZeroMQ binds to an IP address or an interface name, not to a host name,
// so names from hostfiles and gethostname() are turned into addresses here.
#ifndef TESSERA_LAUNCHER_NET_H_
#define TESSERA_LAUNCHER_NET_H_

#include <string>
#include <string_view>

#include "tessera/common/status.h"

namespace tessera::launcher {

// The first IPv4 address of `host` (a name or an address), else its first IPv6 address, as
// text. NotFound when it does not resolve.
Result<std::string> ResolveHostAddress(std::string_view host);

// The address of this machine that traffic to `host` leaves from (the source address the
// routing table picks; no packet is sent). For a loopback `host` it is a loopback address.
// NotFound when `host` does not resolve, Unavailable when there is no route to it.
Result<std::string> LocalAddressToward(std::string_view host);

}  // namespace tessera::launcher

#endif  // TESSERA_LAUNCHER_NET_H_
