// Unit tests of the strategy chooser on hand-built site models.
#include "tessera/compiler/strategy.h"

#include <gtest/gtest.h>

namespace tessera::compiler {
namespace {

Affine K(int rank, int dim) { return Affine::KeyComponent(rank, dim); }
Affine C(int rank, int64_t c) { return Affine::Constant(rank, c); }
Affine U() { return Affine::Unknown(); }

// A small builder so each test reads like the loop body it models.
class SiteBuilder {
 public:
  SiteBuilder(int key_rank) { site_.key_rank = key_rank; site_.space_array = "space"; }
  int Array(const std::string& name, int rank, bool relaxed = false) {
    ArrayInfo info;
    info.name = name;
    info.relaxed = relaxed;
    info.element_type = "float";
    info.element_bytes = 4;
    info.rank = rank;
    site_.arrays.push_back(info);
    return static_cast<int>(site_.arrays.size()) - 1;
  }
  SiteBuilder& Read(int array, std::vector<Affine> subs) { return Add(array, subs, true, false, false); }
  SiteBuilder& Assign(int array, std::vector<Affine> subs) { return Add(array, subs, false, true, false); }
  SiteBuilder& AddTo(int array, std::vector<Affine> subs) { return Add(array, subs, true, true, true); }
  SiteBuilder& Permit(int staleness) {
    site_.data_parallel_staleness = staleness;
    return *this;
  }
  const SiteModel& site() const { return site_; }

 private:
  SiteBuilder& Add(int array, std::vector<Affine> subs, bool r, bool w, bool additive) {
    Access a;
    a.array = array;
    a.subscripts = std::move(subs);
    a.read = r;
    a.write = w;
    a.additive = additive;
    a.line = static_cast<unsigned>(site_.accesses.size() + 1);
    site_.accesses.push_back(a);
    return *this;
  }
  SiteModel site_;
};

TEST(StrategyTest, RowScalingIsIndependent) {
  SiteBuilder b(2);
  int a = b.Array("A", 2);
  b.Read(a, {K(2, 0), K(2, 1)}).Assign(a, {K(2, 0), K(2, 1)});
  Decision d = ChooseSchedule(b.site());
  ASSERT_TRUE(d.schedule);
  EXPECT_EQ(d.schedule->strategy, Strategy::kIndependent);
  EXPECT_EQ(d.schedule->placements[0].placement, Placement::kLocal);
}

TEST(StrategyTest, MatrixFactorizationIs2D) {
  SiteBuilder b(2);
  int w = b.Array("W", 2);
  int h = b.Array("H", 2);
  b.AddTo(w, {K(2, 0), U()}).AddTo(h, {K(2, 1), U()});
  Decision d = ChooseSchedule(b.site());
  ASSERT_TRUE(d.schedule);
  EXPECT_EQ(d.schedule->strategy, Strategy::k2D);
  EXPECT_EQ(d.schedule->space_dim, 0);
  EXPECT_EQ(d.schedule->time_dim, 1);
  EXPECT_EQ(d.schedule->placements[w].placement, Placement::kLocal);
  EXPECT_EQ(d.schedule->placements[h].placement, Placement::kRotating);
  EXPECT_EQ(d.schedule->placements[h].array_dim, 0);
}

TEST(StrategyTest, CostModelRotatesTheSmallerElement) {
  // Same shape as MF, but W holds doubles: rotating H (floats) is cheaper, so space = key[0];
  // with the types swapped the chooser flips the dims.
  SiteBuilder b(2);
  int w = b.Array("W", 2);
  int h = b.Array("H", 2);
  b.AddTo(w, {K(2, 0), U()}).AddTo(h, {K(2, 1), U()});
  SiteModel m = b.site();
  m.arrays[h].element_bytes = 8;
  Decision d = ChooseSchedule(m);
  ASSERT_TRUE(d.schedule);
  EXPECT_EQ(d.schedule->space_dim, 1);
  EXPECT_EQ(d.schedule->placements[h].placement, Placement::kLocal);
  EXPECT_EQ(d.schedule->placements[w].placement, Placement::kRotating);
}

TEST(StrategyTest, OneSidedUpdateIs1D) {
  SiteBuilder b(2);
  int w = b.Array("W", 2);
  int h = b.Array("H", 2);
  b.AddTo(w, {K(2, 0), U()}).Read(h, {K(2, 1), U()});
  Decision d = ChooseSchedule(b.site());
  ASSERT_TRUE(d.schedule);
  EXPECT_EQ(d.schedule->strategy, Strategy::k1D);
  EXPECT_EQ(d.schedule->space_dim, 0);
  EXPECT_EQ(d.schedule->placements[h].placement, Placement::kReplicated);
}

TEST(StrategyTest, LdaWithSharedTotalsIsAnErrorNamingTheTotals) {
  SiteBuilder b(2);
  int dt = b.Array("doc_topic", 2);
  int wt = b.Array("word_topic", 2);
  int tot = b.Array("totals", 1);
  b.AddTo(dt, {K(2, 0), U()}).AddTo(wt, {K(2, 1), U()}).AddTo(tot, {U()});
  Decision d = ChooseSchedule(b.site());
  ASSERT_FALSE(d.schedule);
  ASSERT_TRUE(d.error);
  EXPECT_EQ(b.site().accesses[d.error->blocking.first].array, tot);
  EXPECT_EQ(ToString(d.error->blocking.vector), "(*, *)");
}

TEST(StrategyTest, LdaWithRelaxedTotalsIs2D) {
  SiteBuilder b(2);
  int dt = b.Array("doc_topic", 2);
  int wt = b.Array("word_topic", 2);
  int tot = b.Array("totals", 1, /*relaxed=*/true);
  b.AddTo(dt, {K(2, 0), U()}).AddTo(wt, {K(2, 1), U()}).AddTo(tot, {U()});
  Decision d = ChooseSchedule(b.site());
  ASSERT_TRUE(d.schedule);
  EXPECT_EQ(d.schedule->strategy, Strategy::k2D);
  EXPECT_EQ(d.schedule->placements[tot].placement, Placement::kServers);
}

TEST(StrategyTest, DataParallelNeedsPermission) {
  SiteBuilder b(2);
  int w = b.Array("w", 1);
  b.Read(w, {K(2, 1)}).AddTo(w, {K(2, 1)});
  // Every sample touches w at its own feature: conflicts across key[0] in any order.
  SiteModel m = b.site();
  m.accesses[0].subscripts = {U()};
  m.accesses[1].subscripts = {U()};
  Decision no = ChooseSchedule(m);
  EXPECT_FALSE(no.schedule);
  ASSERT_TRUE(no.error);
  m.data_parallel_staleness = 2;
  Decision yes = ChooseSchedule(m);
  ASSERT_TRUE(yes.schedule);
  EXPECT_EQ(yes.schedule->strategy, Strategy::kDataParallel);
  EXPECT_EQ(yes.schedule->staleness, 2);
  EXPECT_EQ(yes.schedule->placements[w].placement, Placement::kServers);
}

TEST(StrategyTest, DataParallelRejectsPlainAssignment) {
  SiteBuilder b(1);
  int w = b.Array("w", 1);
  b.Assign(w, {U()}).Permit(0);
  Decision d = ChooseSchedule(b.site());
  ASSERT_FALSE(d.schedule);
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.error->kind, ScheduleError::Kind::kNonAdditive);
  EXPECT_EQ(d.error->nonadditive_access, 0);
}

TEST(StrategyTest, PreferDataParallelAppliesOnlyToPermittedSites) {
  // MF's SGD loop: 2D is legal, so the permission alone keeps 2D; with prefer_data_parallel a
  // permitted site goes data-parallel (W local with the space dim, H on the servers), and a site
  // without the permission is unaffected.
  SiteBuilder b(2);
  int w = b.Array("W", 2);
  int h = b.Array("H", 2);
  b.AddTo(w, {K(2, 0), U()}).AddTo(h, {K(2, 1), U()});
  SiteModel m = b.site();
  m.prefer_data_parallel = true;
  Decision plain = ChooseSchedule(m);
  ASSERT_TRUE(plain.schedule);
  EXPECT_EQ(plain.schedule->strategy, Strategy::k2D);
  m.data_parallel_staleness = 1;
  m.prefer_data_parallel = false;
  Decision permitted = ChooseSchedule(m);
  ASSERT_TRUE(permitted.schedule);
  EXPECT_EQ(permitted.schedule->strategy, Strategy::k2D);
  m.prefer_data_parallel = true;
  Decision preferred = ChooseSchedule(m);
  ASSERT_TRUE(preferred.schedule);
  EXPECT_EQ(preferred.schedule->strategy, Strategy::kDataParallel);
  EXPECT_EQ(preferred.schedule->staleness, 1);
  EXPECT_EQ(preferred.schedule->space_dim, 0);
  EXPECT_EQ(preferred.schedule->placements[w].placement, Placement::kLocal);
  EXPECT_EQ(preferred.schedule->placements[h].placement, Placement::kServers);
}

TEST(StrategyTest, StencilIntoOtherArrayIsIndependentWithHalo) {
  SiteBuilder b(1);
  int a = b.Array("A", 1);
  int out = b.Array("B", 1);
  b.Read(a, {K(1, 0) - C(1, 1)}).Read(a, {K(1, 0) + C(1, 1)}).Assign(out, {K(1, 0)});
  Decision d = ChooseSchedule(b.site());
  ASSERT_TRUE(d.schedule);
  EXPECT_EQ(d.schedule->strategy, Strategy::kIndependent);
  EXPECT_EQ(d.schedule->placements[a].placement, Placement::kLocal);
  EXPECT_EQ(d.schedule->placements[a].halo_lo, -1);
  EXPECT_EQ(d.schedule->placements[a].halo_hi, 1);
}

TEST(StrategyTest, InPlace1DRecurrenceIsAnError) {
  SiteBuilder b(1);
  int a = b.Array("A", 1);
  b.Read(a, {K(1, 0) - C(1, 1)}).Assign(a, {K(1, 0)});
  Decision d = ChooseSchedule(b.site());
  ASSERT_FALSE(d.schedule);
  ASSERT_TRUE(d.error);
  EXPECT_EQ(ToString(d.error->blocking.vector), "(-1)");
}

TEST(StrategyTest, RecurrenceAlongOneDimIs1DOnTheOther) {
  SiteBuilder b(2);
  int a = b.Array("A", 2);
  b.Read(a, {K(2, 0) - C(2, 1), K(2, 1)}).Assign(a, {K(2, 0), K(2, 1)});
  Decision d = ChooseSchedule(b.site());
  ASSERT_TRUE(d.schedule);
  EXPECT_EQ(d.schedule->strategy, Strategy::k1D);
  EXPECT_EQ(d.schedule->space_dim, 1);
}

TEST(StrategyTest, WavefrontIsUnimodularWithLegalSkew) {
  SiteBuilder b(2);
  int a = b.Array("A", 2);
  b.Read(a, {K(2, 0) - C(2, 1), K(2, 1)})
      .Read(a, {K(2, 0), K(2, 1) - C(2, 1)})
      .Assign(a, {K(2, 0), K(2, 1)});
  Decision d = ChooseSchedule(b.site());
  ASSERT_TRUE(d.schedule);
  ASSERT_EQ(d.schedule->strategy, Strategy::kUnimodular);
  const auto& t = d.schedule->skew;
  ASSERT_EQ(t.size(), 2u);
  const int64_t det = t[0][0] * t[1][1] - t[0][1] * t[1][0];
  EXPECT_TRUE(det == 1 || det == -1) << det;  // unimodular
  // Legal: every dependence strictly advances the wavefront coordinate.
  for (const Dependence& dep : d.dependences) {
    int64_t dot = t[0][0] * dep.vector[0].distance + t[0][1] * dep.vector[1].distance;
    EXPECT_NE(dot, 0) << ToString(dep.vector);
  }
  EXPECT_EQ(t[0], (std::vector<int64_t>{1, 1}));
}

// A sparse space runs in storage order, not key order: no wavefront (which runs in key order) is
// legal for the stencil; a recurrence along one dim is still kept inside the 1D blocks of the
// other, which run in storage order.
TEST(StrategyTest, StorageOrderSpaceHasNoOrientedDependences) {
  SiteBuilder b(2);
  int a = b.Array("A", 2);
  b.Read(a, {K(2, 0) - C(2, 1), K(2, 1)})
      .Read(a, {K(2, 0), K(2, 1) - C(2, 1)})
      .Assign(a, {K(2, 0), K(2, 1)});
  SiteModel site = b.site();
  site.serial_order_is_key_order = false;
  Decision d = ChooseSchedule(site);
  EXPECT_FALSE(d.schedule);
  site.serial_order_is_key_order = true;
  ASSERT_TRUE(ChooseSchedule(site).schedule);
  EXPECT_EQ(ChooseSchedule(site).schedule->strategy, Strategy::kUnimodular);
  SiteBuilder one(2);
  int x = one.Array("A", 2);
  one.Read(x, {K(2, 0) - C(2, 1), K(2, 1)}).Assign(x, {K(2, 0), K(2, 1)});
  SiteModel rows = one.site();
  rows.serial_order_is_key_order = false;
  Decision r = ChooseSchedule(rows);
  ASSERT_TRUE(r.schedule);
  EXPECT_EQ(r.schedule->strategy, Strategy::k1D);
  EXPECT_EQ(r.schedule->space_dim, 1);
}

TEST(StrategyTest, AntiDiagonalWavefrontNeedsSkew) {
  // Dependences (1, -1) and (0, 1): h = (1, 0) fails on (0, 1); h = (1, 1) fails on (1, -1);
  // h = (2, 1) carries both.
  SiteBuilder b(2);
  int a = b.Array("A", 2);
  b.Read(a, {K(2, 0) - C(2, 1), K(2, 1) + C(2, 1)})
      .Read(a, {K(2, 0), K(2, 1) - C(2, 1)})
      .Assign(a, {K(2, 0), K(2, 1)});
  Decision d = ChooseSchedule(b.site());
  ASSERT_TRUE(d.schedule);
  ASSERT_EQ(d.schedule->strategy, Strategy::kUnimodular);
  EXPECT_EQ(d.schedule->skew[0], (std::vector<int64_t>{2, 1}));
}

TEST(StrategyTest, ConstantDistanceAcrossRotationIsNot2D) {
  // (0, 1) and (1, 0) would be "one zero each" for Orion's rotation, but their direction matters;
  // the chooser must not pick 2D (rotation could run them backwards).
  SiteBuilder b(2);
  int a = b.Array("A", 2);
  b.Read(a, {K(2, 0) - C(2, 1), K(2, 1)}).Read(a, {K(2, 0), K(2, 1) - C(2, 1)}).Assign(a, {K(2, 0), K(2, 1)});
  Decision d = ChooseSchedule(b.site());
  ASSERT_TRUE(d.schedule);
  EXPECT_NE(d.schedule->strategy, Strategy::k2D);
}

TEST(StrategyTest, CoupledSubscriptGetsAWavefrontFromItsRay) {
  // A(key[0] + key[1]) += ...: conflicts exactly along t * (1, -1); each row key[0] = const is a
  // conflict-free wavefront.
  SiteBuilder b(2);
  int a = b.Array("A", 1);
  b.AddTo(a, {K(2, 0) + K(2, 1)});
  Decision d = ChooseSchedule(b.site());
  ASSERT_TRUE(d.schedule);
  ASSERT_EQ(d.schedule->strategy, Strategy::kUnimodular);
  EXPECT_EQ(d.schedule->skew[0], (std::vector<int64_t>{1, 0}));
}

TEST(StrategyTest, ShiftedCoupledSubscriptStaysAnError) {
  // A(key[0] + key[1]) written, A(key[0] + key[1] - 1) read: d0 + d1 = 1, e.g. (0, 1) and
  // (1, -2) reversed; no row h carries them all.
  SiteBuilder b(2);
  int a = b.Array("A", 1);
  b.Assign(a, {K(2, 0) + K(2, 1)}).Read(a, {K(2, 0) + K(2, 1) - C(2, 1)});
  Decision d = ChooseSchedule(b.site());
  EXPECT_FALSE(d.schedule);
}

TEST(StrategyTest, RelaxedAccessesAreExcluded) {
  SiteBuilder b(1);
  int t = b.Array("T", 1, /*relaxed=*/true);
  b.AddTo(t, {C(1, 0)});
  Decision d = ChooseSchedule(b.site());
  ASSERT_TRUE(d.schedule);
  EXPECT_EQ(d.schedule->strategy, Strategy::kIndependent);
  EXPECT_TRUE(d.dependences.empty());
}

}  // namespace
}  // namespace tessera::compiler
