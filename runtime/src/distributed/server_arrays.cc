#include "distributed/server_arrays.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <span>
#include <string>
#include <utility>

#include "distributed/fatal.h"
#include "tessera/common/check.h"

namespace tessera::internal {
namespace {

// Calls f(typed pointer) for the four table value types.
template <typename F>
void WithTableType(int type, F&& f) {
  switch (type) {
    case 0:
      f(static_cast<float*>(nullptr));
      break;
    case 1:
      f(static_cast<double*>(nullptr));
      break;
    case 2:
      f(static_cast<int32_t*>(nullptr));
      break;
    case 3:
      f(static_cast<int64_t*>(nullptr));
      break;
    default:
      Fatal("a RelaxedArray's element type has no parameter-server table type");
  }
}

constexpr int64_t kFlatRowWidth = 64;  // row width of tables for arrays that are not 2-D

}  // namespace

class ServerArrays::Impl {
 public:
  Impl(int rank, Context& ctx, Client& client) : rank_(rank), ctx_(ctx), client_(client) {}

  // A RelaxedArray's parameter-server table.
  struct Mirror {
    TableId table = 0;
    std::vector<char> base;  // the values as last read from (or pushed to) the servers
  };


  // Rows x width of the table that holds array `a`: a 2-D array's rows, else runs of 64.
  static std::pair<int64_t, int64_t> TableShape(const ArrayBase* a) {
    if (a->rank() == 2 && a->extent(1) > 0) return {a->extent(0), a->extent(1)};
    return {(a->value_count() + kFlatRowWidth - 1) / kFlatRowWidth, kFlatRowWidth};
  }

  void CreateArrayTable(const ArrayBase* a, TableId id, int staleness, const std::string& name) {
    const auto [rows, width] = TableShape(a);
    TableSpec spec;
    spec.id = id;
    spec.name = name;
    spec.value_type = static_cast<ValueType>(a->table_value_type());
    spec.num_rows = static_cast<uint64_t>(std::max<int64_t>(rows, 1));
    spec.width = static_cast<uint32_t>(width);
    spec.sparse = false;
    spec.staleness = static_cast<uint32_t>(staleness);
    CheckOk(client_.CreateTable(spec), "creating an array's parameter-server table");
  }

  // Adds cur - base to the table, skipping rows without change; the changed rows go to the
  // client in batches (IncRows), so the per-call costs are paid per batch, not per row.
  template <typename V>
  void PushDeltas(TableId table, const ArrayBase* a, const V* cur, const V* base) {
    constexpr size_t kBatchRows = 256;
    const auto [rows, width] = TableShape(a);
    const int64_t n = a->value_count();
    const auto w = static_cast<size_t>(width);
    std::vector<RowId> ids;
    std::vector<V> deltas;
    ids.reserve(kBatchRows);
    deltas.reserve(kBatchRows * w);
    auto send = [&] {
      CheckOk(client_.IncRows<V>(table, ids, deltas), "sending updates to the parameter servers");
      ids.clear();
      deltas.clear();
    };
    for (int64_t r = 0; r < rows; ++r) {
      const size_t at = deltas.size();
      bool nonzero = false;
      for (int64_t j = 0; j < width; ++j) {
        const int64_t i = r * width + j;
        const V d = i < n ? static_cast<V>(cur[i] - base[i]) : V{};
        deltas.push_back(d);
        nonzero |= d != V{};
      }
      if (!nonzero) {
        deltas.resize(at);
        continue;
      }
      ids.push_back(static_cast<RowId>(r));
      if (ids.size() == kBatchRows) send();
    }
    if (!ids.empty()) send();
  }

  // The table as this worker may see it (within its staleness), into out[0, value_count).
  template <typename V>
  void ReadTable(TableId table, const ArrayBase* a, V* out) {
    const auto [rows, width] = TableShape(a);
    const int64_t n = a->value_count();
    std::vector<RowId> ids(static_cast<size_t>(rows));
    std::iota(ids.begin(), ids.end(), RowId{0});
    // One batched read: a request per server for the rows not fresh enough, not a call per row.
    if (n == rows * width) {
      CheckOk(client_.GetRows<V>(0, table, ids, std::span<V>(out, static_cast<size_t>(n))),
              "reading from the parameter servers");
      return;
    }
    std::vector<V> all(static_cast<size_t>(rows * width));  // the last flat row is partial
    CheckOk(client_.GetRows<V>(0, table, ids, all), "reading from the parameter servers");
    std::copy(all.begin(), all.begin() + n, out);
  }

  // Relaxed arrays and data-parallel arrays on the servers: push what this worker changed since
  // the last sync; at a clock boundary (`clock`), clock and read the tables back within their
  // staleness; between boundaries, take what the servers have pushed already (no wait). That
  // lets managed communication (ClientOptions::comm) send updates early and bring others' back.
  // Replicated steps: only worker 0 pushes relaxed additions (everyone made the same).
  void Sync(bool replicated, bool clock) {
    bool any = !dp_.empty();
    for (auto& [id, a] : ctx_.arrays()) {
      if (!a->relaxed()) continue;
      any = true;
      Mirror& m = MirrorFor(a);
      if (replicated && rank_ != 0) continue;
      WithTableType(a->table_value_type(), [&]<typename V>(V*) {
        PushDeltas<V>(m.table, a, static_cast<const V*>(a->value_data()),
                      reinterpret_cast<const V*>(m.base.data()));
      });
      // Sent: the next push starts from here (a clock below refreshes the base anyway).
      std::memcpy(m.base.data(), a->value_data(), m.base.size());
    }
    for (auto& [id, d] : dp_) {
      WithTableType(d.array->table_value_type(), [&]<typename V>(V*) {
        PushDeltas<V>(d.table, d.array, static_cast<const V*>(d.array->value_data()),
                      reinterpret_cast<const V*>(d.synced.data()));
      });
    }
    if (!any) return;
    if (clock) {
      ++clocks_;
      CheckOk(client_.Clock(0), "clock");
    }
    for (auto& [id, a] : ctx_.arrays()) {
      if (!a->relaxed() || !clock) continue;
      Mirror& m = mirrors_.at(id);
      WithTableType(a->table_value_type(), [&]<typename V>(V*) {
        ReadTable<V>(m.table, a, static_cast<V*>(a->value_data()));
      });
      std::memcpy(m.base.data(), a->value_data(), m.base.size());
    }
    for (auto& [id, d] : dp_) RefreshDataParallel(d);
  }

  // Tables are numbered in creation order, which is the same on every worker (SPMD); small ids
  // take the client's fast path.
  TableId NextTableId() { return next_table_id_++; }

  Mirror& MirrorFor(ArrayBase* a) {
    auto it = mirrors_.find(a->id());
    if (it != mirrors_.end()) return it->second;
    Mirror m;
    m.table = NextTableId();
    CreateArrayTable(a, m.table, a->staleness(), fmt::format("relaxed-array-{}", a->id()));
    // The table starts at zero; so does the base, so the first sync pushes whatever was added.
    m.base.assign(static_cast<size_t>(a->value_count()) * a->element_bytes(), 0);
    return mirrors_.emplace(a->id(), std::move(m)).first->second;
  }

  // --- Data-parallel loops: dense arithmetic arrays go through the parameter servers. ---
  // A table per (array, staleness) holds the sum of every worker's updates to the array in
  // data-parallel loops. During a loop a worker's copy is its own value plus what the table
  // gained since its previous read (its own pushes come back through read-my-writes, so they
  // are subtracted via `synced`). At the end every worker sets start + (final table - table at
  // start), the same arithmetic on the same inputs, so the copies agree exactly.
  struct DataParallelArray {
    ArrayBase* array = nullptr;
    TableId table = 0;
    std::pair<int64_t, int> key;   // (array id, staleness): its entry in dp_tables_
    std::vector<char> start;       // the array when the loop began
    std::vector<char> synced;      // the array after the last sync
    std::vector<char> table_prev;  // the table at the last read
  };
  struct DataParallelTable {
    TableId table = 0;
    std::vector<char> table_at_rest;  // the table when no loop is running (equal on every worker)
  };

  std::vector<int64_t> BeginDataParallel(int staleness, const std::vector<ArrayBase*>& written) {
    dp_.clear();
    std::vector<int64_t> taken;
    for (ArrayBase* a : written) {
      if (a->is_sparse() || !a->arithmetic() || a->table_value_type() < 0 ||
          a->value_count() == 0) {
        continue;
      }
      const size_t bytes = static_cast<size_t>(a->value_count()) * a->element_bytes();
      auto [rest, fresh] = dp_tables_.try_emplace({a->id(), staleness});
      if (fresh) rest->second.table = NextTableId();
      const TableId table = rest->second.table;
      if (fresh) {
        CreateArrayTable(a, table, staleness,
                         fmt::format("data-parallel-array-{}-s{}", a->id(), staleness));
        rest->second.table_at_rest.assign(bytes, 0);
        // Cache every row now: the client applies a worker's own in-flight updates to cached
        // rows only, and the refreshes below rely on seeing them.
        std::vector<char> scratch(bytes);
        WithTableType(a->table_value_type(), [&]<typename V>(V*) {
          ReadTable<V>(table, a, reinterpret_cast<V*>(scratch.data()));
        });
      }
      TESSERA_CHECK_MSG(rest->second.table_at_rest.size() == bytes,
                        "array changed size between loops");
      DataParallelArray d;
      d.array = a;
      d.table = table;
      d.key = {a->id(), staleness};
      d.start.assign(static_cast<const char*>(a->value_data()),
                     static_cast<const char*>(a->value_data()) + bytes);
      d.synced = d.start;
      d.table_prev = rest->second.table_at_rest;
      dp_.emplace(a->id(), std::move(d));
      taken.push_back(a->id());
    }
    return taken;
  }

  // Between boundaries (no clock) the rows are cached and fresh enough already, so Get does not
  // wait; it returns what server pushes have brought.
  void RefreshDataParallel(DataParallelArray& d) {
    WithTableType(d.array->table_value_type(), [&]<typename V>(V*) {
      const int64_t n = d.array->value_count();
      std::vector<V> now(static_cast<size_t>(n));
      ReadTable<V>(d.table, d.array, now.data());
      V* cur = static_cast<V*>(d.array->value_data());
      V* prev = reinterpret_cast<V*>(d.table_prev.data());
      for (int64_t i = 0; i < n; ++i) {
        // What the table gained since the last read, less this worker's own pushes (already in
        // cur): synced + gain.
        cur[i] =
            static_cast<V>(reinterpret_cast<const V*>(d.synced.data())[i] + (now[i] - prev[i]));
        prev[i] = now[i];
      }
      std::memcpy(d.synced.data(), cur, static_cast<size_t>(n) * sizeof(V));
    });
  }

  // After the loop's last clock: `staleness` more clocks make a read wait for every worker's
  // last updates; then every worker computes the same final values.
  void EndDataParallel(int staleness) {
    if (dp_.empty()) return;
    for (int i = 0; i < staleness; ++i) {
      ++clocks_;
      CheckOk(client_.Clock(0), "clock");
    }
    for (auto& [id, d] : dp_) {
      auto& rest = dp_tables_.at(d.key).table_at_rest;
      WithTableType(d.array->table_value_type(), [&]<typename V>(V*) {
        const int64_t n = d.array->value_count();
        std::vector<V> final_table(static_cast<size_t>(n));
        ReadTable<V>(d.table, d.array, final_table.data());
        V* cur = static_cast<V*>(d.array->value_data());
        const V* start = reinterpret_cast<const V*>(d.start.data());
        V* at_rest = reinterpret_cast<V*>(rest.data());
        for (int64_t i = 0; i < n; ++i) {
          cur[i] = static_cast<V>(start[i] + (final_table[i] - at_rest[i]));
          at_rest[i] = final_table[i];
        }
      });
    }
    dp_.clear();
  }

  // Additions to relaxed arrays made outside loops ran on every worker alike; only worker 0
  // sends them, so they count once.
  void AdoptSerialRelaxedChanges() {
    for (auto& [id, a] : ctx_.arrays()) {
      if (!a->relaxed()) continue;
      Mirror& m = MirrorFor(a);
      if (rank_ != 0) std::memcpy(m.base.data(), a->value_data(), m.base.size());
    }
  }


  uint64_t clocks() const { return clocks_; }

  std::vector<std::pair<int64_t, int>> DataParallelTables() const {
    std::vector<std::pair<TableId, std::pair<int64_t, int>>> by_id;
    for (const auto& [key, t] : dp_tables_) {
      if (ctx_.arrays().count(key.first)) by_id.push_back({t.table, key});
    }
    std::sort(by_id.begin(), by_id.end());
    std::vector<std::pair<int64_t, int>> out;
    for (const auto& [id, key] : by_id) out.push_back(key);
    return out;
  }

  void RestoreDataParallelTables(const std::vector<std::pair<int64_t, int>>& tables) {
    for (const auto& [array, staleness] : tables) {
      auto it = ctx_.arrays().find(array);
      if (it == ctx_.arrays().end()) {
        Fatal(fmt::format("resuming: the checkpoint holds the data-parallel table of array #{}, "
                          "which the program has not created (again)",
                          array));
      }
      ArrayBase* a = it->second;
      auto [rest, fresh] = dp_tables_.try_emplace({array, staleness});
      if (!fresh) Fatal(fmt::format("resuming: array #{}'s data-parallel table exists", array));
      rest->second.table = NextTableId();
      CreateArrayTable(a, rest->second.table, staleness,
                       fmt::format("data-parallel-array-{}-s{}", array, staleness));
      // Also caches every row (see BeginDataParallel).
      rest->second.table_at_rest.assign(static_cast<size_t>(a->value_count()) * a->element_bytes(),
                                        0);
      std::vector<char>& at_rest = rest->second.table_at_rest;
      WithTableType(a->table_value_type(), [&]<typename V>(V*) {
        ReadTable<V>(rest->second.table, a, reinterpret_cast<V*>(at_rest.data()));
      });
    }
  }

 private:
  const int rank_;
  Context& ctx_;
  Client& client_;
  std::map<int64_t, Mirror> mirrors_;
  std::map<int64_t, DataParallelArray> dp_;  // by array id; during a data-parallel loop
  std::map<std::pair<int64_t, int>, DataParallelTable> dp_tables_;  // by (array id, staleness)
  TableId next_table_id_ = 0;
  uint64_t clocks_ = 0;  // clocks of the parameter-server client
};

ServerArrays::ServerArrays(int rank, Context& ctx, Client& client)
    : impl_(std::make_unique<Impl>(rank, ctx, client)) {}
ServerArrays::~ServerArrays() = default;
void ServerArrays::AdoptSerialRelaxedChanges() { impl_->AdoptSerialRelaxedChanges(); }
void ServerArrays::Sync(bool replicated, bool clock) { impl_->Sync(replicated, clock); }
std::vector<int64_t> ServerArrays::BeginDataParallel(int staleness,
                                                     const std::vector<ArrayBase*>& written) {
  return impl_->BeginDataParallel(staleness, written);
}
void ServerArrays::EndDataParallel(int staleness) { impl_->EndDataParallel(staleness); }
uint64_t ServerArrays::clocks() const { return impl_->clocks(); }
std::vector<std::pair<int64_t, int>> ServerArrays::DataParallelTables() const {
  return impl_->DataParallelTables();
}
void ServerArrays::RestoreDataParallelTables(const std::vector<std::pair<int64_t, int>>& tables) {
  impl_->RestoreDataParallelTables(tables);
}

}  // namespace tessera::internal
