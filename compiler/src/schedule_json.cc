#include "tessera/compiler/schedule_json.h"

#include <algorithm>

#include "tessera/common/check.h"

namespace tessera::compiler {
namespace {

using Json = nlohmann::ordered_json;

Json SubscriptJson(const Affine& s) {
  Json j;
  if (!s.known()) {
    j["unknown"] = true;
    return j;
  }
  j["key"] = s.key_coeffs();
  j["constant"] = s.constant();
  if (!s.symbols().empty()) {
    Json syms = Json::object();
    for (const auto& [id, c] : s.symbols()) syms[id.substr(0, id.find('@'))] = c;
    j["symbols"] = syms;
  }
  j["text"] = s.ToString();
  return j;
}

const char* ModeName(const Access& a) {
  if (a.read && a.write) return a.additive ? "update_additive" : "update";
  if (a.write) return a.additive ? "add" : "write";
  return "read";
}

Json DepJson(const DepVector& v) {
  Json j = Json::array();
  for (const DepComponent& c : v) {
    if (c.any) {
      j.push_back("*");
    } else {
      j.push_back(c.distance);
    }
  }
  return j;
}

std::string KeyName(int dim) { return "key[" + std::to_string(dim) + "]"; }

// A raw string literal delimiter that cannot occur in the JSON (JSON strings escape ')' never,
// so pick one with characters JSON would not emit together).
constexpr const char* kDelim = "tessc";

int Depth(const Json& j) {
  if (!j.is_structured()) return 0;
  int d = 0;
  for (const auto& v : j) d = std::max(d, Depth(v));
  return d + 1;
}

// Up to three levels (an access's subscripts with their symbols, a dependence) print inline.
bool IsInline(const Json& j) { return Depth(j) <= 3; }

void InlineJson(const Json& j, std::string* out) {
  if (j.is_object()) {
    *out += "{";
    bool first = true;
    for (const auto& [k, v] : j.items()) {
      if (!first) *out += ", ";
      first = false;
      *out += Json(k).dump() + ": ";
      InlineJson(v, out);
    }
    *out += "}";
  } else if (j.is_array()) {
    *out += "[";
    for (size_t i = 0; i < j.size(); ++i) {
      if (i > 0) *out += ", ";
      InlineJson(j[i], out);
    }
    *out += "]";
  } else {
    *out += j.dump();
  }
}

void PrettyInto(const Json& j, int indent, std::string* out) {
  if (IsInline(j) || j.empty()) {
    InlineJson(j, out);
    return;
  }
  const std::string pad(static_cast<size_t>(indent + 2), ' ');
  const bool obj = j.is_object();
  *out += obj ? "{\n" : "[\n";
  size_t i = 0;
  for (const auto& [k, v] : j.items()) {
    *out += pad;
    if (obj) *out += Json(k).dump() + ": ";
    PrettyInto(v, indent + 2, out);
    *out += ++i < j.size() ? ",\n" : "\n";
  }
  *out += std::string(static_cast<size_t>(indent), ' ') + (obj ? "}" : "]");
}

}  // namespace

std::string PrettyJson(const Json& j) {
  std::string out;
  PrettyInto(j, 0, &out);
  return out + "\n";
}

Json SiteToJson(const SiteResult& site) {
  TESSERA_CHECK(site.decision.schedule.has_value());
  const Schedule& s = *site.decision.schedule;
  const SiteModel& m = site.model;
  Json j;
  j["version"] = kScheduleFormatVersion;
  j["file"] = site.file;
  j["line"] = site.line;
  j["column"] = site.column;
  j["function"] = site.function;
  j["space"] = {{"array", m.space_array},
                {"rank", m.key_rank},
                {"element_type", site.space_element_type}};
  j["strategy"] = StrategyName(s.strategy);
  j["space_dim"] = s.space_dim >= 0 ? Json(s.space_dim) : Json(nullptr);
  j["time_dim"] = s.time_dim >= 0 ? Json(s.time_dim) : Json(nullptr);
  j["skew"] = s.skew.empty() ? Json(nullptr) : Json(s.skew);
  j["data_parallel"] = m.data_parallel_staleness
                           ? Json{{"permitted", true}, {"staleness", *m.data_parallel_staleness}}
                           : Json{{"permitted", false}};
  j["staleness"] = s.staleness;
  Json arrays = Json::array();
  for (size_t ai = 0; ai < m.arrays.size(); ++ai) {
    const ArrayInfo& info = m.arrays[ai];
    const ArrayPlacement& p = s.placements[ai];
    Json a;
    a["name"] = info.name;
    a["placement"] = PlacementName(p.placement);
    a["kind"] = info.relaxed ? "relaxed" : info.may_alias ? "may_alias" : "dist_array";
    a["element_type"] = info.element_type;
    a["element_bytes"] = info.element_bytes;
    a["rank"] = info.rank;
    a["array_dim"] = p.array_dim >= 0 ? Json(p.array_dim) : Json(nullptr);
    a["key_dim"] = p.key_dim >= 0 ? Json(p.key_dim) : Json(nullptr);
    if (p.placement == Placement::kLocal || p.placement == Placement::kRotating) {
      a["halo"] = {p.halo_lo, p.halo_hi};
    }
    bool read = false, write = false, additive_only = true;
    // index_map[m]: the key dim that indexes array dim m in every access (key[d] + c), or null.
    Json index_map = Json::array();
    for (int dim = 0; dim < info.rank; ++dim) {
      std::optional<int> common;
      bool consistent = true;
      for (const Access& acc : m.accesses) {
        if (acc.array != static_cast<int>(ai)) continue;
        std::optional<int> k = acc.subscripts[dim].SingleKeyDim();
        if (!k || (common && *common != *k)) consistent = false;
        common = k;
      }
      index_map.push_back(consistent && common ? Json(*common) : Json(nullptr));
    }
    Json accesses = Json::array();
    for (const Access& acc : m.accesses) {
      if (acc.array != static_cast<int>(ai)) continue;
      read |= acc.read;
      write |= acc.write;
      if (acc.write && !acc.additive) additive_only = false;
      Json aj;
      aj["line"] = acc.line;
      aj["column"] = acc.column;
      aj["mode"] = ModeName(acc);
      Json subs = Json::array();
      for (const Affine& sub : acc.subscripts) subs.push_back(SubscriptJson(sub));
      aj["subscripts"] = subs;
      if (!acc.conservative_reason.empty()) aj["conservative"] = acc.conservative_reason;
      accesses.push_back(aj);
    }
    a["read"] = read;
    a["write"] = write;
    a["additive_writes_only"] = write && additive_only;
    if (info.relaxed) {
      a["staleness"] = info.staleness ? Json(*info.staleness) : Json(nullptr);
    }
    a["index_map"] = index_map;
    if (info.origin) {
      a["origin"] = {{"file", info.origin->file},
                     {"line", info.origin->line},
                     {"column", info.origin->column},
                     {"member", info.origin->member}};
      a["loop_only"] = info.loop_only;
      if (!info.loop_only) a["serial_use"] = info.serial_use;
      if (info.loop_only && !info.serial_access.empty()) a["serial_access"] = info.serial_access;
    } else {
      a["origin"] = nullptr;
      a["origin_unknown"] = info.origin_unknown.empty() ? "not recorded" : info.origin_unknown;
    }
    a["accesses"] = accesses;
    arrays.push_back(a);
  }
  j["arrays"] = arrays;
  Json deps = Json::array();
  for (const Dependence& d : s.dependences) {
    Json dj = {{"array", m.arrays[m.accesses[d.first].array].name},
               {"vector", DepJson(d.vector)},
               {"lines", {m.accesses[d.first].line, m.accesses[d.second].line}}};
    if (!d.ray.empty()) dj["ray"] = d.ray;
    deps.push_back(dj);
  }
  j["dependences"] = deps;
  j["cost"] = s.cost;
  j["conservative"] = site.conservative;
  return j;
}

Json SerialSiteToJson(const SerialSite& site) {
  Json j;
  j["version"] = kScheduleFormatVersion;
  j["file"] = site.file;
  j["line"] = site.line;
  j["column"] = site.column;
  j["function"] = site.function;
  j["strategy"] = "serial";
  j["serial_reasons"] = site.reasons;
  return j;
}

Json TranslationUnitToJson(const std::string& file, const std::vector<SiteResult>& sites,
                           const std::vector<SerialSite>& serial) {
  Json j;
  j["version"] = kScheduleFormatVersion;
  j["file"] = file;
  Json arr = Json::array();
  for (const SiteResult& s : sites) {
    if (s.decision.schedule) arr.push_back(SiteToJson(s));
  }
  for (const SerialSite& s : serial) arr.push_back(SerialSiteToJson(s));
  j["sites"] = arr;
  return j;
}

std::string EmitRegistrationCpp(const std::string& file, const std::vector<SiteResult>& sites,
                                const std::vector<SerialSite>& serial) {
  std::string out;
  out += "// Generated by tessc from " + file + ". Do not edit.\n";
  out += "#include <tessera/schedule.h>\n\n";
  std::string entries;
  auto add = [&](const std::string& site_file, unsigned line, unsigned column,
                 const std::string& json) {
    TESSERA_CHECK(json.find(std::string(")") + kDelim + "\"") == std::string::npos);
    entries += "    {" + Json(site_file).dump() + ", " + std::to_string(line) + ", " +
               std::to_string(column) + ",\n     R\"" + kDelim + "(" + json + ")" + kDelim +
               "\"},\n";
  };
  for (const SiteResult& s : sites) {
    if (s.decision.schedule) add(s.file, s.line, s.column, SiteToJson(s).dump());
  }
  for (const SerialSite& s : serial) add(s.file, s.line, s.column, SerialSiteToJson(s).dump());
  if (entries.empty()) {
    out += "// No parallel_for sites in this translation unit.\n";
    return out;
  }
  out += "namespace {\n\n";
  out += "const tessera::EmbeddedSchedule kTesscSchedules[] = {\n" + entries + "};\n\n";
  out += "[[maybe_unused]] const bool kTesscRegistered = [] {\n";
  out += "  tessera::RegisterEmbeddedSchedules(\n";
  out += "      kTesscSchedules, kTesscSchedules + sizeof(kTesscSchedules) / "
         "sizeof(kTesscSchedules[0]));\n";
  out += "  return true;\n}();\n\n}  // namespace\n";
  return out;
}

std::string Summary(const SiteResult& site) {
  TESSERA_CHECK(site.decision.schedule.has_value());
  const Schedule& s = *site.decision.schedule;
  std::string out;
  switch (s.strategy) {
    case Strategy::kIndependent:
      out = "independent (space: " + KeyName(s.space_dim) + ")";
      break;
    case Strategy::k1D:
      out = "partitioned 1D (space: " + KeyName(s.space_dim) + ")";
      break;
    case Strategy::k2D:
      out = "partitioned 2D (space: " + KeyName(s.space_dim) + ", time: " +
            KeyName(s.time_dim) + ")";
      break;
    case Strategy::kUnimodular: {
      out = "unimodular wavefront (skew [";
      for (size_t r = 0; r < s.skew.size(); ++r) {
        if (r > 0) out += "; ";
        for (size_t c = 0; c < s.skew[r].size(); ++c) {
          if (c > 0) out += " ";
          out += std::to_string(s.skew[r][c]);
        }
      }
      out += "])";
      break;
    }
    case Strategy::kDataParallel:
      out = "data-parallel (space: " + KeyName(s.space_dim) +
            ", staleness: " + std::to_string(s.staleness) + ")";
      break;
  }
  std::string places;
  for (size_t i = 0; i < site.model.arrays.size(); ++i) {
    const ArrayInfo& a = site.model.arrays[i];
    if (!places.empty()) places += ", ";
    places += "'" + a.name + "' " + PlacementName(s.placements[i].placement);
    if (a.relaxed) places += " (relaxed)";
  }
  if (!places.empty()) out += "; " + places;
  return out;
}

}  // namespace tessera::compiler
