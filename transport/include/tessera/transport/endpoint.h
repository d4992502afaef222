// Helpers for ZeroMQ endpoints.
#ifndef TESSERA_TRANSPORT_ENDPOINT_H_
#define TESSERA_TRANSPORT_ENDPOINT_H_

#include <string>
#include <zmq.hpp>

#include "tessera/common/status.h"

namespace tessera {

// Binds `socket` to `endpoint` and returns the endpoint peers should connect to. A tcp port of 0
// (or "*") picks an ephemeral port; the result names the port actually bound.
Result<std::string> BindSocket(zmq::socket_t& socket, const std::string& endpoint);

// Socket options every Tessera socket uses: no linger on close, unlimited queues (the
// protocol's own flow control, SSP, bounds what is in flight) and TCP heartbeats so a vanished
// peer is noticed.
void ConfigureSocket(zmq::socket_t& socket);

}  // namespace tessera

#endif  // TESSERA_TRANSPORT_ENDPOINT_H_
