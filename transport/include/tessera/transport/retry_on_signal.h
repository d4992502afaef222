// ZeroMQ sends and receives that a signal does not fail. When a signal with a handler arrives
// during any ZeroMQ call, even a non-blocking one (a profiler's SIGPROF, a debugger, a program's
// own SIGCHLD or timer handler), the call fails with EINTR, which cppzmq throws as zmq::error_t;
// nothing was sent or received then, so these make the call again. Other errors still throw.
// (PollItems, waker.h, is the same for zmq::poll.)
//
// Thread safety: as the socket's (one thread uses a socket).
#ifndef TESSERA_TRANSPORT_RETRY_ON_SIGNAL_H_
#define TESSERA_TRANSPORT_RETRY_ON_SIGNAL_H_

#include <zmq.hpp>

namespace tessera {

// Receives the next frame of `socket` into `frame`: false, and `frame` untouched, only with
// recv_flags::dontwait when no frame is queued.
bool ReceiveRetrying(zmq::socket_t& socket, zmq::message_t& frame,
                     zmq::recv_flags flags = zmq::recv_flags::none);

// Sends `frame` (emptied once sent): false, and nothing sent, only with send_flags::dontwait when
// the socket's queue is full.
bool SendRetrying(zmq::socket_t& socket, zmq::message_t& frame,
                  zmq::send_flags flags = zmq::send_flags::none);
bool SendRetrying(zmq::socket_t& socket, zmq::message_t&& frame,
                  zmq::send_flags flags = zmq::send_flags::none);
// The same for bytes that ZeroMQ copies (a ROUTER's identity frame).
bool SendRetrying(zmq::socket_t& socket, zmq::const_buffer bytes,
                  zmq::send_flags flags = zmq::send_flags::none);

}  // namespace tessera

#endif  // TESSERA_TRANSPORT_RETRY_ON_SIGNAL_H_
