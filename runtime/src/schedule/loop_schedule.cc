#include "schedule/loop_schedule.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <utility>

#include "tessera/common/check.h"

namespace tessera::internal {
namespace {

using Json = nlohmann::json;

// The only format version this runtime reads (tessc's kScheduleFormatVersion).
constexpr int kFormatVersion = 1;
// Keys of higher rank do not occur in practice; the bound keeps the determinant below exact.
constexpr int kMaxRank = 8;

Result<int> DimField(const Json& j, const char* name, int rank, bool required) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) {
    if (required) return Status::InvalidArgument(std::string("schedule lacks '") + name + "'");
    return -1;
  }
  if (!it->is_number_integer()) {
    return Status::InvalidArgument(std::string("schedule field '") + name + "' is not an integer");
  }
  const int64_t d = it->get<int64_t>();
  if (d < 0 || d >= rank) {
    return Status::InvalidArgument(std::string("schedule field '") + name +
                                   "' = " + std::to_string(d) + " is not a key dim of a rank-" +
                                   std::to_string(rank) + " space");
  }
  return static_cast<int>(d);
}

// Exact determinant by Laplace expansion (n <= kMaxRank); nullopt if an intermediate value
// overflows int64_t, which no real skew comes near.
std::optional<int64_t> Determinant(const std::vector<std::vector<int64_t>>& m) {
  const size_t n = m.size();
  if (n == 1) return m[0][0];
  int64_t det = 0;
  for (size_t c = 0; c < n; ++c) {
    if (m[0][c] == 0) continue;
    std::vector<std::vector<int64_t>> minor;
    for (size_t r = 1; r < n; ++r) {
      std::vector<int64_t> row;
      for (size_t k = 0; k < n; ++k) {
        if (k != c) row.push_back(m[r][k]);
      }
      minor.push_back(std::move(row));
    }
    const std::optional<int64_t> sub = Determinant(minor);
    int64_t term = 0;
    if (!sub || __builtin_mul_overflow(m[0][c], *sub, &term)) return std::nullopt;
    if (c % 2 == 1) term = -term;
    if (__builtin_add_overflow(det, term, &det)) return std::nullopt;
  }
  return det;
}

std::string VectorText(const std::vector<std::optional<int64_t>>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s += ", ";
    s += v[i] ? std::to_string(*v[i]) : "*";
  }
  return s + ")";
}

bool IsZero(const std::optional<int64_t>& c) { return c.has_value() && *c == 0; }

// The rotation runs blocks (space p, time (p + t) mod P): two iterations may run concurrently
// unless they share the space or the time block, and blocks are not visited in key order. So a
// dependence must stay inside one block (zero in both dims: serial order within the block), or
// cross blocks only along one of the two dims with a free direction ("*"), with no constant
// distance elsewhere that the rotated order could reverse. Same rule as tessc's chooser.
bool Dep2DOk(const std::vector<std::optional<int64_t>>& v, int s, int t) {
  const bool zs = IsZero(v[s]);
  const bool zt = IsZero(v[t]);
  if (zs && zt) return true;
  if (!zs && !zt) return false;
  if ((zs ? v[t] : v[s]).has_value()) return false;
  for (size_t u = 0; u < v.size(); ++u) {
    if (static_cast<int>(u) != s && static_cast<int>(u) != t && v[u].has_value() && *v[u] != 0) {
      return false;
    }
  }
  return true;
}

// Wavefront h carries dependence v when the later iteration lies on a later wavefront:
// h . v >= 1 with v oriented from the earlier iteration (lexicographic key order) to the later.
bool CarriedByWavefront(const std::vector<std::optional<int64_t>>& v,
                        const std::vector<int64_t>& h) {
  int sign = 0;
  for (const auto& c : v) {
    if (!c.has_value()) return false;  // order of the two iterations unknown
    if (*c != 0) {
      sign = *c > 0 ? 1 : -1;
      break;
    }
  }
  if (sign == 0) return true;  // same iteration
  int64_t dot = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].has_value()) {
      if (h[i] != 0) return false;
      continue;
    }
    dot += h[i] * *v[i] * sign;
  }
  return dot >= 1;
}

std::string StringOr(const Json& j, const char* name, std::string fallback) {
  auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

bool BoolOr(const Json& j, const char* name, bool fallback) {
  auto it = j.find(name);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

int IntOr(const Json& j, const char* name, int fallback) {
  auto it = j.find(name);
  return it != j.end() && it->is_number_integer() ? it->get<int>() : fallback;
}

// The key dim d when the array's index_map says dim 0 follows key[d] and every access's first
// subscript is exactly key[d] (tessc's {"key": e_d, "constant": 0}); -1 otherwise.
int ExactRowKeyDim(const Json& a) {
  auto map = a.find("index_map");
  if (map == a.end() || !map->is_array() || map->empty() || !(*map)[0].is_number_integer()) {
    return -1;
  }
  const int d = (*map)[0].get<int>();
  auto accesses = a.find("accesses");
  if (d < 0 || accesses == a.end() || !accesses->is_array() || accesses->empty()) return -1;
  for (const Json& access : *accesses) {
    auto subscripts = access.find("subscripts");
    if (!access.is_object() || subscripts == access.end() || !subscripts->is_array() ||
        subscripts->empty() || !(*subscripts)[0].is_object()) {
      return -1;
    }
    const Json& first = (*subscripts)[0];
    auto key = first.find("key");
    if (IntOr(first, "constant", 1) != 0 || key == first.end() || !key->is_array() ||
        static_cast<int>(key->size()) <= d) {
      return -1;
    }
    for (size_t i = 0; i < key->size(); ++i) {
      if (!(*key)[i].is_number_integer() ||
          (*key)[i].get<int>() != (static_cast<int>(i) == d ? 1 : 0)) {
        return -1;
      }
    }
  }
  return d;
}

// One entry of the JSON's `arrays`; fields that are missing or of the wrong type keep the
// conservative default (unbound, placement unknown).
LoopSchedule::Array ParseArray(const Json& a) {
  LoopSchedule::Array out;
  out.name = StringOr(a, "name", "?");
  out.placement = StringOr(a, "placement", "");
  const std::string kind = StringOr(a, "kind", "");
  out.relaxed = kind == "relaxed";
  out.may_alias = kind == "may_alias";
  out.element_bytes = IntOr(a, "element_bytes", 0);
  out.rank = IntOr(a, "rank", 0);
  out.array_dim = IntOr(a, "array_dim", -1);
  out.key_dim = IntOr(a, "key_dim", -1);
  if (auto halo = a.find("halo"); halo != a.end() && halo->is_array() && halo->size() == 2 &&
                                  (*halo)[0].is_number_integer() &&
                                  (*halo)[1].is_number_integer()) {
    out.halo_lo = (*halo)[0].get<int64_t>();
    out.halo_hi = (*halo)[1].get<int64_t>();
  }
  out.read = BoolOr(a, "read", true);
  out.write = BoolOr(a, "write", true);
  out.row_key_dim = ExactRowKeyDim(a);
  auto origin = a.find("origin");
  if (origin != a.end() && origin->is_object() && origin->contains("file") &&
      (*origin)["file"].is_string() && origin->contains("line") &&
      (*origin)["line"].is_number_unsigned()) {
    LoopSchedule::Origin o;
    o.file = (*origin)["file"].get<std::string>();
    o.line = (*origin)["line"].get<unsigned>();
    o.column = static_cast<unsigned>(std::max(0, IntOr(*origin, "column", 0)));
    o.member = StringOr(*origin, "member", "");
    out.origin = std::move(o);
    out.loop_only = BoolOr(a, "loop_only", false);
  } else {
    out.origin_unknown = StringOr(a, "origin_unknown", "tessc recorded no origin");
  }
  return out;
}

}  // namespace

const char* LoopStrategyName(LoopStrategy s) {
  switch (s) {
    case LoopStrategy::kIndependent:
      return "independent";
    case LoopStrategy::k1D:
      return "1d";
    case LoopStrategy::k2D:
      return "2d";
    case LoopStrategy::kUnimodular:
      return "unimodular";
    case LoopStrategy::kDataParallel:
      return "data_parallel";
  }
  return "?";
}

Result<LoopSchedule> ParseLoopSchedule(std::string_view text) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidArgument("schedule is not a JSON object");
  }
  auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer() ||
      version->get<int64_t>() != kFormatVersion) {
    return Status::InvalidArgument(
        "schedule format version " +
        (version == j.end() ? std::string("(missing)") : version->dump()) +
        " is not the supported version " + std::to_string(kFormatVersion));
  }
  LoopSchedule s;
  auto space = j.find("space");
  if (space == j.end() || !space->is_object() || !space->contains("rank") ||
      !(*space)["rank"].is_number_integer()) {
    return Status::InvalidArgument("schedule lacks 'space.rank'");
  }
  const int64_t rank = (*space)["rank"].get<int64_t>();
  if (rank < 1 || rank > kMaxRank) {
    return Status::InvalidArgument("schedule has iteration-space rank " + std::to_string(rank));
  }
  s.rank = static_cast<int>(rank);

  auto strategy = j.find("strategy");
  if (strategy == j.end() || !strategy->is_string()) {
    return Status::InvalidArgument("schedule lacks 'strategy'");
  }
  const std::string name = strategy->get<std::string>();
  if (name == "independent") {
    s.strategy = LoopStrategy::kIndependent;
  } else if (name == "1d") {
    s.strategy = LoopStrategy::k1D;
  } else if (name == "2d") {
    s.strategy = LoopStrategy::k2D;
  } else if (name == "unimodular") {
    s.strategy = LoopStrategy::kUnimodular;
  } else if (name == "data_parallel") {
    s.strategy = LoopStrategy::kDataParallel;
  } else {
    return Status::InvalidArgument("unknown schedule strategy '" + name + "'");
  }

  const bool unimodular = s.strategy == LoopStrategy::kUnimodular;
  Result<int> space_dim = DimField(j, "space_dim", s.rank, /*required=*/!unimodular);
  if (!space_dim.ok()) return space_dim.status();
  s.space_dim = *space_dim;
  Result<int> time_dim = DimField(j, "time_dim", s.rank, s.strategy == LoopStrategy::k2D);
  if (!time_dim.ok()) return time_dim.status();
  s.time_dim = *time_dim;
  if (s.strategy == LoopStrategy::k2D && s.space_dim == s.time_dim) {
    return Status::InvalidArgument("2d schedule with the same space and time dim");
  }

  if (unimodular) {
    auto skew = j.find("skew");
    if (skew == j.end() || !skew->is_array() || skew->size() != static_cast<size_t>(s.rank)) {
      return Status::InvalidArgument("unimodular schedule needs a " + std::to_string(s.rank) + "x" +
                                     std::to_string(s.rank) + " 'skew'");
    }
    for (const Json& row : *skew) {
      if (!row.is_array() || row.size() != static_cast<size_t>(s.rank)) {
        return Status::InvalidArgument("unimodular schedule's skew is not " +
                                       std::to_string(s.rank) + "x" + std::to_string(s.rank));
      }
      std::vector<int64_t> r;
      for (const Json& c : row) {
        if (!c.is_number_integer()) return Status::InvalidArgument("skew entry is not an integer");
        const int64_t v = c.get<int64_t>();
        if (v < -(int64_t{1} << 20) || v > (int64_t{1} << 20)) {
          return Status::InvalidArgument("skew entry out of range");
        }
        r.push_back(v);
      }
      s.skew.push_back(std::move(r));
    }
    const std::optional<int64_t> det = Determinant(s.skew);
    if (!det || (*det != 1 && *det != -1)) {
      return Status::InvalidArgument("unimodular schedule's skew has determinant " +
                                     (det ? std::to_string(*det) : std::string("(overflow)")) +
                                     ", not +-1");
    }
  }

  if (auto dp = j.find("data_parallel"); dp != j.end() && dp->is_object()) {
    auto permitted = dp->find("permitted");
    s.data_parallel_permitted =
        permitted != dp->end() && permitted->is_boolean() && permitted->get<bool>();
  }

  if (auto deps = j.find("dependences"); deps != j.end()) {
    if (!deps->is_array()) return Status::InvalidArgument("schedule 'dependences' is not a list");
    for (const Json& d : *deps) {
      auto vec = d.is_object() ? d.find("vector") : d.end();
      if (vec == d.end() || !vec->is_array() || vec->size() != static_cast<size_t>(s.rank)) {
        return Status::InvalidArgument("dependence vector does not have the space's rank " +
                                       std::to_string(s.rank));
      }
      std::vector<std::optional<int64_t>> v;
      for (const Json& c : *vec) {
        if (c.is_number_integer()) {
          v.emplace_back(c.get<int64_t>());
        } else if (c.is_string() && c.get<std::string>() == "*") {
          v.emplace_back(std::nullopt);
        } else {
          return Status::InvalidArgument("dependence component " + c.dump() +
                                         " is neither an integer nor \"*\"");
        }
      }
      s.dependences.push_back(std::move(v));
      std::vector<int64_t> ray;
      if (auto r = d.find("ray"); r != d.end() && r->is_array() &&
                                  r->size() == static_cast<size_t>(s.rank)) {
        for (const Json& c : *r) {
          if (!c.is_number_integer()) return Status::InvalidArgument("dependence ray " + r->dump() + " is not integers");
          ray.push_back(c.get<int64_t>());
        }
      }
      s.rays.push_back(std::move(ray));
    }
  }

  if (auto arrays = j.find("arrays"); arrays != j.end() && arrays->is_array() && !arrays->empty()) {
    // tessc's conservative cases (docs/tessc.md) all end up as recorded accesses ("any element
    // read and written" of the arrays concerned, or of every look-alike for a may-alias name),
    // so the array list alone says what may be written.
    s.writes_unknown = false;
    bool first = true;
    for (const Json& a : *arrays) {
      if (!a.is_object()) {
        s.writes_unknown = true;
        continue;
      }
      const bool written = a.value("write", true);
      const std::string kind = a.value("kind", std::string());
      const bool relaxed = kind == "relaxed";
      if (kind == "may_alias") s.writes_unknown = true;
      if (first) s.space_written = written;
      first = false;
      if (written && !relaxed) {
        LoopSchedule::WrittenArray w;
        w.element_bytes = a.value("element_bytes", 0);
        w.rank = a.value("rank", 0);
        if (w.element_bytes <= 0 || w.rank <= 0) s.writes_unknown = true;
        const std::string placement = a.value("placement", std::string());
        auto array_dim = a.find("array_dim");
        auto key_dim = a.find("key_dim");
        auto halo = a.find("halo");
        if ((placement == "local" || placement == "rotating") && array_dim != a.end() &&
            array_dim->is_number_integer() && array_dim->get<int>() == 0 && key_dim != a.end() &&
            key_dim->is_number_integer() && halo != a.end() && halo->is_array() &&
            halo->size() == 2 && (*halo)[0].is_number_integer() && (*halo)[1].is_number_integer()) {
          w.row_key_dim = key_dim->get<int>();
          w.halo_lo = (*halo)[0].get<int64_t>();
          w.halo_hi = (*halo)[1].get<int64_t>();
          if (w.row_key_dim < 0 || w.row_key_dim >= s.rank) w.row_key_dim = -1;
        }
        s.written.push_back(w);
      }
      if (written && !relaxed && a.value("placement", std::string()) == "servers") {
        s.shared_written_arrays.push_back(a.value("name", std::string("?")));
      }
      s.arrays.push_back(ParseArray(a));
    }
  }
  return s;
}

Status CheckScheduleFitsSite(const LoopSchedule& s, const LoopSite& site, const ArrayBase& space) {
  if (s.rank != space.rank()) {
    return Status::FailedPrecondition(
        "the schedule is for a rank-" + std::to_string(s.rank) +
        " iteration space but this parallel_for iterates over a rank-" +
        std::to_string(space.rank()) + " array");
  }
  if (s.data_parallel_permitted != site.data_parallel) {
    return Status::FailedPrecondition(std::string("the schedule was computed for a call ") +
                                      (s.data_parallel_permitted ? "with" : "without") +
                                      " tessera::DataParallel, but this call is " +
                                      (site.data_parallel ? "with" : "without"));
  }
  if (s.strategy == LoopStrategy::kDataParallel) return Status::Ok();  // the user's permission

  // Defence in depth: the schedule must preserve every dependence it records, so that a stale or
  // hand-edited schedule cannot make the executor silently reorder a recurrence.
  for (size_t di = 0; di < s.dependences.size(); ++di) {
    const auto& v = s.dependences[di];
    bool ok = true;
    switch (s.strategy) {
      case LoopStrategy::kIndependent:
      case LoopStrategy::k1D:
        ok = IsZero(v[s.space_dim]);
        break;
      case LoopStrategy::k2D:
        ok = Dep2DOk(v, s.space_dim, s.time_dim);
        break;
      case LoopStrategy::kUnimodular:
        if (di < s.rays.size() && !s.rays[di].empty()) {
          // The dependences are exactly t * ray: check the ray as a constant vector.
          std::vector<std::optional<int64_t>> r(s.rays[di].begin(), s.rays[di].end());
          ok = CarriedByWavefront(r, s.skew[0]);
        } else {
          ok = CarriedByWavefront(v, s.skew[0]);
        }
        break;
      case LoopStrategy::kDataParallel:
        break;
    }
    if (!ok) {
      return Status::FailedPrecondition(std::string("the ") + LoopStrategyName(s.strategy) +
                                        " schedule does not preserve its dependence " +
                                        VectorText(v));
    }
  }
  return Status::Ok();
}

LoopSchedule ScheduleForSiteOrDie(const LoopSite& site, const ArrayBase& space) {
  Result<LoopSchedule> parsed = ParseLoopSchedule(site.schedule->json);
  Status why = parsed.ok() ? CheckScheduleFitsSite(*parsed, site, space) : parsed.status();
  if (why.ok()) return std::move(parsed).value();
  const std::string msg =
      "the schedule tessc embedded for this parallel_for does not fit the call (" + why.message() +
      "); the binary's schedules are out of date with its source: rebuild it (tessera_add_program "
      "re-runs tessc). Schedule: " +
      std::string(site.schedule->json);
  CheckFailed(site.location.file_name(), static_cast<int>(site.location.line()),
              "embedded schedule fits its parallel_for:", msg.c_str());
}

std::optional<std::vector<std::string>> TesscSerialReasons(std::string_view json) {
  const Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  auto strategy = j.find("strategy");
  if (strategy == j.end() || *strategy != "serial") return std::nullopt;
  std::vector<std::string> reasons;
  auto listed = j.find("serial_reasons");
  if (listed != j.end() && listed->is_array()) {
    for (const Json& r : *listed) {
      if (r.is_string()) reasons.push_back(r.get<std::string>());
    }
  }
  return reasons;
}

std::string JoinSerialReasons(const std::vector<std::string>& reasons) {
  std::string out;
  for (size_t i = 0; i < reasons.size(); ++i) {
    if (reasons.size() > 1) out += (i > 0 ? " " : "") + ("(" + std::to_string(i + 1) + ") ");
    out += reasons[i];
  }
  return out;
}

std::string NoScheduleReason(const LoopSite& site) {
  TESSERA_CHECK(site.schedule == nullptr);
  switch (site.no_schedule) {
    case NoScheduleCause::kNotEmbedded:
      return "has no schedule from tessc (the program embeds none for this call site: it was not "
             "built with tessera_add_program)";
    case NoScheduleCause::kAmbiguous:
      return "has no schedule from tessc (several embedded schedules match this call site, so "
             "none is used)";
    case NoScheduleCause::kTesscSerial: {
      const std::vector<std::string> reasons =
          site.serial_entry != nullptr
              ? TesscSerialReasons(site.serial_entry->json).value_or(std::vector<std::string>{})
              : std::vector<std::string>{};
      std::string why = JoinSerialReasons(reasons);
      if (why.empty()) why = "tessc's warning for this call says why";
      return "has no schedule: tessc chose to run it serially (" + why + ")";
    }
  }
  return "has no schedule";
}

}  // namespace tessera::internal
