// LocalInbox: the peer-mesh inbox's way in for workers on the same host -- a unix socket
// (ipc://) in a fresh directory only this user can enter, without CURVE, next to the round slots
// (round_slots.h) the mesh shares with them.
//
// On one host, CURVE's encryption of every hand-over cost more than the rest of the exchange
// (bench/README.md, "Same-host peers"), and it protects nothing there that the file system does
// not: the kernel lets a process connect to a unix socket only through directories it may search,
// and mkdtemp makes the directory 0700, so only this user (and root) gets in -- the same processes
// that can already read the job secret from this worker's environment (docs/security.md,
// "Workers on one host"). The directory lives only while the mesh is being built: once every
// peer's hello has arrived (every connection is made) it is removed, so nobody connects later and
// a worker killed afterwards leaves nothing behind. Peers on other hosts, in other mount or network
// namespaces or under other users keep the tcp:// endpoint and CURVE.
#ifndef TESSERA_RUNTIME_SRC_DISTRIBUTED_LOCAL_INBOX_H_
#define TESSERA_RUNTIME_SRC_DISTRIBUTED_LOCAL_INBOX_H_

#include <string>
#include <zmq.hpp>

#include "tessera/common/status.h"

namespace tessera::internal {

// Where an ipc:// endpoint is valid: this boot of this kernel, this mount namespace and this
// effective user (a peer with the same identity sees the same file at the same path and may enter
// this user's directories), and this network namespace (a container with a network of its own, or
// a test's simulated host, counts as a host of its own). Empty when any part cannot be read: then
// no peer uses ipc.
std::string HostIdentity();

// The directory of an ipc:// endpoint's socket ("ipc:///dev/shm/d/inbox": "/dev/shm/d"); empty for
// another scheme or a path without a directory.
std::string IpcDirectory(const std::string& endpoint);

// Whether `endpoint` is an ipc:// path whose directory is a real directory (not a symlink) owned
// by this effective user and closed to everyone else: a peer connects to it without CURVE only
// then.
bool PrivateToThisUser(const std::string& endpoint);

// Where LocalInbox makes its directory: /dev/shm, a RAM file system, so that files shared through
// it (round_slots.h) are never written back to a disk; $TMPDIR (default /tmp) where there is none.
std::string LocalInboxParent();

class LocalInbox {
 public:
  LocalInbox() = default;
  // Makes a directory in `parent` and binds `inbox` there without CURVE; the socket's endpoints
  // bound before keep their mechanism (ZeroMQ applies security options to later binds only), so
  // bind this one last. An error leaves no directory behind. The directory's name starts with
  // tessera-job-PID- like the launcher's scratch directories, so that one left by a worker killed
  // while its mesh was being built goes with them.
  static Result<LocalInbox> Bind(zmq::socket_t& inbox, const std::string& parent);
  LocalInbox(LocalInbox&& other) noexcept;
  LocalInbox& operator=(LocalInbox&& other) noexcept;
  ~LocalInbox() { Remove(); }

  const std::string& endpoint() const { return endpoint_; }
  // Empty once removed.
  const std::string& directory() const { return dir_; }
  // Removes the directory and everything in it (idempotent): connections made stay up, no new one
  // can be made, and files mapped stay mapped.
  void Remove();

 private:
  std::string dir_;
  std::string endpoint_;
};

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_DISTRIBUTED_LOCAL_INBOX_H_
