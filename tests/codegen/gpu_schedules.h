// Hand-written GPU schedules shared by the CUDA codegen and GPU verifier tests.
#ifndef TESSERA_TESTS_CODEGEN_GPU_SCHEDULES_H_
#define TESSERA_TESTS_CODEGEN_GPU_SCHEDULES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "frontend/compute.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/loop_annotations.h"
#include "schedule/schedule.h"

namespace tessera {
namespace gpu_testing {

inline LoopRV Loop(const absl::StatusOr<LoopRV>& l) {
  EXPECT_TRUE(l.ok()) << l.status();
  return *l;
}

inline std::vector<LoopRV> Loops(const absl::StatusOr<std::vector<LoopRV>>& l) {
  EXPECT_TRUE(l.ok()) << l.status();
  return l.ok() ? *l : std::vector<LoopRV>();
}

inline void Ok(const absl::Status& s) { EXPECT_TRUE(s.ok()) << s; }

inline int ReadIndex(Schedule& sch, BlockRV block, const std::string& buffer) {
  absl::StatusOr<Block> b = sch.Get(block);
  EXPECT_TRUE(b.ok());
  for (size_t i = 0; i < (*b)->reads.size(); ++i) {
    if ((*b)->reads[i].buffer.name() == buffer) return static_cast<int>(i);
  }
  ADD_FAILURE() << "block does not read " << buffer;
  return 0;
}

struct GmmTiling {
  int64_t n = 256;          // M = N = K
  int64_t threads = 16;     // threads per block along i and along j
  int64_t per_thread = 4;   // elements per thread along i and along j
  int64_t k_tile = 16;
  std::string dtype = "float32";
  int64_t copy_lanes = 4;  // vector width of the cooperative copies into shared memory
  // > 0: ko annotated kSoftwarePipelineStages with this many stages.
  int64_t pipeline_stages = 0;
};

// GMM n^3: i, j -> [blockIdx, threadIdx, inner]; k -> [ko, ki]; A and B cached in shared memory
// at ko and copied cooperatively (vectorized), C accumulated in local memory written back at
// threadIdx.x.
inline Schedule ScheduleGmm(const GmmTiling& t) {
  PrimFunc func =
      *MakeWorkload("GMM", {{"B", 1}, {"M", t.n}, {"N", t.n}, {"K", t.n}}, t.dtype);
  Schedule sch = Schedule::Create(func, /*seed=*/0);
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> l = Loops(sch.GetLoops(c));  // b, i, j, k
  int64_t tile = t.threads * t.per_thread;
  auto split = [&](LoopRV loop, std::vector<int64_t> f) {
    std::vector<InstValue> factors;
    for (int64_t x : f) factors.push_back(x < 0 ? InstValue() : InstValue::Int(x));
    return Loops(sch.Split(loop, factors));
  };
  std::vector<LoopRV> i = split(l[1], {t.n / tile, t.threads, t.per_thread});
  std::vector<LoopRV> j = split(l[2], {t.n / tile, t.threads, t.per_thread});
  std::vector<LoopRV> k = split(l[3], {t.n / t.k_tile, t.k_tile});
  Ok(sch.Reorder({l[0], i[0], j[0], i[1], j[1], k[0], k[1], i[2], j[2]}));
  Ok(sch.Bind(l[0], "blockIdx.z"));
  Ok(sch.Bind(i[0], "blockIdx.y"));
  Ok(sch.Bind(j[0], "blockIdx.x"));
  Ok(sch.Bind(i[1], "threadIdx.y"));
  Ok(sch.Bind(j[1], "threadIdx.x"));
  // Cooperative fetch: all threads of the block copy the tile, copy_lanes elements each.
  auto fetch = [&](const std::string& buffer) {
    BlockRV cache = *sch.CacheRead(c, ReadIndex(sch, c, buffer), "shared");
    Ok(sch.ComputeAt(cache, k[0]));
    std::vector<LoopRV> copy = Loops(sch.GetLoops(cache));
    LoopRV fused = Loop(sch.Fuse({copy[copy.size() - 2], copy.back()}));
    std::vector<LoopRV> parts = split(fused, {-1, t.threads, t.threads, t.copy_lanes});
    Ok(sch.Bind(parts[1], "threadIdx.y"));
    Ok(sch.Bind(parts[2], "threadIdx.x"));
    Ok(sch.Vectorize(parts[3]));
  };
  fetch("A");
  fetch("B");
  BlockRV c_local = *sch.CacheWrite(c, 0, "local");
  Ok(sch.ReverseComputeAt(c_local, j[1]));
  Ok(sch.Annotate(i[0], "pragma_auto_unroll_max_step", InstValue::Int(16)));
  if (t.pipeline_stages > 0) {
    Ok(sch.Annotate(k[0], kSoftwarePipelineStages, InstValue::Int(t.pipeline_stages)));
  }
  return sch;
}

// ELEMENTWISE m x n: i, j fused and split into [blockIdx.x, threadIdx.x (threads), lanes], the
// lanes loop vectorized (lanes 1: no vector loop).
inline Schedule ScheduleElementwise(int64_t m, int64_t n, int64_t threads, int64_t lanes) {
  Schedule sch = Schedule::Create(*MakeWorkload("ELEMENTWISE", {{"M", m}, {"N", n}}), 0);
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> l = Loops(sch.GetLoops(c));
  LoopRV fused = Loop(sch.Fuse(l));
  std::vector<InstValue> factors = {InstValue(), InstValue::Int(threads)};
  if (lanes > 1) factors.push_back(InstValue::Int(lanes));
  std::vector<LoopRV> s = Loops(sch.Split(fused, factors));
  Ok(sch.Bind(s[0], "blockIdx.x"));
  Ok(sch.Bind(s[1], "threadIdx.x"));
  if (lanes > 1) Ok(sch.Vectorize(s[2]));
  return sch;
}

// REDUCE_SUM m x n: rows on blockIdx.x (rows_per_block of them on threadIdx.y), the reduction
// split into [ko, ki] with ki (threads) on threadIdx.x: the CrossThreadReduction pattern.
inline Schedule ScheduleReduceSum(int64_t m, int64_t n, int64_t threads,
                                  int64_t rows_per_block = 1) {
  Schedule sch = Schedule::Create(*MakeWorkload("REDUCE_SUM", {{"M", m}, {"N", n}}), 0);
  BlockRV red = *sch.GetBlock("A_red");
  std::vector<LoopRV> l = Loops(sch.GetLoops(red));  // i, k
  std::vector<LoopRV> k =
      Loops(sch.Split(l[1], {InstValue(), InstValue::Int(threads)}));
  if (rows_per_block > 1) {
    std::vector<LoopRV> i =
        Loops(sch.Split(l[0], {InstValue(), InstValue::Int(rows_per_block)}));
    Ok(sch.Bind(i[0], "blockIdx.x"));
    Ok(sch.Bind(i[1], "threadIdx.y"));
  } else {
    Ok(sch.Bind(l[0], "blockIdx.x"));
  }
  Ok(sch.Bind(k[1], "threadIdx.x"));
  return sch;
}

// ELEMENTWISE n x n with virtual threads: i -> [blockIdx.y, vthread.y (vthreads),
// threadIdx.y (8)], j -> [blockIdx.x, threadIdx.x (32)].
inline Schedule ScheduleVthread(int64_t n, int64_t vthreads) {
  Schedule sch = Schedule::Create(*MakeWorkload("ELEMENTWISE", {{"M", n}, {"N", n}}), 0);
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> l = Loops(sch.GetLoops(c));
  std::vector<LoopRV> i = Loops(sch.Split(
      l[0], {InstValue(), InstValue::Int(vthreads), InstValue::Int(8)}));
  std::vector<LoopRV> j = Loops(sch.Split(l[1], {InstValue(), InstValue::Int(32)}));
  Ok(sch.Reorder({i[0], j[0], i[1], i[2], j[1]}));
  Ok(sch.Bind(i[0], "blockIdx.y"));
  Ok(sch.Bind(j[0], "blockIdx.x"));
  Ok(sch.Bind(i[1], "vthread.y"));
  Ok(sch.Bind(i[2], "threadIdx.y"));
  Ok(sch.Bind(j[1], "threadIdx.x"));
  return sch;
}

}  // namespace gpu_testing
}  // namespace tessera

#endif  // TESSERA_TESTS_CODEGEN_GPU_SCHEDULES_H_
