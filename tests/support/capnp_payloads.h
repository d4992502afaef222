// Hostile Cap'n Proto payloads, laid out word by word, for tests of readers that take bytes from
// peers or files.
#ifndef TESSERA_TESTS_SUPPORT_CAPNP_PAYLOADS_H_
#define TESSERA_TESTS_SUPPORT_CAPNP_PAYLOADS_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tessera::testing {

// A flat one-segment message with a chain of structs (no data words) from the root: struct i's
// pointer path[i] leads to struct i + 1, and the last struct's pointer path.back() is `list`
// (one word of list pointer, then `tail` words). Other pointers are null (empty).
inline std::string PayloadWithList(const std::vector<int>& path, uint64_t list,
                                   const std::vector<uint64_t>& tail) {
  std::vector<uint64_t> seg(1);  // seg[0]: the root pointer, to the struct right after it
  size_t pointer_at = 0;
  for (size_t i = 0; i < path.size(); ++i) {
    const auto pointers = static_cast<uint64_t>(path[i] + 1);
    const size_t start = seg.size();
    // A struct pointer: offset (in words from the word after the pointer) << 2, then the data
    // size (0) and pointer count in the upper half.
    seg[pointer_at] = (static_cast<uint64_t>(start - pointer_at - 1) << 2) | (pointers << 48);
    seg.resize(start + pointers, 0);
    pointer_at = start + static_cast<size_t>(path[i]);
  }
  seg[pointer_at] = list;  // its content starts right after it (offset 0)
  seg.insert(seg.end(), tail.begin(), tail.end());
  std::vector<uint64_t> words = {static_cast<uint64_t>(seg.size()) << 32};  // 1 segment
  words.insert(words.end(), seg.begin(), seg.end());
  std::string out(words.size() * sizeof(uint64_t), '\0');
  std::memcpy(out.data(), words.data(), out.size());
  return out;
}

// `count` (< 2^29) empty structs at the end of `path`: a few words that claim `count` elements,
// which a reader counts as `count` words against its traversal limit. An amplification: far
// more to walk than was sent.
inline std::string AmplifiedListPayload(uint32_t count, const std::vector<int>& path = {0}) {
  return PayloadWithList(path, 1 | (uint64_t{7} << 32),  // inline composite, 0 words of content
                         {static_cast<uint64_t>(count) << 2});  // tag: `count` 0-word structs
}

// `count` (< 2^29) 8-byte elements at the end of `path` that do not fit in the message: the
// reader's bounds check refuses them.
inline std::string OversizedListPayload(uint32_t count, const std::vector<int>& path = {0}) {
  return PayloadWithList(path, 1 | (uint64_t{5} << 32) | (static_cast<uint64_t>(count) << 35), {});
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_SUPPORT_CAPNP_PAYLOADS_H_
