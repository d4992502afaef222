// Unit tests of the schedule serialization: the JSON schema fields and the generated C++.
#include "tessera/compiler/schedule_json.h"

#include <gtest/gtest.h>

namespace tessera::compiler {
namespace {

SiteResult MfSite() {
  SiteResult r;
  r.file = "/src/mf.cc";
  r.line = 12;
  r.column = 3;
  r.function = "main";
  r.space_element_type = "float";
  SiteModel& m = r.model;
  m.space_array = "ratings";
  m.key_rank = 2;
  for (const char* name : {"ratings", "W", "H"}) {
    ArrayInfo a;
    a.name = name;
    a.element_type = "float";
    a.element_bytes = 4;
    a.rank = 2;
    m.arrays.push_back(a);
  }
  auto access = [&](int array, std::vector<Affine> subs, bool write) {
    Access a;
    a.array = array;
    a.subscripts = std::move(subs);
    a.read = true;
    a.write = write;
    a.additive = write;
    m.accesses.push_back(a);
  };
  access(0, {Affine::KeyComponent(2, 0), Affine::KeyComponent(2, 1)}, false);
  access(1, {Affine::KeyComponent(2, 0), Affine::Unknown()}, true);
  access(2, {Affine::KeyComponent(2, 1), Affine::Unknown()}, true);
  r.decision = ChooseSchedule(m);
  return r;
}

TEST(ScheduleJsonTest, SiteCarriesWhatTheRuntimeNeeds) {
  SiteResult site = MfSite();
  ASSERT_TRUE(site.decision.schedule);
  nlohmann::ordered_json j = SiteToJson(site);
  EXPECT_EQ(j["version"], kScheduleFormatVersion);
  EXPECT_EQ(j["line"], 12);
  EXPECT_EQ(j["strategy"], "2d");
  EXPECT_EQ(j["space_dim"], 0);
  EXPECT_EQ(j["time_dim"], 1);
  EXPECT_TRUE(j["skew"].is_null());
  EXPECT_EQ(j["space"]["rank"], 2);
  ASSERT_EQ(j["arrays"].size(), 3u);
  EXPECT_EQ(j["arrays"][1]["name"], "W");
  EXPECT_EQ(j["arrays"][1]["placement"], "local");
  EXPECT_EQ(j["arrays"][1]["index_map"][0], 0);
  EXPECT_TRUE(j["arrays"][1]["index_map"][1].is_null());
  EXPECT_EQ(j["arrays"][2]["placement"], "rotating");
  EXPECT_EQ(j["arrays"][2]["key_dim"], 1);
  EXPECT_EQ(j["arrays"][2]["accesses"][0]["subscripts"][1]["unknown"], true);
  EXPECT_EQ(j["dependences"][0]["vector"][1], "*");
}

TEST(ScheduleJsonTest, RegistrationEmbedsTheExactSiteJson) {
  SiteResult site = MfSite();
  const std::string cpp = EmitRegistrationCpp("/src/mf.cc", {site});
  EXPECT_NE(cpp.find("#include <tessera/schedule.h>"), std::string::npos);
  EXPECT_NE(cpp.find("tessera::RegisterEmbeddedSchedules("), std::string::npos);
  EXPECT_NE(cpp.find("{\"/src/mf.cc\", 12, 3,"), std::string::npos);
  EXPECT_NE(cpp.find("R\"tessc(" + SiteToJson(site).dump() + ")tessc\""), std::string::npos);
}

// A site tessc runs serially is embedded too, with its reasons and nothing to schedule, so that
// the runtime can tell it from a site the program has no entry for.
TEST(ScheduleJsonTest, SerialSiteIsEmbeddedWithItsReasons) {
  const SerialSite serial{"/src/mf.cc", 20, 5, "main", {"'sum' writes 'sum'", "a call"}};
  nlohmann::ordered_json j = SerialSiteToJson(serial);
  EXPECT_EQ(j["version"], kScheduleFormatVersion);
  EXPECT_EQ(j["line"], 20);
  EXPECT_EQ(j["column"], 5);
  EXPECT_EQ(j["strategy"], "serial");
  EXPECT_EQ(j["serial_reasons"], nlohmann::ordered_json({"'sum' writes 'sum'", "a call"}));
  EXPECT_FALSE(j.contains("arrays"));

  const std::string cpp = EmitRegistrationCpp("/src/mf.cc", {MfSite()}, {serial});
  EXPECT_NE(cpp.find("{\"/src/mf.cc\", 12, 3,"), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("{\"/src/mf.cc\", 20, 5,\n     R\"tessc(" + j.dump() + ")tessc\""),
            std::string::npos)
      << cpp;
  // Alone, a serial site still makes a table: the runtime must find it.
  EXPECT_NE(EmitRegistrationCpp("/src/mf.cc", {}, {serial}).find("kTesscSchedules"),
            std::string::npos);

  const nlohmann::ordered_json tu = TranslationUnitToJson("/src/mf.cc", {MfSite()}, {serial});
  ASSERT_EQ(tu["sites"].size(), 2u);
  EXPECT_EQ(tu["sites"][0]["strategy"], "2d");
  EXPECT_EQ(tu["sites"][1], j);
}

TEST(ScheduleJsonTest, NoSitesEmitsNoTable) {
  const std::string cpp = EmitRegistrationCpp("/src/empty.cc", {});
  EXPECT_EQ(cpp.find("kTesscSchedules"), std::string::npos);
}

TEST(ScheduleJsonTest, PrettyJsonKeepsSmallValuesOnOneLine) {
  nlohmann::ordered_json j;
  j["a"] = {1, 2};
  j["b"] = {{"key", {1, 0}}, {"constant", -1}};
  j["c"] = nlohmann::ordered_json::array({nlohmann::ordered_json{{"x", {{"y", {{"z", 1}}}}}}});
  const std::string s = PrettyJson(j);
  EXPECT_NE(s.find("\"a\": [1, 2]"), std::string::npos) << s;
  EXPECT_NE(s.find("\"b\": {\"key\": [1, 0], \"constant\": -1}"), std::string::npos) << s;
  EXPECT_EQ(nlohmann::ordered_json::parse(s), j);  // still the same JSON
}

TEST(ScheduleJsonTest, SummaryNamesStrategyDimsAndPlacements) {
  EXPECT_EQ(Summary(MfSite()),
            "partitioned 2D (space: key[0], time: key[1]); 'ratings' local, 'W' local, "
            "'H' rotating");
}

}  // namespace
}  // namespace tessera::compiler
