#include "tests/testing/schedule_testing.h"

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/random.h"
#include "frontend/workloads.h"
#include "ir/analysis.h"
#include "ir/functor.h"
#include "ir/interpreter.h"
#include "ir/ndarray.h"
#include "ir/prepack.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "ir/target.h"
#include "ir/verify.h"
#include "schedule/index_map.h"
#include "schedule/state.h"
#include "schedule/tensor_intrin.h"
#include "schedule/trace.h"
#include "worker/builder.h"
#include "worker/runner.h"

namespace tessera {
namespace testing {

absl::Status CheckSameOutputs(const PrimFunc& reference, const PrimFunc& candidate, int64_t seed) {
  Random rng(seed);
  std::vector<NDArray> expected, actual;
  for (const Buffer& param : reference.params()) {
    std::vector<int64_t> shape;
    for (const Expr& e : param.shape()) shape.push_back(*AsConstInt(e));
    expected.push_back(NDArray::Empty(param.dtype(), shape));
    expected.back().FillRandom(&rng);
    actual.push_back(expected.back().Clone());
  }
  std::vector<NDArray*> expected_ptrs, actual_ptrs;
  for (NDArray& a : expected) expected_ptrs.push_back(&a);
  for (NDArray& a : actual) actual_ptrs.push_back(&a);
  absl::Status s = Interpret(reference, expected_ptrs);
  if (!s.ok()) return absl::InternalError(absl::StrCat("reference failed: ", s.message()));
  s = Interpret(candidate, actual_ptrs);
  if (!s.ok()) return absl::InternalError(absl::StrCat("scheduled program failed: ", s.message()));
  for (int index : WrittenParamIndices(reference)) {
    absl::StatusOr<Comparison> cmp = Compare(actual[index], expected[index]);
    if (!cmp.ok()) return cmp.status();
    if (!cmp->ok()) {
      return absl::InternalError(absl::StrCat(
          "output ", reference.params()[index].name(), " differs: ", cmp->mismatches,
          " mismatches, first at flat index ", cmp->first_mismatch, " (",
          actual[index].GetFlat(cmp->first_mismatch), " vs ",
          expected[index].GetFlat(cmp->first_mismatch), "), max abs error ", cmp->max_abs_error));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckReplay(const Schedule& sch, const PrimFunc& original) {
  std::string json = sch.trace().ToJson();
  absl::StatusOr<Trace> trace = Trace::FromJson(json);
  if (!trace.ok()) return trace.status();
  Schedule replay = Schedule::Create(original, /*seed=*/12345);
  absl::Status s = trace->ApplyTo(&replay, /*remove_postproc=*/false);
  if (!s.ok())
    return absl::InternalError(absl::StrCat("replay failed: ", s.message(), "\ntrace: ", json));
  std::string diff = StructuralDiff(replay.func(), sch.func());
  if (!diff.empty()) {
    return absl::InternalError(
        absl::StrCat("replayed function differs: ", diff, "\ntrace: ", json));
  }
  if (replay.trace().ToJson() != json) {
    return absl::InternalError(
        absl::StrCat("replayed trace differs:\n", replay.trace().ToJson(), "\nvs\n", json));
  }
  return absl::OkStatus();
}

absl::Status CheckScheduleCorrect(const Schedule& sch, const PrimFunc& original, int64_t seed) {
  absl::Status s = VerifyWellFormed(sch.func());
  if (s.ok()) s = CheckSameOutputs(original, sch.func(), seed);
  if (s.ok()) s = CheckReplay(sch, original);
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(s.message(), "\nscheduled:\n", PrintFunc(sch.func())));
}

namespace {

// The name of the twin of intrinsic `name` whose impl is its desc, registered on first use.
absl::StatusOr<std::string> ReferenceTwin(const std::string& name) {
  std::string twin = name + ".reference";
  if (GetTensorIntrin(twin).ok()) return twin;
  absl::StatusOr<TensorIntrin> intrin = GetTensorIntrin(name);
  if (!intrin.ok()) return intrin.status();
  absl::Status s = RegisterTensorIntrin(TensorIntrin{twin, intrin->desc, intrin->desc});
  if (!s.ok() && s.code() != absl::StatusCode::kAlreadyExists) return s;
  return twin;
}

}  // namespace

absl::Status CheckTensorizedScheduleCorrect(const Schedule& sch, const PrimFunc& original,
                                            int64_t seed) {
  absl::Status s = VerifyWellFormed(sch.func());
  if (s.ok()) s = CheckReplay(sch, original);
  Trace reference;
  for (size_t i = 0; s.ok() && i < sch.trace().size(); ++i) {
    Instruction inst = sch.trace().insts()[i];
    if (std::string(inst.kind->name) == "Tensorize") {
      absl::StatusOr<std::string> twin = ReferenceTwin(inst.attrs[0].as_string());
      if (!twin.ok()) s = twin.status();
      if (twin.ok()) inst.attrs[0] = InstValue::String(*twin);
    }
    reference.Append(std::move(inst), sch.trace().decision(i));
  }
  Schedule replay = Schedule::Create(original, /*seed=*/12345);
  if (s.ok()) s = reference.ApplyTo(&replay, /*remove_postproc=*/false);
  if (s.ok()) s = CheckSameOutputs(original, replay.func(), seed);
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(s.message(), "\nscheduled:\n", PrintFunc(sch.func())));
}

int CountSelects(const Stmt& s) {
  int count = 0;
  PostOrderVisitExprs(s, [&](const Expr& e) { count += e.as<SelectNode>() != nullptr; });
  return count;
}

absl::Status CheckCBackendMatches(const PrimFunc& original, const PrimFunc& scheduled,
                                  int64_t seed) {
  std::unique_ptr<Builder> builder = NewCBuilder();
  std::vector<BuildResult> built = builder->Build({BuildInput{scheduled, *Target::Parse("cpu")}});
  if (!built[0].ok())
    return absl::InternalError(absl::StrCat("build failed: ", built[0].error_msg));
  Random rng(seed);
  std::vector<NDArray> args, expected;
  for (const ArgInfo& info : ArgInfosOf(scheduled)) {
    args.push_back(NDArray::Empty(info.dtype, info.shape));
    args.back().FillRandom(&rng);
    expected.push_back(args.back().Clone());
  }
  std::vector<NDArray*> pointers;
  for (NDArray& a : expected) pointers.push_back(&a);
  absl::Status s = Interpret(original, pointers);
  if (!s.ok()) return absl::InternalError(absl::StrCat("reference failed: ", s.message()));
  RunnerConfig once;
  once.warmup = 0;
  once.repeat = 1;
  absl::StatusOr<RunResult> ran =
      RunCpuKernel(built[0].artifact_path, built[0].symbol, &args, once);
  if (!ran.ok()) return ran.status();
  if (!ran->ok()) return absl::InternalError(absl::StrCat("run failed: ", ran->error_msg));
  for (size_t i = 0; i < args.size(); ++i) {
    absl::StatusOr<Comparison> cmp = Compare(args[i], expected[i]);
    if (!cmp.ok()) return cmp.status();
    if (!cmp->ok()) {
      return absl::InternalError(absl::StrCat("argument ", i, ": ", cmp->mismatches,
                                              " mismatches, max abs error ", cmp->max_abs_error));
    }
  }
  return absl::OkStatus();
}

PrimFunc SmallWorkload(const std::string& name, const std::string& dtype) {
  absl::StatusOr<WorkloadInfo> info = FindWorkload(name);
  TESSERA_CHECK(info.ok()) << info.status();
  // Halve every size-like parameter of the default until the FLOPs are small.
  std::map<std::string, int64_t> shape;
  for (const WorkloadParam& p : info->params) shape[p.name] = p.default_value;
  for (int round = 0; round < 8; ++round) {
    absl::StatusOr<PrimFunc> f = MakeWorkload(name, shape, dtype);
    TESSERA_CHECK(f.ok()) << f.status();
    int64_t elements = 0;
    for (const Buffer& b : f->params()) elements += b.NumElements();
    if (elements <= 4096) return *f;
    std::map<std::string, int64_t> smaller = shape;
    bool changed = false;
    for (auto& [key, value] : smaller) {
      if (value >= 8) {
        value /= 2;
        changed = true;
      }
    }
    if (!changed || !MakeWorkload(name, smaller, dtype).ok()) return *f;
    shape = smaller;
  }
  return *MakeWorkload(name, shape, dtype);
}

PrimFunc LinearWithPackedWeight(const PrimFunc& linear, bool annotate) {
  Schedule sch = Schedule::Create(linear, 0);
  absl::StatusOr<BlockRV> y = sch.GetBlock("Y");
  TESSERA_CHECK(y.ok()) << y.status();
  absl::StatusOr<Block> node = sch.Get(*y);
  TESSERA_CHECK(node.ok()) << node.status();
  int w = 0;
  while (w < static_cast<int>((*node)->reads.size()) && (*node)->reads[w].buffer.name() != "W") ++w;
  absl::StatusOr<BlockRV> packed = sch.CacheRead(*y, w, "global");
  TESSERA_CHECK(packed.ok()) << packed.status();
  Var k("k"), j("j");
  absl::StatusOr<IndexMap> strips =
      IndexMap::Make({k, j}, {FloorDiv(j, Expr(16)), k, FloorMod(j, Expr(16))});
  TESSERA_CHECK(strips.ok()) << strips.status();
  absl::Status transformed = sch.TransformLayout(*packed, 0, /*buffer_index_type=*/1, *strips);
  TESSERA_CHECK(transformed.ok()) << transformed;
  if (annotate) {
    absl::Status annotated = sch.Annotate(*packed, kLayoutRewritePreproc, InstValue::Int(1));
    TESSERA_CHECK(annotated.ok()) << annotated;
  }
  return sch.func();
}

std::string FirstReductionBlock(const PrimFunc& func) {
  for (const std::string& name : AllBlockNames(func)) {
    absl::StatusOr<StmtPath> path = FindBlockPath(func, name);
    const Block& block = path->back().as<BlockRealizeNode>()->block;
    for (const IterVar& iv : block->iter_vars) {
      if (iv.kind == IterKind::kReduction) return name;
    }
  }
  return "";
}

absl::StatusOr<std::string> CAssembly(const std::string& dir, const std::string& name,
                                      const std::string& code, const std::string& march) {
  const std::string source = dir + "/" + name + ".c";
  const std::string assembly = dir + "/" + name + ".s";
  std::ofstream(source) << code;
  const std::string compile =
      absl::StrCat("cc -O3 -march=", march,
                   " -fno-tree-loop-if-convert -fsimd-cost-model=dynamic -fopenmp -S -o ", assembly,
                   " ", source, " 2>&1");
  if (std::system(compile.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("did not compile: ", compile));
  }
  std::ifstream in(assembly);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<std::string> VectorStoresOfInnermostLoopsWith(const std::string& assembly,
                                                          const std::string& mnemonic) {
  std::istringstream in(assembly);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  const std::regex jump(R"(^\s+j[a-z]+\s+(\.L[0-9]+)$)");
  const std::regex vector_store(R"(vmov[a-z0-9]*\s+%[xyz]mm[0-9]+, .*\()");
  std::map<std::string, size_t> labels;  // ".L13" -> its line
  for (size_t l = 0; l < lines.size(); ++l) {
    if (lines[l].size() > 3 && lines[l].rfind(".L", 0) == 0 && lines[l].back() == ':') {
      labels[lines[l].substr(0, lines[l].size() - 1)] = l;
    }
  }
  // The loop a backward jump on line `end` closes: the line of its label, or none.
  auto loop_start = [&](size_t end) -> std::optional<size_t> {
    std::smatch target;
    if (!std::regex_match(lines[end], target, jump)) return std::nullopt;
    auto it = labels.find(target[1].str());
    if (it == labels.end() || it->second >= end) return std::nullopt;
    return it->second;
  };
  std::vector<std::string> loops;
  for (size_t end = 0; end < lines.size(); ++end) {
    const std::optional<size_t> begin = loop_start(end);
    if (!begin.has_value()) continue;
    bool has = false;
    bool nested = false;  // a loop closed inside this one (labels inside are rotated entries)
    std::string stores;
    for (size_t l = *begin + 1; l < end; ++l) {
      const std::optional<size_t> inner = loop_start(l);
      nested = nested || (inner.has_value() && *inner > *begin);
      const size_t first = lines[l].find_first_not_of(" \t");
      has = has ||
            (first != std::string::npos && lines[l].compare(first, mnemonic.size(), mnemonic) == 0);
      if (std::regex_search(lines[l], vector_store)) stores += lines[l] + "\n";
    }
    if (has && !nested) loops.push_back(stores);
  }
  return loops;
}

}  // namespace testing
}  // namespace tessera
