#include "frontend/compute.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/interpreter.h"

namespace tessera {
namespace {

int64_t ConstOf(const Expr& e) {
  const int64_t* v = AsConstInt(e);
  EXPECT_NE(v, nullptr);
  return v ? *v : -1;
}

// A region given as (buffer name, [(min var name or "", min const, extent)]).
std::string RegionString(const BufferRegion& r) {
  std::string s = r.buffer.name() + "[";
  for (size_t d = 0; d < r.region.size(); ++d) {
    const Range& range = r.region[d];
    if (d) s += ", ";
    if (const auto* v = range.min.as<VarNode>()) {
      s += v->name;
    } else if (const int64_t* c = AsConstInt(range.min)) {
      s += std::to_string(*c);
    } else {
      s += "expr";
    }
    s += ":" + std::to_string(ConstOf(range.extent));
  }
  return s + "]";
}

PrimFunc Matmul(int64_t m, int64_t n, int64_t k) {
  Tensor A = Placeholder({m, k}, DataType::Float32(), "A");
  Tensor B = Placeholder({k, n}, DataType::Float32(), "B");
  IterVar rk = ReduceAxis(k, "k");
  Tensor C = Compute({m, n},
                     [&](const std::vector<Var>& i) {
                       return Sum(A({i[0], rk.var}) * B({rk.var, i[1]}), {rk});
                     },
                     "C", {}, {"i", "j"});
  absl::StatusOr<PrimFunc> f = CreatePrimFunc("main", {A, B, C});
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

TEST(ComputeTest, MatmulBuildsOneReductionBlockUnderRoot) {
  PrimFunc f = Matmul(64, 32, 16);
  EXPECT_EQ(f.name(), "main");
  ASSERT_EQ(f.params().size(), 3u);
  EXPECT_EQ(f.params()[2].name(), "C");
  Block root = f.root_block();
  EXPECT_EQ(root->name, "root");
  EXPECT_TRUE(root->iter_vars.empty());
  EXPECT_TRUE(root->alloc_buffers.empty());

  // for i, j, k (serial, extents 64, 32, 16) around block C.
  const auto* li = root->body.as<ForNode>();
  ASSERT_NE(li, nullptr);
  const auto* lj = li->body.as<ForNode>();
  ASSERT_NE(lj, nullptr);
  const auto* lk = lj->body.as<ForNode>();
  ASSERT_NE(lk, nullptr);
  EXPECT_EQ(li->loop_var.name(), "i");
  EXPECT_EQ(lk->loop_var.name(), "k");
  EXPECT_EQ(ConstOf(li->extent), 64);
  EXPECT_EQ(ConstOf(lj->extent), 32);
  EXPECT_EQ(ConstOf(lk->extent), 16);
  EXPECT_EQ(li->for_kind, ForKind::kSerial);
  const auto* realize = lk->body.as<BlockRealizeNode>();
  ASSERT_NE(realize, nullptr);
  EXPECT_TRUE(IsConstInt(realize->predicate, 1));
  ASSERT_EQ(realize->iter_values.size(), 3u);
  EXPECT_TRUE(realize->iter_values[0].same_as(li->loop_var));
  EXPECT_TRUE(realize->iter_values[2].same_as(lk->loop_var));

  const BlockNode* block = realize->block.get();
  EXPECT_EQ(block->name, "C");
  ASSERT_EQ(block->iter_vars.size(), 3u);
  EXPECT_EQ(block->iter_vars[0].var.name(), "v_i");
  EXPECT_EQ(block->iter_vars[1].var.name(), "v_j");
  EXPECT_EQ(block->iter_vars[2].var.name(), "v_k");
  EXPECT_EQ(block->iter_vars[0].kind, IterKind::kSpatial);
  EXPECT_EQ(block->iter_vars[2].kind, IterKind::kReduction);
  EXPECT_EQ(ConstOf(block->iter_vars[2].dom.extent), 16);

  // init: C[v_i, v_j] = 0; body: C[v_i, v_j] = C[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j].
  const auto* init = block->init.as<BufferStoreNode>();
  ASSERT_NE(init, nullptr);
  const auto* zero = init->value.as<FloatImmNode>();
  ASSERT_NE(zero, nullptr);
  EXPECT_EQ(zero->value, 0.0);
  const auto* body = block->body.as<BufferStoreNode>();
  ASSERT_NE(body, nullptr);
  EXPECT_TRUE(body->indices[0].same_as(block->iter_vars[0].var));
  const auto* add = body->value.as<BinaryNode>();
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->op, BinaryOp::kAdd);
  ASSERT_NE(add->a.as<BufferLoadNode>(), nullptr);
  EXPECT_EQ(add->a.as<BufferLoadNode>()->buffer.name(), "C");
  const auto* mul = add->b.as<BinaryNode>();
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->op, BinaryOp::kMul);

  ASSERT_EQ(block->reads.size(), 3u);
  EXPECT_EQ(RegionString(block->reads[0]), "C[v_i:1, v_j:1]");
  EXPECT_EQ(RegionString(block->reads[1]), "A[v_i:1, v_k:1]");
  EXPECT_EQ(RegionString(block->reads[2]), "B[v_k:1, v_j:1]");
  ASSERT_EQ(block->writes.size(), 1u);
  EXPECT_EQ(RegionString(block->writes[0]), "C[v_i:1, v_j:1]");
}

TEST(ComputeTest, IntermediatesAreAllocatedInRoot) {
  Tensor A = Placeholder({8}, DataType::Float32(), "A");
  Tensor T = Compute(
      {8}, [&](const std::vector<Var>& i) { return A({i[0]}) * Expr(2); }, "T");
  Tensor R = Compute(
      {8}, [&](const std::vector<Var>& i) { return Max(T({i[0]}), Expr(0)); }, "R");
  absl::StatusOr<PrimFunc> f = CreatePrimFunc("main", {A, R});
  ASSERT_TRUE(f.ok()) << f.status();
  Block root = f->root_block();
  ASSERT_EQ(root->alloc_buffers.size(), 1u);
  EXPECT_TRUE(root->alloc_buffers[0].same_as(T.buffer()));
  const auto* seq = root->body.as<SeqStmtNode>();
  ASSERT_NE(seq, nullptr);
  ASSERT_EQ(seq->seq.size(), 2u);
  const auto* first = seq->seq[0].as<ForNode>()->body.as<BlockRealizeNode>();
  const auto* second = seq->seq[1].as<ForNode>()->body.as<BlockRealizeNode>();
  EXPECT_EQ(first->block->name, "T");
  EXPECT_EQ(second->block->name, "R");
  EXPECT_EQ(first->block->iter_vars[0].var.name(), "v_i0");  // default axis names
  EXPECT_FALSE(first->block->init.defined());
}

TEST(ComputeTest, RegionsMergeAccessesThatDifferByConstants) {
  Tensor A = Placeholder({10}, DataType::Float32(), "A");
  Tensor I = Placeholder({8}, DataType::Int64(), "I");
  Tensor B = Compute({8},
                     [&](const std::vector<Var>& i) {
                       return A({i[0] + Expr(2)}) + A({i[0]}) + A({i[0] + Expr(1)});
                     },
                     "B", {}, {"i"});
  Tensor G = Compute({8},
                     [&](const std::vector<Var>& i) {
                       return A({I({i[0]})}) + A({i[0]});  // data-dependent: the whole extent
                     },
                     "G", {}, {"i"});
  absl::StatusOr<PrimFunc> f = CreatePrimFunc("main", {A, I, B, G});
  ASSERT_TRUE(f.ok()) << f.status();
  const auto* seq = f->root_block()->body.as<SeqStmtNode>();
  const BlockNode* b = seq->seq[0].as<ForNode>()->body.as<BlockRealizeNode>()->block.get();
  ASSERT_EQ(b->reads.size(), 1u);
  EXPECT_EQ(RegionString(b->reads[0]), "A[v_i:3]");
  const BlockNode* g = seq->seq[1].as<ForNode>()->body.as<BlockRealizeNode>()->block.get();
  ASSERT_EQ(g->reads.size(), 2u);
  EXPECT_EQ(RegionString(g->reads[0]), "I[v_i:1]");
  EXPECT_EQ(RegionString(g->reads[1]), "A[0:10]");
}

TEST(ComputeTest, MaxAndMinReducersStartFromTypeLimits) {
  Tensor A = Placeholder({4, 6}, DataType::Float32(), "A");
  IterVar k = ReduceAxis(6, "k");
  Tensor mx = Compute(
      {4},
      [&](const std::vector<Var>& i) {
        return MaxReduce(A({i[0], k.var}), {k});
      },
      "mx");
  IterVar k2 = ReduceAxis(6, "k");
  Tensor mn = Compute(
      {4},
      [&](const std::vector<Var>& i) {
        return MinReduce(A({i[0], k2.var}), {k2});
      },
      "mn");
  absl::StatusOr<PrimFunc> f = CreatePrimFunc("main", {A, mx, mn});
  ASSERT_TRUE(f.ok()) << f.status();
  NDArray a = NDArray::Empty(DataType::Float32(), {4, 6});
  for (int64_t e = 0; e < 24; ++e) a.SetFlat(e, static_cast<double>((e * 7) % 11) - 5);
  NDArray out_max = NDArray::Empty(DataType::Float32(), {4});
  NDArray out_min = NDArray::Empty(DataType::Float32(), {4});
  ASSERT_TRUE(Interpret(*f, {&a, &out_max, &out_min}).ok());
  for (int64_t r = 0; r < 4; ++r) {
    double hi = -1e30, lo = 1e30;
    for (int64_t c = 0; c < 6; ++c) {
      hi = std::max(hi, a.GetFlat(r * 6 + c));
      lo = std::min(lo, a.GetFlat(r * 6 + c));
    }
    EXPECT_EQ(out_max.GetFlat(r), hi);
    EXPECT_EQ(out_min.GetFlat(r), lo);
  }
}

TEST(ComputeTest, AttrsBecomeBlockAnnotations) {
  Tensor A = Placeholder({4}, DataType::Float32(), "A");
  Tensor B = Compute({4}, [&](const std::vector<Var>& i) { return A({i[0]}); }, "B",
                     {{"layout_free", int64_t{1}}});
  absl::StatusOr<PrimFunc> f = CreatePrimFunc("main", {A, B});
  ASSERT_TRUE(f.ok());
  const BlockNode* b =
      f->root_block()->body.as<ForNode>()->body.as<BlockRealizeNode>()->block.get();
  ASSERT_EQ(b->annotations.count("layout_free"), 1u);
}

TEST(ComputeTest, RejectsMissingPlaceholder) {
  Tensor A = Placeholder({4}, DataType::Float32(), "A");
  Tensor B = Compute(
      {4}, [&](const std::vector<Var>& i) { return A({i[0]}) + Expr(1); }, "B");
  absl::StatusOr<PrimFunc> f = CreatePrimFunc("main", {B});
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(f.status().message()).find("placeholder A is read but missing"),
            std::string::npos)
      << f.status();
}

TEST(ComputeTest, RejectsRepeatedArgument) {
  Tensor A = Placeholder({4}, DataType::Float32(), "A");
  absl::StatusOr<PrimFunc> f = CreatePrimFunc("main", {A, A});
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
