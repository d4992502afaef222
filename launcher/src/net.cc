#include "tessera/launcher/net.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace tessera::launcher {
namespace {

struct AddrInfoDeleter {
  void operator()(addrinfo* a) const { freeaddrinfo(a); }
};
using AddrInfoPtr = std::unique_ptr<addrinfo, AddrInfoDeleter>;

// IPv4 results first: a dual-stack name usually means the IPv4 address to ZeroMQ users.
Result<AddrInfoPtr> Lookup(std::string_view host, int family) {
  addrinfo hints{};
  hints.ai_family = family;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* result = nullptr;
  int rc = getaddrinfo(std::string(host).c_str(), "9", &hints, &result);
  if (rc != 0) {
    return Status::NotFound("cannot resolve host '" + std::string(host) + "': " +
                            gai_strerror(rc));
  }
  return AddrInfoPtr(result);
}

Result<AddrInfoPtr> LookupAny(std::string_view host) {
  Result<AddrInfoPtr> v4 = Lookup(host, AF_INET);
  if (v4.ok()) return v4;
  Result<AddrInfoPtr> v6 = Lookup(host, AF_INET6);
  if (v6.ok()) return v6;
  return v4.status();
}

std::string ToText(const sockaddr* addr) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (addr->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(addr)->sin_addr, text, sizeof(text));
  } else {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr, text,
              sizeof(text));
  }
  return text;
}

}  // namespace

Result<std::string> ResolveHostAddress(std::string_view host) {
  Result<AddrInfoPtr> info = LookupAny(host);
  if (!info.ok()) return info.status();
  return ToText((*info)->ai_addr);
}

Result<std::string> LocalAddressToward(std::string_view host) {
  Result<AddrInfoPtr> info = LookupAny(host);
  if (!info.ok()) return info.status();
  const addrinfo* target = info->get();
  int fd = socket(target->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Internal(std::string("socket: ") + std::strerror(errno));
  // Connecting a UDP socket only asks the routing table; nothing goes on the wire.
  if (connect(fd, target->ai_addr, target->ai_addrlen) != 0) {
    int err = errno;
    close(fd);
    return Status::Unavailable("no route to '" + std::string(host) + "': " + std::strerror(err));
  }
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  int rc = getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
  int err = errno;
  close(fd);
  if (rc != 0) return Status::Internal(std::string("getsockname: ") + std::strerror(err));
  return ToText(reinterpret_cast<const sockaddr*>(&local));
}

}  // namespace tessera::launcher
