// Serialization of analysed sites: the JSON schema of docs/schedule-json.md and the generated C++
// that embeds it in a program (the contract of <tessera/schedule.h>).
#ifndef TESSERA_COMPILER_SCHEDULE_JSON_H_
#define TESSERA_COMPILER_SCHEDULE_JSON_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/compiler/strategy.h"

namespace tessera::compiler {

// Bumped whenever the JSON changes incompatibly; the runtime rejects versions it does not know.
inline constexpr int kScheduleFormatVersion = 1;

// One parallel_for call site as the front end saw it, with the chooser's verdict.
struct SiteResult {
  std::string file;        // absolute path as given to tessc
  unsigned line = 0;       // of the parallel_for call (its first token)
  unsigned column = 0;
  std::string function;    // enclosing function, for humans
  std::string space_element_type;
  SiteModel model;
  Decision decision;
  std::vector<std::string> conservative;  // what the front end could not see through
};

// A call site tessc runs serially (it cannot analyse the body, or the body reaches state tessc
// cannot model). It has no schedule, but it is recorded, so that the runtime can say why the loop
// runs serially instead of guessing that the program was not built with tessc.
struct SerialSite {
  std::string file;  // as SiteResult
  unsigned line = 0;
  unsigned column = 0;
  std::string function;
  std::vector<std::string> reasons;  // what tessc could not see through, as its warning says
};

// The site object of the schema. REQUIRES: site.decision.schedule (errors are not serialized).
nlohmann::ordered_json SiteToJson(const SiteResult& site);

// The site object of a serial site: strategy "serial" and its reasons, nothing to schedule.
nlohmann::ordered_json SerialSiteToJson(const SerialSite& site);

// {"version": 1, "file": ..., "sites": [...]} for every site that has a schedule, then every
// serial site.
nlohmann::ordered_json TranslationUnitToJson(const std::string& file,
                                             const std::vector<SiteResult>& sites,
                                             const std::vector<SerialSite>& serial = {});

// A C++ source that registers each scheduled site, then each serial site, through
// tessera::RegisterEmbeddedSchedules during static initialization. `json` strings are exactly
// SiteToJson(site).dump() or SerialSiteToJson(site).dump().
std::string EmitRegistrationCpp(const std::string& file, const std::vector<SiteResult>& sites,
                                const std::vector<SerialSite>& serial = {});

// Indented JSON in which arrays and objects holding only scalars (subscripts, index maps,
// dependence vectors) stay on one line, so that golden tests can match a whole access per line.
std::string PrettyJson(const nlohmann::ordered_json& j);

// Human summary used by the remark: "partitioned 2D (space: key[0], time: key[1]); W local, ...".
std::string Summary(const SiteResult& site);

}  // namespace tessera::compiler

#endif  // TESSERA_COMPILER_SCHEDULE_JSON_H_
