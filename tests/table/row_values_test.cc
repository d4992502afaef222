#include "tessera/table/row_values.h"

#include <capnp/message.h>
#include <gtest/gtest.h>

#include "tessera/table/wire.h"

namespace tessera {
namespace {

TableSpec Spec(ValueType type, uint32_t width, bool sparse) {
  TableSpec spec;
  spec.id = 3;
  spec.name = "t";
  spec.value_type = type;
  spec.num_rows = 10;
  spec.width = width;
  spec.sparse = sparse;
  return spec;
}

Result<RowValues> RoundTrip(const RowValues& row, const TableSpec& spec) {
  capnp::MallocMessageBuilder builder;
  auto values = builder.initRoot<proto::Values>();
  row.ToProto(values);
  return RowValues::FromProto(values.asReader(), spec);
}

TEST(RowValuesTest, DenseAddAndRoundTrip) {
  auto spec = Spec(ValueType::kFloat32, 4, false);
  RowValues a = RowValues::Zero(spec);
  EXPECT_TRUE(a.IsZero());
  a.AddCell<float>(1, 2.5f);
  RowValues b = RowValues::Zero(spec);
  b.AddCell<float>(1, 1.0f);
  b.AddCell<float>(3, -1.0f);
  a.Add(b);
  EXPECT_EQ(std::vector<float>(a.dense<float>().begin(), a.dense<float>().end()),
            (std::vector<float>{0, 3.5f, 0, -1.0f}));
  auto back = RoundTrip(a, spec);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, a);
  EXPECT_EQ(a.payload_bytes(), 16u);
}

TEST(RowValuesTest, SparseMergeDropsZerosAndKeepsColumnsSorted) {
  auto spec = Spec(ValueType::kInt64, 100, true);
  RowValues a = RowValues::Zero(spec);
  a.AddCell<int64_t>(50, 2);
  a.AddCell<int64_t>(7, 1);
  RowValues d = RowValues::Zero(spec);
  d.AddCell<int64_t>(7, -1);
  d.AddCell<int64_t>(99, 4);
  a.Add(d);
  EXPECT_EQ(std::vector<uint32_t>(a.columns().begin(), a.columns().end()),
            (std::vector<uint32_t>{50, 99}));
  EXPECT_EQ(a.CellAsDouble(99), 4.0);
  EXPECT_EQ(a.CellAsDouble(7), 0.0);
  auto back = RoundTrip(a, spec);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, a);
}

// ZeroToProto writes what ToProto(Zero(spec)) writes; AssignProto overwrites a row in place,
// whatever it held before (another layout included), as FromProto would build it.
TEST(RowValuesTest, ZeroToProtoAndAssignProtoMatchTheirSlowForms) {
  for (const TableSpec& spec :
       {Spec(ValueType::kFloat32, 5, false), Spec(ValueType::kInt32, 3, false),
        Spec(ValueType::kInt64, 9, true)}) {
    capnp::MallocMessageBuilder builder;
    auto zero = builder.initRoot<proto::Values>();
    RowValues::ZeroToProto(spec, zero);
    auto back = RowValues::FromProto(zero.asReader(), spec);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, RowValues::Zero(spec));

    RowValues source = RowValues::Zero(spec);
    VisitValueType(spec.value_type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      source.AddCell<T>(1, T{3});
      source.AddCell<T>(2, T{-2});
    });
    capnp::MallocMessageBuilder builder2;
    auto wire = builder2.initRoot<proto::Values>();
    source.ToProto(wire);
    RowValues target = RowValues::Zero(Spec(ValueType::kFloat64, 2, false));  // other layout
    target.AssignProto(wire.asReader(), spec);
    EXPECT_EQ(target, source);
    target.AssignProto(wire.asReader(), spec);  // same layout: storage reused
    EXPECT_EQ(target, source);
  }
}

// A dense row's AssignProto writes into the storage the row has (a refreshed cache entry keeps
// its storage); a sparse row's replaces its cells.
TEST(RowValuesTest, AssignProtoWritesIntoTheRowsStorage) {
  const TableSpec spec = Spec(ValueType::kFloat32, 6, false);
  RowValues source = RowValues::Zero(spec);
  source.AddCell<float>(4, 2.5f);
  capnp::MallocMessageBuilder builder;
  auto wire = builder.initRoot<proto::Values>();
  source.ToProto(wire);

  RowValues target = RowValues::Zero(spec);
  target.AddCell<float>(1, 7.0f);
  const float* storage = target.dense<float>().data();
  target.AssignProto(wire.asReader(), spec);
  EXPECT_EQ(target, source);
  EXPECT_EQ(target.dense<float>().data(), storage);

  const TableSpec sparse = Spec(ValueType::kInt64, 9, true);
  RowValues counts = RowValues::Zero(sparse);
  counts.AddCell<int64_t>(3, 5);
  capnp::MallocMessageBuilder empty_builder;
  auto empty = empty_builder.initRoot<proto::Values>();
  RowValues::Zero(sparse).ToProto(empty);
  counts.AssignProto(empty.asReader(), sparse);
  EXPECT_TRUE(counts.sparse());
  EXPECT_EQ(counts.size(), 0u);
  EXPECT_EQ(counts, RowValues::Zero(sparse));
}

TEST(RowValuesTest, FromProtoRejectsWrongTypeWidthAndColumns) {
  capnp::MallocMessageBuilder builder;
  auto values = builder.initRoot<proto::Values>();
  values.initF64(4);
  EXPECT_EQ(
      RowValues::FromProto(values.asReader(), Spec(ValueType::kFloat32, 4, false)).status().code(),
      StatusCode::kInvalidArgument);  // wrong type
  EXPECT_EQ(
      RowValues::FromProto(values.asReader(), Spec(ValueType::kFloat64, 5, false)).status().code(),
      StatusCode::kInvalidArgument);  // wrong width
  auto sparse = builder.initRoot<proto::Values>();
  auto cols = sparse.initColumns(2);
  cols.set(0, 3);
  cols.set(1, 200);
  sparse.initI64(2);
  EXPECT_EQ(
      RowValues::FromProto(sparse.asReader(), Spec(ValueType::kInt64, 100, true)).status().code(),
      StatusCode::kOutOfRange);
  cols.set(1, 3);  // not increasing
  EXPECT_EQ(
      RowValues::FromProto(sparse.asReader(), Spec(ValueType::kInt64, 100, true)).status().code(),
      StatusCode::kInvalidArgument);
}

TEST(RowValuesTest, DenseBlockPacksRowsAndReadsThemBack) {
  for (ValueType type :
       {ValueType::kFloat32, ValueType::kFloat64, ValueType::kInt32, ValueType::kInt64}) {
    auto spec = Spec(type, 3, false);
    std::vector<RowValues> rows;
    for (int r = 0; r < 4; ++r) {
      RowValues v = RowValues::Zero(spec);
      if (r != 2) {  // row 2 stays zero, as a row never written that the block does not copy
        for (uint32_t c = 0; c < 3; ++c) {
          VisitValueType(type, [&](auto tag) {
            using T = typename decltype(tag)::type;
            v.AddCell<T>(c, static_cast<T>(10 * r + c + 1));
          });
        }
      }
      rows.push_back(std::move(v));
    }
    capnp::MallocMessageBuilder builder;
    auto values = builder.initRoot<proto::Values>();
    std::byte* cells = RowValues::InitDenseBlock(values, spec, rows.size());
    const size_t row_bytes = 3 * ValueTypeSize(type);
    for (size_t r = 0; r < rows.size(); ++r) {
      if (r != 2) rows[r].CopyDenseTo(cells + r * row_bytes);
    }
    auto block = DenseBlock::Check(values.asReader(), rows.size(), spec);
    ASSERT_TRUE(block.ok()) << block.status().ToString();
    RowValues sum = RowValues::Zero(spec);
    for (size_t r = 0; r < rows.size(); ++r) {
      RowValues got;  // no storage yet: AssignDense allocates it
      got.AssignDense(block->row(r), spec);
      EXPECT_EQ(got, rows[r]) << "row " << r << " of type " << ValueTypeName(type);
      sum.AddDense(block->row(r));
      // Out of the block into a caller's buffer (an uncached read), then own updates added.
      std::vector<std::byte> raw(row_bytes);
      block->CopyRow(r, raw.data());
      got.AssignDense(raw.data(), spec);
      EXPECT_EQ(got, rows[r]) << "CopyRow, row " << r;
      rows[r].AddDenseTo(raw.data());
      RowValues doubled = rows[r];
      doubled.Add(rows[r]);
      got.AssignDense(raw.data(), spec);
      EXPECT_EQ(got, doubled) << "AddDenseTo, row " << r;
    }
    for (uint32_t c = 0; c < 3; ++c)
      EXPECT_EQ(sum.CellAsDouble(c), 10 * 0 + 10 * 1 + 10 * 3 + 3 * (c + 1));
  }
}

TEST(RowValuesTest, DenseBlockCheckRejectsWrongCountTypeColumnsAndSparseTables) {
  auto spec = Spec(ValueType::kFloat32, 4, false);
  capnp::MallocMessageBuilder builder;
  auto values = builder.initRoot<proto::Values>();
  RowValues::InitDenseBlock(values, spec, 3);
  EXPECT_TRUE(DenseBlock::Check(values.asReader(), 3, spec).ok());
  // 12 cells are not 2 or 4 rows of 4.
  EXPECT_EQ(DenseBlock::Check(values.asReader(), 2, spec).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(DenseBlock::Check(values.asReader(), 4, spec).status().code(),
            StatusCode::kInvalidArgument);
  // Another value type.
  EXPECT_EQ(
      DenseBlock::Check(values.asReader(), 3, Spec(ValueType::kInt32, 4, false)).status().code(),
      StatusCode::kInvalidArgument);
  // A sparse table's rows do not come packed.
  auto sparse = DenseBlock::Check(values.asReader(), 3, Spec(ValueType::kFloat32, 4, true));
  EXPECT_EQ(sparse.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(sparse.status().message().find("sparse"), std::string::npos);
  // Columns in a block.
  values.initColumns(12);
  EXPECT_EQ(DenseBlock::Check(values.asReader(), 3, spec).status().code(),
            StatusCode::kInvalidArgument);
  // An empty block is fine.
  capnp::MallocMessageBuilder empty_builder;
  auto empty = empty_builder.initRoot<proto::Values>();
  RowValues::InitDenseBlock(empty, spec, 0);
  EXPECT_TRUE(DenseBlock::Check(empty.asReader(), 0, spec).ok());
}

TEST(RowValuesTest, RelativeMagnitudeWeighsChangesByTheValueTheyChange) {
  auto spec = Spec(ValueType::kFloat64, 2, false);
  RowValues base = RowValues::Zero(spec);
  base.AddCell<double>(0, 10.0);
  RowValues delta = RowValues::Zero(spec);
  delta.AddCell<double>(0, -1.0);  // 1/10
  delta.AddCell<double>(1, 2.0);   // base 0: |delta|
  EXPECT_DOUBLE_EQ(delta.RelativeMagnitude(base), 2.1);
}

TEST(TableSpecTest, ValidateAndPlacement) {
  auto spec = Spec(ValueType::kFloat32, 4, false);
  EXPECT_TRUE(spec.Validate().ok());
  spec.width = 0;
  EXPECT_EQ(spec.Validate().code(), StatusCode::kInvalidArgument);
  // Placement is deterministic and spreads consecutive rows over all servers.
  std::vector<int> counts(4, 0);
  for (RowId r = 0; r < 4000; ++r) {
    uint32_t s = ServerOfRow(1, r, 4);
    ASSERT_LT(s, 4u);
    EXPECT_EQ(s, ServerOfRow(1, r, 4));
    ++counts[s];
  }
  for (int c : counts) EXPECT_NEAR(c, 1000, 150);
}

}  // namespace
}  // namespace tessera
