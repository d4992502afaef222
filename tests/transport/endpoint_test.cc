// Endpoints peers are told: a wildcard bind is never advertised as such.
#include "tessera/transport/endpoint.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <zmq.hpp>

namespace tessera {
namespace {

TEST(EndpointTest, WildcardHostsAreReplacedByTheAdvertisedAddress) {
  EXPECT_EQ(AdvertisedEndpoint("tcp://0.0.0.0:5000", "10.0.0.7"), "tcp://10.0.0.7:5000");
  EXPECT_EQ(AdvertisedEndpoint("tcp://*:5000", "10.0.0.7"), "tcp://10.0.0.7:5000");
  EXPECT_EQ(AdvertisedEndpoint("tcp://[::]:5000", "fd00::7"), "tcp://[fd00::7]:5000");
  EXPECT_EQ(AdvertisedEndpoint("tcp://[::]:5000", "10.0.0.7"), "tcp://10.0.0.7:5000");
  // Anything else is left as it is.
  EXPECT_EQ(AdvertisedEndpoint("tcp://127.0.0.1:5000", "10.0.0.7"), "tcp://127.0.0.1:5000");
  EXPECT_EQ(AdvertisedEndpoint("inproc://x", "10.0.0.7"), "inproc://x");
  EXPECT_EQ(AdvertisedEndpoint("tcp://0.0.0.0:5000", ""), "tcp://0.0.0.0:5000");
}

TEST(EndpointTest, BindingToAWildcardReturnsTheAdvertisedAddress) {
  zmq::context_t context;
  zmq::socket_t socket(context, zmq::socket_type::router);
  ASSERT_EQ(setenv(kEnvAdvertiseHost, "127.0.0.1", 1), 0);
  Result<std::string> bound = BindSocket(socket, "tcp://0.0.0.0:0");
  unsetenv(kEnvAdvertiseHost);
  ASSERT_TRUE(bound.ok()) << bound.status().ToString();
  EXPECT_TRUE(bound->starts_with("tcp://127.0.0.1:")) << *bound;
  // Without the variable: this host's address, never the wildcard.
  zmq::socket_t other(context, zmq::socket_type::router);
  Result<std::string> fallback = BindSocket(other, "tcp://0.0.0.0:0");
  ASSERT_TRUE(fallback.ok()) << fallback.status().ToString();
  EXPECT_FALSE(fallback->starts_with("tcp://0.0.0.0:")) << *fallback;
  // The advertised endpoint is one a peer can connect to.
  zmq::socket_t peer(context, zmq::socket_type::dealer);
  peer.set(zmq::sockopt::linger, 0);
  socket.set(zmq::sockopt::rcvtimeo, 20000);  // bounded: a lost message fails, not hangs
  peer.connect(*bound);
  peer.send(zmq::str_buffer("hello"), zmq::send_flags::none);
  zmq::message_t identity, body;
  ASSERT_TRUE(socket.recv(identity));
  ASSERT_TRUE(socket.recv(body));
  EXPECT_EQ(body.to_string(), "hello");
}

}  // namespace
}  // namespace tessera
