#include "tessera/transport/security.h"

#include <sodium.h>

#include "tessera/common/check.h"

namespace tessera {
namespace {

using Key = std::array<uint8_t, 32>;

// BLAKE2b-256 of `label`, keyed with a hash of the secret (BLAKE2b keys must be 16 to 64 bytes;
// secrets may be any length).
Key KeyedHash(std::string_view secret, std::string_view label) {
  Key secret_hash;
  crypto_generichash(secret_hash.data(), secret_hash.size(),
                     reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), nullptr,
                     0);
  Key out;
  crypto_generichash(out.data(), out.size(), reinterpret_cast<const unsigned char*>(label.data()),
                     label.size(), secret_hash.data(), secret_hash.size());
  sodium_memzero(secret_hash.data(), secret_hash.size());
  return out;
}

void KeyPair(std::string_view secret, std::string_view label, Key& public_key, Key& secret_key) {
  static_assert(crypto_box_SEEDBYTES == 32 && crypto_box_PUBLICKEYBYTES == 32 &&
                crypto_box_SECRETKEYBYTES == 32);
  Key seed = KeyedHash(secret, label);
  crypto_box_seed_keypair(public_key.data(), secret_key.data(), seed.data());
  sodium_memzero(seed.data(), seed.size());
}

void SetKey(zmq::socket_t& socket, int option, const Key& key) {
  TESSERA_CHECK(zmq_setsockopt(socket.handle(), option, key.data(), key.size()) == 0);
}

void CheckCurve() {
  // Debian's libzmq5 has it (scripts/setup.sh); a libzmq built without libsodium does not.
  TESSERA_CHECK_MSG(zmq_has("curve"), "this libzmq has no CURVE support; a job secret needs it");
}

}  // namespace

JobKeys DeriveJobKeys(std::string_view secret) {
  TESSERA_CHECK(!secret.empty());
  // Idempotent and thread-safe; -1 only if no source of randomness exists, which key derivation
  // does not use.
  TESSERA_CHECK(sodium_init() >= 0);
  JobKeys keys;
  KeyPair(secret, "tessera curve server v1", keys.server_public, keys.server_secret);
  KeyPair(secret, "tessera curve client v1", keys.client_public, keys.client_secret);
  return keys;
}

void SecureBindSide(zmq::socket_t& socket, std::string_view secret) {
  if (secret.empty()) return;
  CheckCurve();
  JobKeys keys = DeriveJobKeys(secret);
  socket.set(zmq::sockopt::curve_server, 1);
  SetKey(socket, ZMQ_CURVE_SECRETKEY, keys.server_secret);
  sodium_memzero(&keys, sizeof(keys));
}

void SecureConnectSide(zmq::socket_t& socket, std::string_view secret) {
  if (secret.empty()) return;
  CheckCurve();
  JobKeys keys = DeriveJobKeys(secret);
  SetKey(socket, ZMQ_CURVE_SERVERKEY, keys.server_public);
  SetKey(socket, ZMQ_CURVE_PUBLICKEY, keys.client_public);
  SetKey(socket, ZMQ_CURVE_SECRETKEY, keys.client_secret);
  sodium_memzero(&keys, sizeof(keys));
}

std::string SecretProof(std::string_view secret) {
  if (secret.empty()) return "";
  TESSERA_CHECK(sodium_init() >= 0);
  Key proof = KeyedHash(secret, "tessera registration proof v1");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < 16; ++i) {
    out += kHex[proof[i] >> 4];
    out += kHex[proof[i] & 15];
  }
  return out;
}

}  // namespace tessera
