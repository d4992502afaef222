// ThreadSanitizer cannot see ZeroMQ hand a frame's bytes from the thread that wrote them to the
// one that reads them (libzmq is not instrumented; over inproc:// the reader gets the writer's
// very buffer). MarkFrameSent (on a frame about to go to ZeroMQ, after its last write) and
// MarkFrameReceived (on a frame from ZeroMQ, before its first read) make that edge visible as a
// release and an acquire on the frame's data. OutgoingMessage::ToFrame, SendRouted and
// IncomingMessage::Parse mark theirs; code that sends or reads other frames marks them itself.
// No-ops without TSan.
#ifndef TESSERA_TRANSPORT_FRAME_HANDOVER_H_
#define TESSERA_TRANSPORT_FRAME_HANDOVER_H_

#include <zmq.hpp>

namespace tessera {

void MarkFrameSent(const zmq::message_t& frame);
void MarkFrameReceived(const zmq::message_t& frame);

}  // namespace tessera

#endif  // TESSERA_TRANSPORT_FRAME_HANDOVER_H_
