#include "checkpoint/record_shares.h"

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <vector>

namespace tessera::internal::checkpoint {

int64_t ShareElementBytes(const ArrayBase& a) {
  return a.rank() * static_cast<int64_t>(sizeof(int64_t)) +
         static_cast<int64_t>(a.element_bytes()) + static_cast<int64_t>(sizeof(RecordOrder));
}

Result<FileRecord> WriteRecordShare(const std::string& dir, const std::string& name,
                                    const ArrayBase& a, int worker) {
  const RecordPartition* p = a.record_partition();
  if (p == nullptr) {
    return Status::FailedPrecondition(
        fmt::format("array #{} is not partitioned: no share to write", a.id()));
  }
  const auto n = static_cast<size_t>(a.size());
  // The storage itself, no copy: keys, values, places (made here when the share keeps them
  // implicit, in its keys' order).
  std::vector<RecordOrder> made;
  const RecordOrder* places = a.order_data();
  if (places == nullptr) {
    made.resize(n);
    for (size_t p = 0; p < n; ++p) made[p] = a.place_at(p);
    places = made.data();
  }
  const std::vector<std::span<const char>> pieces = {
      {reinterpret_cast<const char*>(a.key_data()), n * static_cast<size_t>(a.rank()) * sizeof(int64_t)},
      {static_cast<const char*>(const_cast<ArrayBase&>(a).value_data()), n * a.element_bytes()},
      {reinterpret_cast<const char*>(places), n * sizeof(RecordOrder)}};
  Result<FileRecord> f = WriteDataFile(dir, name, pieces);
  if (!f.ok()) return f.status();
  f->share = RecordShare{
      .worker = worker, .dim = p->dim, .lo = p->lo, .hi = p->hi, .count = static_cast<int64_t>(n)};
  return f;
}

Result<RecordBatch> ReadRecordShare(const std::string& dir, const FileRecord& file,
                                    const ArrayBase& a,
                                    const std::optional<RecordPartition>& keep) {
  const std::string path = dir + "/" + file.name;
  if (!file.share || file.share->count < 0 ||
      static_cast<uint64_t>(file.share->count * ShareElementBytes(a)) != file.bytes) {
    return Status::DataLoss(fmt::format(
        "{}: not a share of array #{} ({} bytes for {} elements of {} bytes)", path, a.id(),
        file.bytes, file.share ? file.share->count : -1, ShareElementBytes(a)));
  }
  const auto n = static_cast<size_t>(file.share->count);
  const int rank = a.rank();
  if (keep && (keep->dim < 0 || keep->dim >= rank)) {
    return Status::InvalidArgument(
        fmt::format("array #{}: no key dim {} to keep a range of", a.id(), keep->dim));
  }
  RecordBatch b;
  b.keys.resize(n * static_cast<size_t>(rank));
  b.values.resize(n * a.element_bytes());
  b.order.resize(n);
  const std::vector<std::span<char>> pieces = {
      {reinterpret_cast<char*>(b.keys.data()), b.keys.size() * sizeof(int64_t)},
      {b.values.data(), b.values.size()},
      {reinterpret_cast<char*>(b.order.data()), n * sizeof(RecordOrder)}};
  TESSERA_RETURN_IF_ERROR(ReadDataFileInto(dir, file, pieces));
  const size_t e = a.element_bytes();
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t* key = b.keys.data() + i * static_cast<size_t>(rank);
    for (int d = 0; d < rank; ++d) {
      if (key[d] < 0 || key[d] >= a.extent(d)) {
        return Status::DataLoss(fmt::format(
            "{}: element {} has key[{}] = {}, outside array #{}'s extent {}", path, i, d, key[d],
            a.id(), a.extent(d)));
      }
    }
    if (keep && (key[keep->dim] < keep->lo || key[keep->dim] >= keep->hi)) continue;
    if (kept != i) {
      std::copy(key, key + rank, b.keys.data() + kept * static_cast<size_t>(rank));
      std::copy(b.values.data() + i * e, b.values.data() + (i + 1) * e,
                b.values.data() + kept * e);
      b.order[kept] = b.order[i];
    }
    ++kept;
  }
  if (kept != n) {
    b.keys.resize(kept * static_cast<size_t>(rank));
    b.values.resize(kept * e);
    b.order.resize(kept);
  }
  return b;
}

}  // namespace tessera::internal::checkpoint
