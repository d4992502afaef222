#include "tessera/internal/permuted_index.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace tessera::internal {

bool BuildPermutedMap(int rank, const ArrayBase& source, const ArrayBase& target,
                      const int* perm, std::vector<uint32_t>* map) {
  map->clear();
  const int64_t n = source.size(), m = target.size(), rows = target.extent(0);
  if (m >= static_cast<int64_t>(std::numeric_limits<uint32_t>::max()) ||
      rows > 4 * m + 1024) {
    return false;
  }
  const int64_t* src = source.key_data();
  const int64_t* dst = target.key_data();
  if (n > 0 && (src == nullptr || dst == nullptr)) return false;
  // cursor[r]: the next target position of row r the source should reach (target positions of
  // a row in storage order, from a counting pass).
  std::vector<int64_t> start(static_cast<size_t>(rows) + 1, 0);
  for (int64_t q = 0; q < m; ++q) ++start[static_cast<size_t>(dst[q * rank]) + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  // row_pos: the target's positions row by row; empty when it is stored grouped by row (then
  // the positions themselves).
  std::vector<uint32_t> row_pos;
  bool grouped = true;
  for (int64_t q = 1; q < m && grouped; ++q) grouped = dst[(q - 1) * rank] <= dst[q * rank];
  if (!grouped) {
    row_pos.resize(static_cast<size_t>(m));
    std::vector<int64_t> fill(start.begin(), start.end() - 1);
    for (int64_t q = 0; q < m; ++q) {
      row_pos[static_cast<size_t>(fill[static_cast<size_t>(dst[q * rank])]++)] =
          static_cast<uint32_t>(q);
    }
  }
  std::vector<int64_t>& cursor = start;  // start[r] advances through row r
  std::vector<int64_t> end(start.begin() + 1, start.end());
  map->resize(static_cast<size_t>(n));
  for (int64_t p = 0; p < n; ++p) {
    const int64_t* k = src + p * rank;
    const int64_t r = k[perm[0]];
    if (r < 0 || r >= rows || cursor[static_cast<size_t>(r)] >= end[static_cast<size_t>(r)]) {
      map->clear();
      return false;
    }
    const int64_t c = cursor[static_cast<size_t>(r)]++;
    const uint32_t q = grouped ? static_cast<uint32_t>(c) : row_pos[static_cast<size_t>(c)];
    const int64_t* t = dst + static_cast<int64_t>(q) * rank;
    for (int d = 0; d < rank; ++d) {
      if (t[d] != k[perm[d]]) {
        map->clear();
        return false;
      }
    }
    (*map)[static_cast<size_t>(p)] = q;
  }
  return true;
}

std::vector<std::vector<int>> CandidatePermutations(int rank, const int64_t* source_key,
                                                    const int64_t* key, int limit) {
  std::vector<std::vector<int>> out;
  std::vector<int> perm(static_cast<size_t>(rank));
  std::vector<bool> used(static_cast<size_t>(rank), false);
  // Depth-first over target dims, trying source dim d itself first (the identity first).
  auto fill = [&](auto& self, int d) -> void {
    if (static_cast<int>(out.size()) >= limit) return;
    if (d == rank) {
      out.push_back(perm);
      return;
    }
    for (int i = 0; i < rank; ++i) {
      const int c = (d + i) % rank;
      if (used[static_cast<size_t>(c)] || source_key[c] != key[d]) continue;
      used[static_cast<size_t>(c)] = true;
      perm[static_cast<size_t>(d)] = c;
      self(self, d + 1);
      used[static_cast<size_t>(c)] = false;
    }
  };
  fill(fill, 0);
  return out;
}

const PermutedMap::Built* PermutedMap::Build(const ArrayBase& target, uint64_t target_version,
                                             int rank, const int64_t* key) {
  std::lock_guard<std::mutex> lock(build_);
  const LoopPosition& at = current_loop_position;
  const Built* now = current_.load(std::memory_order_relaxed);
  if (now != nullptr && now->space == at.space && now->space_id == at.space_id &&
      now->space_version == at.space_version && now->target_version == target_version) {
    return now;  // another thread of this loop built it
  }
  auto fresh = std::make_unique<Built>();
  fresh->space = at.space;
  fresh->space_id = at.space_id;
  fresh->space_version = at.space_version;
  fresh->target_version = target_version;
  const ArrayBase& space = *at.space;
  const int64_t p = at.position;
  if (space.is_sparse() && space.rank() == rank && target.is_sparse() && p >= 0 &&
      p < space.size()) {
    fresh->source_keys = space.key_data();
    // A few candidates at most (components equal by chance); the first whose map fits wins.
    for (std::vector<int>& perm :
         CandidatePermutations(rank, fresh->source_keys + p * rank, key, 8)) {
      if (BuildPermutedMap(rank, space, target, perm.data(), &fresh->map)) {
        fresh->perm = std::move(perm);
        break;
      }
    }
  }
  if (fresh->map.empty()) std::vector<uint32_t>().swap(fresh->map);
  // An empty map stays for these layouts: nothing is retried until one changes.
  if (owned_ != nullptr) std::vector<uint32_t>().swap(owned_->map);
  retired_ = std::move(owned_);
  owned_ = std::move(fresh);
  current_.store(owned_.get(), std::memory_order_release);
  return owned_.get();
}

}  // namespace tessera::internal
