// Bounds on what a received message's lists may claim (docs/security.md).
#ifndef TESSERA_TRANSPORT_LIST_BOUNDS_H_
#define TESSERA_TRANSPORT_LIST_BOUNDS_H_

#include <capnp/any.h>

namespace tessera {

// Whether `list`, a list of structs, claims elements of no bytes at all. Cap'n Proto lets such a
// list claim 2^29 elements in a few bytes (and charges its traversal limit only one word per
// element); no encoder of this schema makes one, so a handler that loops over or reserves for a
// struct list's elements refuses such a list first.
template <typename ListReader>
bool ClaimsEmptyStructs(ListReader list) {
  if (list.size() == 0) return false;
  const capnp::AnyStruct::Reader first = list[0];
  return first.getDataSection().size() == 0 && first.getPointerSection().size() == 0;
}

}  // namespace tessera

#endif  // TESSERA_TRANSPORT_LIST_BOUNDS_H_
