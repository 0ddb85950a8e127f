// Randomized schedules: for every workload of the library and several fixed seeds, a long
// random sequence of primitives and sampling instructions with random (often invalid)
// arguments. A primitive that refuses is skipped — refusing must be clean: kInvalidArgument or
// kNotFound with a message, the schedule unchanged. Every resulting program must compute what
// the unscheduled one does (interpreter), replay from its trace JSON to a structurally equal
// function, and build with the C builder and run to the same outputs. All programs of one
// workload are built in one Build call.
//
// TESSERA_RANDOM_ITERATIONS=<n> runs n seeds per workload (default kDefaultSeeds) for soak runs;
// TESSERA_RANDOM_VERBOSE=1 prints every refusal.
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/random.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/analysis.h"
#include "ir/interpreter.h"
#include "ir/ndarray.h"
#include "ir/printer.h"
#include "schedule/index_map.h"
#include "schedule/schedule.h"
#include "schedule/state.h"
#include "tests/testing/schedule_testing.h"
#include "worker/builder.h"
#include "worker/host.h"
#include "worker/runner.h"

namespace tessera {
namespace {

constexpr int kDefaultSeeds = 3;
constexpr int kStepsPerProgram = 40;
// A step that multiplies the work of the program beyond this factor of the unscheduled one
// (overlapping imperfect splits, recomputation after compute_at) is undone, so that checking
// every program in the interpreter stays fast.
constexpr int64_t kWorkGrowthLimit = 16;

int SeedsPerWorkload() {
  const char* env = std::getenv("TESSERA_RANDOM_ITERATIONS");
  if (env != nullptr && std::atoi(env) > 0) return std::atoi(env);
  return kDefaultSeeds;
}

// Programs checked by all tests of this file, and how often each primitive applied / refused.
struct Tally {
  int programs = 0;
  std::map<std::string, std::pair<int, int>> primitives;  // name -> {applied, refused}
};
Tally& GlobalTally() {
  static Tally tally;
  return tally;
}

// Applies random primitives to one schedule.
class RandomScheduler {
 public:
  RandomScheduler(Schedule* sch, int64_t seed) : sch_(sch), rng_(seed) {}

  // Leaf-statement executions of one run of `func`: the interpreter's work.
  static int64_t Work(const PrimFunc& func) { return Instances(func.body()); }

  // One random primitive. Returns "" when it applied or was refused cleanly, else a
  // description of what went wrong.
  std::string Step() {
    struct Choice {
      const char* name;
      double weight;
      std::function<absl::Status()> apply;
    };
    const std::vector<Choice> choices = {
        {"split", 6, [this] { return DoSplit(); }},
        {"fuse", 3, [this] { return DoFuse(); }},
        {"reorder", 4, [this] { return DoReorder(); }},
        {"add_unit_loop", 0.5, [this] { return DoAddUnitLoop(); }},
        {"parallel", 1.5, [this] { return DoLoopKind(&Schedule::Parallel); }},
        {"vectorize", 1.5, [this] { return DoLoopKind(&Schedule::Vectorize); }},
        {"unroll", 1.5, [this] { return DoLoopKind(&Schedule::Unroll); }},
        {"annotate", 1, [this] { return DoAnnotate(); }},
        {"unannotate", 0.5, [this] { return DoUnannotate(); }},
        {"compute_at", 3, [this] { return DoComputeAt(/*reverse=*/false); }},
        {"reverse_compute_at", 3, [this] { return DoComputeAt(/*reverse=*/true); }},
        {"sample_compute_location", 1.5, [this] { return DoSampleComputeLocation(); }},
        {"compute_inline", 2, [this] { return DoInline(/*reverse=*/false); }},
        {"reverse_compute_inline", 2, [this] { return DoInline(/*reverse=*/true); }},
        {"cache_read", 2, [this] { return DoCache(/*write=*/false); }},
        {"cache_write", 2, [this] { return DoCache(/*write=*/true); }},
        {"reindex", 0.5, [this] { return DoReIndex(); }},
        {"set_scope", 0.5, [this] { return DoSetScope(); }},
        {"storage_align", 0.5, [this] { return DoStorageAlign(); }},
        {"decompose_reduction", 2, [this] { return DoDecomposeReduction(); }},
        {"rfactor", 1.5, [this] { return DoRFactor(); }},
        {"transform_layout", 0.5, [this] { return DoTransformLayout(); }},
        {"pad_einsum", 0.5, [this] { return DoPadEinsum(); }},
        {"blockize", 0.5, [this] { return DoBlockize(); }},
    };
    std::vector<double> weights;
    for (const Choice& c : choices) weights.push_back(c.weight);
    const Choice& choice = choices[rng_.SampleCategorical(weights)];

    attempted_ = false;
    absl::Status status = choice.apply();
    auto& [applied, refused] = GlobalTally().primitives[choice.name];
    if (status.ok()) {
      ++applied;
      return "";
    }
    if (!attempted_) return "";  // no valid arguments found; the primitive did not run
    ++refused;
    if (std::getenv("TESSERA_RANDOM_VERBOSE") != nullptr) {
      std::printf("[random schedules] refused: %s\n", status.ToString().c_str());
    }
    if (status.code() != absl::StatusCode::kInvalidArgument &&
        status.code() != absl::StatusCode::kNotFound) {
      return absl::StrCat(choice.name, " failed with an unexpected code: ", status.ToString());
    }
    if (status.message().empty()) return absl::StrCat(choice.name, " failed without a message");
    if (sch_->trace().size() != trace_at_attempt_) {
      return absl::StrCat(choice.name,
                          " recorded an instruction although it failed: ", status.message());
    }
    if (!sch_->func().same_as(func_at_attempt_)) {
      return absl::StrCat(choice.name,
                          " changed the function although it failed: ", status.message());
    }
    return "";
  }

 private:
  // Remembers the state right before the primitive under test runs. Lookups made to pick its
  // arguments (GetBlock, GetLoops, sampling) are recorded before this point.
  void Attempt() {
    attempted_ = true;
    trace_at_attempt_ = sch_->trace().size();
    func_at_attempt_ = sch_->func();
  }

  int64_t Uniform(int64_t lo, int64_t hi) { return rng_.UniformInt(lo, hi); }
  bool Coin() { return Uniform(0, 2) == 1; }

  // A random non-root block (recorded as GetBlock).
  absl::StatusOr<BlockRV> RandomBlock() {
    std::vector<std::string> names = AllBlockNames(sch_->func());
    names.erase(names.begin());  // the root block
    if (names.empty()) return absl::InvalidArgumentError("no blocks");
    return sch_->GetBlock(names[Uniform(0, names.size())]);
  }

  absl::StatusOr<std::vector<LoopRV>> LoopsOf(BlockRV block) {
    absl::StatusOr<std::vector<LoopRV>> loops = sch_->GetLoops(block);
    if (loops.ok() && loops->empty()) return absl::InvalidArgumentError("block has no loops");
    return loops;
  }

  absl::StatusOr<LoopRV> RandomLoop() {
    absl::StatusOr<BlockRV> block = RandomBlock();
    if (!block.ok()) return block.status();
    absl::StatusOr<std::vector<LoopRV>> loops = LoopsOf(*block);
    if (!loops.ok()) return loops.status();
    return (*loops)[Uniform(0, loops->size())];
  }

  // Executions of leaf statements in one run of `stmt`: bounds the code that unrolling it
  // produces (nested unrolls included), so that every program compiles quickly.
  static int64_t Instances(const Stmt& stmt) {
    if (const auto* loop = stmt.as<ForNode>()) {
      const int64_t* extent = AsConstInt(loop->extent);
      return (extent == nullptr ? 1 : *extent) * Instances(loop->body);
    }
    if (const auto* seq = stmt.as<SeqStmtNode>()) {
      int64_t total = 0;
      for (const Stmt& s : seq->seq) total += Instances(s);
      return total;
    }
    if (const auto* realize = stmt.as<BlockRealizeNode>()) return Instances(realize->block->body);
    return 1;
  }

  // How often the loop is entered: the product of the extents of the loops around it.
  int64_t EntriesOf(LoopRV loop) {
    absl::StatusOr<StmtPath> path = sch_->GetPath(loop);
    if (!path.ok()) return 0;
    int64_t entries = 1;
    for (const Stmt& s : LoopsOnPath(*path)) {
      const int64_t* extent = AsConstInt(s.as<ForNode>()->extent);
      if (extent != nullptr && !s.same_as(path->back())) entries *= *extent;
    }
    return entries;
  }

  int64_t InstancesOf(LoopRV loop) {
    absl::StatusOr<StmtPath> path = sch_->GetPath(loop);
    return path.ok() ? Instances(path->back()) : 0;
  }

  absl::Status DoSplit() {
    absl::StatusOr<LoopRV> loop = RandomLoop();
    if (!loop.ok()) return loop.status();
    std::vector<InstValue> factors;
    const int n = static_cast<int>(Uniform(2, 4));
    if (Coin()) {
      absl::StatusOr<std::vector<ExprRV>> tiles =
          sch_->SamplePerfectTile(*loop, n, Coin() ? -1 : Uniform(1, 17));
      if (!tiles.ok()) return tiles.status();
      for (ExprRV t : *tiles) factors.push_back(InstValue::Of(t));
    } else {
      // Random ints, possibly not dividing the extent (a predicate), one maybe inferred.
      const int none_at = Coin() ? static_cast<int>(Uniform(0, n)) : -1;
      for (int i = 0; i < n; ++i) {
        factors.push_back(i == none_at ? InstValue() : InstValue::Int(Uniform(1, 9)));
      }
    }
    Attempt();
    return sch_->Split(*loop, factors, /*preserve_unit_iters=*/Coin()).status();
  }

  absl::Status DoFuse() {
    absl::StatusOr<BlockRV> block = RandomBlock();
    if (!block.ok()) return block.status();
    absl::StatusOr<std::vector<LoopRV>> loops = LoopsOf(*block);
    if (!loops.ok()) return loops.status();
    const int64_t count = Uniform(2, 4);
    if (static_cast<int64_t>(loops->size()) < count) return absl::InvalidArgumentError("few loops");
    const int64_t start = Uniform(0, loops->size() - count + 1);
    std::vector<LoopRV> chain(loops->begin() + start, loops->begin() + start + count);
    Attempt();
    return sch_->Fuse(chain, /*preserve_unit_iters=*/Coin()).status();
  }

  absl::Status DoReorder() {
    absl::StatusOr<BlockRV> block = RandomBlock();
    if (!block.ok()) return block.status();
    absl::StatusOr<std::vector<LoopRV>> loops = LoopsOf(*block);
    if (!loops.ok()) return loops.status();
    std::vector<LoopRV> subset = *loops;
    rng_.Shuffle(&subset);
    subset.resize(Uniform(1, subset.size() + 1));
    Attempt();
    return sch_->Reorder(subset);
  }

  absl::Status DoAddUnitLoop() {
    if (Coin()) {
      absl::StatusOr<LoopRV> loop = RandomLoop();
      if (!loop.ok()) return loop.status();
      Attempt();
      return sch_->AddUnitLoop(*loop).status();
    }
    absl::StatusOr<BlockRV> block = RandomBlock();
    if (!block.ok()) return block.status();
    Attempt();
    return sch_->AddUnitLoop(*block).status();
  }

  absl::Status DoLoopKind(absl::Status (Schedule::*method)(LoopRV)) {
    absl::StatusOr<LoopRV> loop = RandomLoop();
    if (!loop.ok()) return loop.status();
    // Keep unrolled code small enough to compile quickly, and parallel regions few enough
    // (each entry starts a team of threads) to run quickly on a loaded machine.
    if (method == &Schedule::Unroll && InstancesOf(*loop) > 256) {
      return absl::InvalidArgumentError("loop too long to unroll here");
    }
    if (method == &Schedule::Parallel && EntriesOf(*loop) > 16) {
      return absl::InvalidArgumentError("loop entered too often to parallelize here");
    }
    Attempt();
    return (sch_->*method)(*loop);
  }

  absl::Status DoAnnotate() {
    if (Coin()) {
      absl::StatusOr<LoopRV> loop = RandomLoop();
      if (!loop.ok()) return loop.status();
      InstValue value;
      if (Coin()) {
        absl::StatusOr<ExprRV> step = sch_->SampleCategorical({0, 16, 64}, {0.4, 0.3, 0.3});
        if (!step.ok()) return step.status();
        value = InstValue::Of(*step);
      } else {
        value = InstValue::Int(Uniform(0, 65));
      }
      Attempt();
      return sch_->Annotate(*loop, "pragma_auto_unroll_max_step", value);
    }
    absl::StatusOr<BlockRV> block = RandomBlock();
    if (!block.ok()) return block.status();
    Attempt();
    return sch_->Annotate(*block, Coin() ? "meta_schedule.tiling_structure" : "random_note",
                          Coin() ? InstValue::String("SSRSRS") : InstValue::Float(0.5));
  }

  absl::Status DoUnannotate() {
    absl::StatusOr<BlockRV> block = RandomBlock();
    if (!block.ok()) return block.status();
    Attempt();
    return sch_->Unannotate(*block, Coin() ? "meta_schedule.tiling_structure" : "random_note");
  }

  absl::Status DoComputeAt(bool reverse) {
    absl::StatusOr<BlockRV> block = RandomBlock();
    if (!block.ok()) return block.status();
    // Mostly a loop of a consumer (compute_at) or producer (reverse_compute_at): valid targets.
    absl::StatusOr<LoopRV> loop;
    absl::StatusOr<std::vector<BlockRV>> others =
        reverse ? sch_->GetProducers(*block) : sch_->GetConsumers(*block);
    if (others.ok() && !others->empty() && Uniform(0, 4) != 0) {
      absl::StatusOr<std::vector<LoopRV>> loops = LoopsOf((*others)[Uniform(0, others->size())]);
      if (!loops.ok()) return loops.status();
      loop = (*loops)[Uniform(0, loops->size())];
    } else {
      loop = RandomLoop();
    }
    if (!loop.ok()) return loop.status();
    const bool preserve = Coin();
    const int index = Coin() ? -1 : static_cast<int>(Uniform(0, 3));
    Attempt();
    return reverse ? sch_->ReverseComputeAt(*block, *loop, preserve, index)
                   : sch_->ComputeAt(*block, *loop, preserve, index);
  }

  absl::Status DoSampleComputeLocation() {
    absl::StatusOr<BlockRV> block = RandomBlock();
    if (!block.ok()) return block.status();
    absl::StatusOr<LoopRV> loop = sch_->SampleComputeLocation(*block);
    if (!loop.ok()) return loop.status();
    Attempt();
    return sch_->ComputeAt(*block, *loop, /*preserve_unit_loops=*/true);
  }

  absl::Status DoInline(bool reverse) {
    absl::StatusOr<BlockRV> block = RandomBlock();
    if (!block.ok()) return block.status();
    Attempt();
    return reverse ? sch_->ReverseComputeInline(*block) : sch_->ComputeInline(*block);
  }

  std::string RandomScope() {
    static const char* const kScopes[] = {"global", "shared", "local", "global"};
    return kScopes[Uniform(0, 4)];
  }

  absl::Status DoCache(bool write) {
    absl::StatusOr<BlockRV> block = RandomBlock();
    if (!block.ok()) return block.status();
    absl::StatusOr<Block> node = sch_->Get(*block);
    if (!node.ok()) return node.status();
    const size_t count = write ? (*node)->writes.size() : (*node)->reads.size();
    // One past the end now and then: the primitive must refuse it.
    const int index = static_cast<int>(Uniform(0, count + 1));
    // Now and then an explicit consumer list of random blocks, valid or not.
    std::vector<BlockRV> consumers;
    for (int64_t n = Coin() ? Uniform(1, 3) : 0; n > 0; --n) {
      absl::StatusOr<BlockRV> other = RandomBlock();
      if (!other.ok()) return other.status();
      consumers.push_back(*other);
    }
    Attempt();
    return write ? sch_->CacheWrite(*block, index, RandomScope(), consumers).status()
                 : sch_->CacheRead(*block, index, RandomScope(), consumers).status();
  }

  absl::Status DoReIndex() {
    absl::StatusOr<BlockRV> block = RandomBlock();
    if (!block.ok()) return block.status();
    Attempt();
    return sch_->ReIndex(*block, static_cast<int>(Uniform(0, 3)), static_cast<int>(Uniform(0, 2)))
        .status();
  }

  absl::Status DoSetScope() {
    absl::StatusOr<BlockRV> block = RandomBlock();
    if (!block.ok()) return block.status();
    Attempt();
    return sch_->SetScope(*block, static_cast<int>(Uniform(0, 2)), RandomScope());
  }

  absl::Status DoStorageAlign() {
    absl::StatusOr<BlockRV> block = RandomBlock();
    if (!block.ok()) return block.status();
    Attempt();
    return sch_->StorageAlign(*block, 0, static_cast<int>(Uniform(-1, 3)),
                              static_cast<int>(Uniform(1, 33)), static_cast<int>(Uniform(0, 8)));
  }

  absl::Status DoDecomposeReduction() {
    absl::StatusOr<BlockRV> block = RandomBlock();
    if (!block.ok()) return block.status();
    absl::StatusOr<std::vector<LoopRV>> loops = LoopsOf(*block);
    if (!loops.ok()) return loops.status();
    Attempt();
    return sch_->DecomposeReduction(*block, (*loops)[Uniform(0, loops->size())]).status();
  }

  absl::Status DoRFactor() {
    absl::StatusOr<LoopRV> loop = RandomLoop();
    if (!loop.ok()) return loop.status();
    Attempt();
    return sch_->RFactor(*loop, static_cast<int>(Uniform(0, 3))).status();
  }

  // A random permutation of a buffer's dimensions, or a split of its last dimension by 2.
  absl::Status DoTransformLayout() {
    absl::StatusOr<BlockRV> block = RandomBlock();
    if (!block.ok()) return block.status();
    absl::StatusOr<Block> node = sch_->Get(*block);
    if (!node.ok()) return node.status();
    const int type = static_cast<int>(Uniform(0, 2));
    const std::vector<BufferRegion>& regions = type == 0 ? (*node)->reads : (*node)->writes;
    if (regions.empty()) return absl::InvalidArgumentError("no buffers");
    const int index = static_cast<int>(Uniform(0, regions.size()));
    // Parameters keep their layout: the outputs are compared with the unscheduled program's.
    for (const Buffer& param : sch_->func().params()) {
      if (param.same_as(regions[index].buffer)) return absl::InvalidArgumentError("a parameter");
    }
    const int ndim = regions[index].buffer.ndim();
    std::vector<std::string> vars, outs;
    for (int d = 0; d < ndim; ++d) vars.push_back(absl::StrCat("d", d));
    if (Coin()) {
      outs = vars;
      rng_.Shuffle(&outs);
    } else {
      outs = vars;
      outs.back() = absl::StrCat("floordiv(", vars.back(), ", 2)");
      outs.push_back(absl::StrCat("floormod(", vars.back(), ", 2)"));
    }
    std::string text = "lambda ";
    for (int d = 0; d < ndim; ++d) absl::StrAppend(&text, d ? ", " : "", vars[d]);
    absl::StrAppend(&text, ": (");
    for (size_t d = 0; d < outs.size(); ++d) absl::StrAppend(&text, d ? ", " : "", outs[d]);
    absl::StrAppend(&text, outs.size() == 1 ? ",)" : ")");
    absl::StatusOr<IndexMap> map = IndexMap::Parse(text);
    if (!map.ok()) return absl::InternalError(absl::StrCat(text, ": ", map.status().message()));
    Attempt();
    return sch_->TransformLayout(*block, index, type, *map);
  }

  absl::Status DoPadEinsum() {
    absl::StatusOr<BlockRV> block = RandomBlock();
    if (!block.ok()) return block.status();
    absl::StatusOr<Block> node = sch_->Get(*block);
    if (!node.ok()) return node.status();
    std::vector<int64_t> padding;
    for (size_t i = 0; i < (*node)->iter_vars.size(); ++i) padding.push_back(Uniform(1, 6));
    Attempt();
    return sch_->PadEinsum(*block, padding);
  }

  absl::Status DoBlockize() {
    absl::StatusOr<LoopRV> loop = RandomLoop();
    if (!loop.ok()) return loop.status();
    Attempt();
    return sch_->Blockize(*loop, /*preserve_unit_iters=*/Coin()).status();
  }

  Schedule* sch_;
  Random rng_;
  bool attempted_ = false;
  size_t trace_at_attempt_ = 0;
  PrimFunc func_at_attempt_;
};

std::vector<NDArray> SeededArgs(const PrimFunc& func, int64_t seed) {
  Random rng(seed);
  std::vector<NDArray> args;
  for (const ArgInfo& info : ArgInfosOf(func)) {
    args.push_back(NDArray::Empty(info.dtype, info.shape));
    args.back().FillRandom(&rng);
  }
  return args;
}

// A small number from the workload's name (std::hash differs between standard libraries).
int64_t NameSalt(const std::string& name) {
  int64_t salt = 0;
  for (char c : name) salt = (salt * 31 + static_cast<unsigned char>(c)) % 997;
  return salt;
}

class RandomScheduleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RandomScheduleTest, RandomProgramsStayCorrectReplayAndBuild) {
  const PrimFunc func = testing::SmallWorkload(GetParam());
  const int seeds = SeedsPerWorkload();
  std::vector<PrimFunc> programs;
  std::vector<std::string> traces;
  for (int s = 0; s < seeds; ++s) {
    const int64_t seed = 1000 * (s + 1) + NameSalt(GetParam());
    Schedule sch = Schedule::Create(func, seed);
    RandomScheduler scheduler(&sch, seed);
    const int64_t work_budget = kWorkGrowthLimit * RandomScheduler::Work(func);
    for (int step = 0; step < kStepsPerProgram; ++step) {
      Schedule before = sch;
      std::string problem = scheduler.Step();
      ASSERT_TRUE(problem.empty()) << GetParam() << " seed " << seed << " step " << step << ": "
                                   << problem << "\ntrace: " << sch.trace().ToJson();
      if (RandomScheduler::Work(sch.func()) > work_budget) sch = before;
    }
    absl::Status same = testing::CheckSameOutputs(func, sch.func(), seed);
    ASSERT_TRUE(same.ok()) << GetParam() << " seed " << seed << ": " << same
                           << "\ntrace: " << sch.trace().ToJson() << "\n"
                           << PrintFunc(sch.func());
    absl::Status replay = testing::CheckReplay(sch, func);
    ASSERT_TRUE(replay.ok()) << GetParam() << " seed " << seed << ": " << replay;
    programs.push_back(sch.func());
    traces.push_back(sch.trace().ToJson());
  }

  // Build every program of this workload in one call, then run each against the interpreter.
  absl::StatusOr<Target> target = ResolveTarget("cpu");
  ASSERT_TRUE(target.ok()) << target.status();
  std::vector<BuildInput> inputs;
  for (const PrimFunc& f : programs) inputs.push_back(BuildInput{f, *target});
  std::unique_ptr<Builder> builder = NewCBuilder();
  std::vector<BuildResult> built = builder->Build(inputs);
  ASSERT_EQ(built.size(), programs.size());

  std::vector<NDArray> expected = SeededArgs(func, 7);
  std::vector<NDArray*> pointers;
  for (NDArray& e : expected) pointers.push_back(&e);
  ASSERT_TRUE(Interpret(func, pointers).ok());
  RunnerConfig once;
  once.warmup = 0;
  once.repeat = 1;
  once.timeout_sec = 60;
  for (size_t p = 0; p < programs.size(); ++p) {
    ASSERT_TRUE(built[p].ok()) << GetParam() << " program " << p << ": " << built[p].error_msg
                               << "\ntrace: " << traces[p];
    std::vector<NDArray> actual = SeededArgs(func, 7);
    absl::StatusOr<RunResult> ran =
        RunCpuKernel(built[p].artifact_path, built[p].symbol, &actual, once);
    ASSERT_TRUE(ran.ok()) << ran.status();
    ASSERT_TRUE(ran->ok()) << GetParam() << " program " << p << ": " << ran->error_msg
                           << "\ntrace: " << traces[p];
    for (int index : WrittenParamIndices(func)) {
      absl::StatusOr<Comparison> cmp = Compare(actual[index], expected[index]);
      ASSERT_TRUE(cmp.ok()) << cmp.status();
      EXPECT_TRUE(cmp->ok()) << GetParam() << " program " << p << ": output "
                             << func.params()[index].name() << " has " << cmp->mismatches
                             << " mismatches (max abs error " << cmp->max_abs_error
                             << ")\ntrace: " << traces[p] << "\n"
                             << PrintFunc(programs[p]);
    }
  }
  GlobalTally().programs += static_cast<int>(programs.size());
}

std::vector<std::string> WorkloadNames() {
  std::vector<std::string> names;
  for (const WorkloadInfo& info : ListWorkloads()) names.push_back(info.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(AllWorkloads, RandomScheduleTest, ::testing::ValuesIn(WorkloadNames()),
                         [](const auto& info) { return info.param; });

// Prints how many random programs were checked and how often each primitive applied.
class TallyPrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    const Tally& tally = GlobalTally();
    if (tally.programs == 0) return;
    std::printf("[random schedules] %d programs checked (interpreter, replay, C build + run)\n",
                tally.programs);
    for (const auto& [name, counts] : tally.primitives) {
      std::printf("[random schedules]   %-24s applied %5d  refused %5d\n", name.c_str(),
                  counts.first, counts.second);
    }
  }
};

const ::testing::Environment* const kTallyPrinter =
    ::testing::AddGlobalTestEnvironment(new TallyPrinter);

}  // namespace
}  // namespace tessera
