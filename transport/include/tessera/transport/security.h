// Job authentication on the wire: every tcp:// and ipc:// socket of a job that has a secret runs
// ZeroMQ's CURVE mechanism (CurveZMQ: X25519 key exchange, every frame encrypted and
// authenticated) with keys derived from the job secret.
//
// Both key pairs of a job are derived from the secret (BLAKE2b, then X25519). The bind side of a
// connection (coordinator, server, peer-mesh inbox) holds the server key pair; the connect side
// holds the client key pair and the server's public key. CurveZMQ never sends the server's public
// key: a peer completes the handshake only if it encrypted its HELLO to that key, that is, only if
// it knows the job secret; and only a holder of the server's secret key can answer it, so a
// connecting process knows it reached its own job. A process without the secret cannot get one
// frame past the handshake. The secret itself never travels, not even encrypted.
//
// inproc:// endpoints (nodes that share one process, tests) bypass ZeroMQ's security mechanisms:
// only the process's own threads reach them. Registrations also carry SecretProof, which is the
// only check there. An empty secret (`tessera run --from-env --insecure`) turns all of this off.
//
// docs/security.md has the threat model.
#ifndef TESSERA_TRANSPORT_SECURITY_H_
#define TESSERA_TRANSPORT_SECURITY_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <zmq.hpp>

namespace tessera {

// The CURVE key pairs of a job, 32 bytes each.
struct JobKeys {
  std::array<uint8_t, 32> server_public;
  std::array<uint8_t, 32> server_secret;
  std::array<uint8_t, 32> client_public;
  std::array<uint8_t, 32> client_secret;
};

// Deterministic: every process of a job derives the same keys. REQUIRES: !secret.empty().
JobKeys DeriveJobKeys(std::string_view secret);

// Makes `socket` the CURVE server side of its connections (call before bind). An empty secret
// leaves the socket unauthenticated.
void SecureBindSide(zmq::socket_t& socket, std::string_view secret);
// Makes `socket` the CURVE client side of its connections (call before connect).
void SecureConnectSide(zmq::socket_t& socket, std::string_view secret);

// What registrations and heartbeats carry instead of the secret: a keyed hash of it (32 hex
// digits) that does not reveal it. Empty for an empty secret.
std::string SecretProof(std::string_view secret);

}  // namespace tessera

#endif  // TESSERA_TRANSPORT_SECURITY_H_
