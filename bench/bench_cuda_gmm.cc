// bench_cuda_gmm: Tessera's tuned GMM on the GPU against cuBLAS, measured in the same run.
// For each precision (--dtypes, default float32,float16->float32,bfloat16->float32; also
// float16, which sums in float16) and shape (--shapes MxNxK, default
// 4096x4096x4096): a tuning job (evolutionary search, --trials, into an in-memory database,
// the cuda target of GPU 0), then cuBLAS, the tuned best and the default schedule timed in
// alternating rounds (--rounds), each figure the median of its rounds. The last columns say which
// kind of kernel the tuned best and the default are (wgmma, mma, wmma or simt).
//
// The anchor is cuBLAS computing what Tessera's function computes: float32 cublasSgemm in the
// default math mode (no TF32: Tessera's float32 GMM multiplies in float32); float16 and
// bfloat16 summed in float32 (`GMM --dtype float16 --acc float32`, a float32 C) cublasGemmEx
// with CUBLAS_COMPUTE_32F and a float32 C; float16 summed in float16 (Tessera's plain float16
// GMM, frontend/workloads_matmul.cc) cublasGemmEx with CUBLAS_COMPUTE_16F, and beside it, for
// reference, the float32-summing cuBLAS figure with a float16 C; tf32 (`--acc tf32`, asked for by
// name) cublasGemmEx with CUBLAS_COMPUTE_32F_FAST_TF32.
//
// CUDA and fork: the measurer runs every batch in a forked child and its parent must never
// initialize CUDA (docs/cuda-backend.md, "Processes"), so cuBLAS runs in a forked child too and
// sends its figure back through a pipe.
//
//   bench_cuda_gmm [--shapes 4096x4096x4096] [--dtypes float32,float16->float32,...] [--trials 64]
//                  [--rounds 3] [--seed 0]
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "base/random.h"
#include "bench/bench_measure.h"
#include "database/database.h"
#include "frontend/workloads.h"
#include "ir/flops.h"
#include "ir/functor.h"
#include "ir/tensor_core_fragments.h"
#include "tuner/best_record.h"
#include "tuner/tune.h"
#include "worker/devices.h"

namespace tessera {
namespace {

// Which kind of kernel a scheduled GMM is, by the scopes it allocates: "wgmma" (Hopper warpgroup
// accumulators fed by TMA), "mma" (ldmatrix / mma.sync fragments), "wmma", else "simt".
std::string KernelFamily(const PrimFunc& scheduled) {
  std::string family = "simt";
  PostOrderVisitStmts(scheduled.body(), [&](const Stmt& stmt) {
    const auto* realize = stmt.as<BlockRealizeNode>();
    if (realize == nullptr) return;
    for (const Buffer& b : realize->block->alloc_buffers) {
      const std::string ns = FragmentNamespace(b.scope());
      if (ns == kWgmmaNamespace) family = "wgmma";
      if (ns == kMmaNamespace && family != "wgmma") family = "mma";
      if (ns == kWmmaNamespace && family == "simt") family = "wmma";
    }
  });
  return family;
}

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  std::string ToString() const { return absl::StrFormat("%dx%dx%d", m, n, k); }
};

// What a forked child sends back: seconds per GEMM, or why it failed.
struct ChildResult {
  double secs = 0;
  char error[512] = {};
};

#define BENCH_CUDA_CHECK(expr, what)                                                 \
  do {                                                                               \
    if (auto rc = (expr); rc != 0) {                                                 \
      std::snprintf(result.error, sizeof(result.error), "%s failed (code %d)", what, \
                    static_cast<int>(rc));                                           \
      return result;                                                                 \
    }                                                                                \
  } while (0)

// What cuBLAS computes for a precision: A and B of `in`, C of `out`, summed in `compute`.
struct CublasGemm {
  cudaDataType_t in, out;
  cublasComputeType_t compute;
};

// A precision of the bench: the workload's dtype and accumulator, cuBLAS computing the same,
// and for float16 summed in float16 the float32-summing cuBLAS figure beside it.
struct Precision {
  std::string name;  // "float16->float32", as --dtypes and the table name it
  std::string dtype, acc;
  CublasGemm anchor;
  std::optional<CublasGemm> reference;
};

std::optional<Precision> FindPrecision(const std::string& name) {
  const CublasGemm f32 = {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
  const CublasGemm f16 = {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F};
  const CublasGemm f16_sums_f32 = {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F};
  const CublasGemm f16_to_f32 = {CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
  const CublasGemm bf16_to_f32 = {CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F};
  const CublasGemm tf32 = {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
  for (const Precision& p :
       {Precision{"float32", "float32", "", f32, std::nullopt},
        Precision{"float16", "float16", "", f16, f16_sums_f32},
        Precision{"float16->float32", "float16", "float32", f16_to_f32, std::nullopt},
        Precision{"bfloat16->float32", "bfloat16", "float32", bf16_to_f32, std::nullopt},
        Precision{"tf32", "float32", "tf32", tf32, std::nullopt}}) {
    if (p.name == name) return p;
  }
  return std::nullopt;
}

size_t ElementBytes(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : 2; }

// In the child: cuBLAS on device arrays of seeded random values, mean seconds per call, the
// mean of 5 repeats of `number` calls each (number grows until a repeat lasts 50 ms), as the
// CUDA runner times Tessera's kernels (bench config below).
ChildResult CublasInChild(const GemmShape& s, const CublasGemm& g) {
  ChildResult result;
  const size_t elem = ElementBytes(g.in), out_elem = ElementBytes(g.out);
  const size_t a_n = s.m * s.k, b_n = s.k * s.n, c_n = s.m * s.n;
  std::vector<char> host(std::max(a_n, b_n) * elem);
  Random rng(1);
  auto fill = [&](size_t count) {
    for (size_t i = 0; i < count; ++i) {
      const float v = static_cast<float>(rng.UniformReal() * 2 - 1);
      if (g.in == CUDA_R_16F) {
        reinterpret_cast<__half*>(host.data())[i] = __float2half(v);
      } else if (g.in == CUDA_R_16BF) {
        reinterpret_cast<__nv_bfloat16*>(host.data())[i] = __float2bfloat16(v);
      } else {
        reinterpret_cast<float*>(host.data())[i] = v;
      }
    }
  };
  void *a = nullptr, *b = nullptr, *c = nullptr;
  BENCH_CUDA_CHECK(cudaSetDevice(0), "cudaSetDevice(0)");
  BENCH_CUDA_CHECK(cudaMalloc(&a, a_n * elem), "cudaMalloc");
  BENCH_CUDA_CHECK(cudaMalloc(&b, b_n * elem), "cudaMalloc");
  BENCH_CUDA_CHECK(cudaMalloc(&c, c_n * out_elem), "cudaMalloc");
  fill(a_n);
  BENCH_CUDA_CHECK(cudaMemcpy(a, host.data(), a_n * elem, cudaMemcpyHostToDevice), "cudaMemcpy");
  fill(b_n);
  BENCH_CUDA_CHECK(cudaMemcpy(b, host.data(), b_n * elem, cudaMemcpyHostToDevice), "cudaMemcpy");
  cublasHandle_t handle;
  BENCH_CUDA_CHECK(cublasCreate(&handle), "cublasCreate");
  // Row-major C = A B is column-major C^T = B^T A^T: B first, with the roles of m and n swapped.
  // alpha and beta are of the compute type.
  const float alpha = 1, beta = 0;
  const __half alpha_h = __float2half(1.0f), beta_h = __float2half(0.0f);
  const bool half_scalars = g.compute == CUBLAS_COMPUTE_16F;
  auto gemm = [&]() -> int {
    if (g.in == CUDA_R_32F) {
      return cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.m, s.k, &alpha,
                         static_cast<float*>(b), s.n, static_cast<float*>(a), s.k, &beta,
                         static_cast<float*>(c), s.n);
    }
    return cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.m, s.k,
                        half_scalars ? static_cast<const void*>(&alpha_h) : &alpha, b, g.in, s.n, a,
                        g.in, s.k, half_scalars ? static_cast<const void*>(&beta_h) : &beta, c,
                        g.out, s.n, g.compute, CUBLAS_GEMM_DEFAULT);
  };
  cudaEvent_t start, stop;
  BENCH_CUDA_CHECK(cudaEventCreate(&start), "cudaEventCreate");
  BENCH_CUDA_CHECK(cudaEventCreate(&stop), "cudaEventCreate");
  BENCH_CUDA_CHECK(gemm(), "cuBLAS GEMM (warm-up)");
  BENCH_CUDA_CHECK(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  auto time_runs = [&](int number, float* ms) -> int {
    if (int rc = cudaEventRecord(start); rc != 0) return rc;
    for (int i = 0; i < number; ++i) {
      if (int rc = gemm(); rc != 0) return rc;
    }
    if (int rc = cudaEventRecord(stop); rc != 0) return rc;
    if (int rc = cudaEventSynchronize(stop); rc != 0) return rc;
    return cudaEventElapsedTime(ms, start, stop);
  };
  int number = 1;
  float ms = 0;
  for (;;) {
    BENCH_CUDA_CHECK(time_runs(number, &ms), "cuBLAS GEMM");
    if (ms >= 50 || number >= (1 << 16)) break;
    number = std::max(number * 2, static_cast<int>(number * 50 / std::max(ms, 1e-3f)) + 1);
  }
  double total = 0;
  constexpr int kRepeats = 5;
  for (int repeat = 0; repeat < kRepeats; ++repeat) {
    BENCH_CUDA_CHECK(time_runs(number, &ms), "cuBLAS GEMM");
    total += ms / 1e3 / number;
  }
  result.secs = total / kRepeats;
  return result;
}

// cuBLAS timed in a forked child; an error names what failed.
absl::StatusOr<double> CublasSeconds(const GemmShape& s, const CublasGemm& g) {
  int fds[2];
  if (pipe(fds) != 0) return absl::InternalError("bench_cuda_gmm: pipe failed");
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("bench_cuda_gmm: fork failed");
  if (pid == 0) {
    close(fds[0]);
    const ChildResult result = CublasInChild(s, g);
    ssize_t written = write(fds[1], &result, sizeof(result));
    _exit(written == sizeof(result) ? 0 : 1);
  }
  close(fds[1]);
  ChildResult result;
  const ssize_t got = read(fds[0], &result, sizeof(result));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got != sizeof(result)) {
    return absl::InternalError(
        absl::StrFormat("cuBLAS child ended without a result (wait status %d)", status));
  }
  if (result.error[0] != '\0') return absl::InternalError(result.error);
  return result.secs;
}

// Also the time-out of the reference, a naive GMM 4096^3 on the host.
constexpr double kTimeoutSec = 120;

double Median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !(x > 0); }), v.end());
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string Tflops(double flops, double secs) {
  return secs > 0 ? absl::StrFormat("%7.1f", flops / secs / 1e12) : std::string("    n/a");
}

std::string Ratio(double anchor_secs, double secs) {
  return secs > 0 && anchor_secs > 0 ? absl::StrFormat("%5.2fx", anchor_secs / secs)
                                     : std::string("  n/a");
}

int Bench(const std::vector<GemmShape>& shapes, const std::vector<Precision>& precisions,
          int trials, int rounds, int64_t seed) {
  const absl::Time start = absl::Now();
  absl::StatusOr<Target> target = ResolveCudaTarget("cuda");
  if (!target.ok()) {
    std::fprintf(stderr, "bench_cuda_gmm: %s\n", std::string(target.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<std::unique_ptr<LocalMeasurer>> measurer =
      LocalMeasurer::Create(*target, BenchMeasureConfig(kTimeoutSec));
  if (!measurer.ok()) {
    std::fprintf(stderr, "bench_cuda_gmm: %s\n", std::string(measurer.status().message()).c_str());
    return 1;
  }
  std::printf(
      "target %s; %d trials per job; medians of %d alternating rounds; ratios are cuBLAS "
      "time / Tessera time (> 1: faster than cuBLAS)\n",
      target->ToString().c_str(), trials, rounds);
  std::printf("%-17s %-16s %9s %9s %9s %9s %8s %8s %9s  %-8s %-8s\n", "dtype", "shape", "cuBLAS",
              "tuned", "default", "cuBLAS32", "tuned/cB", "def/cB", "tune s", "tuned is", "def is");
  std::printf("%-17s %-16s %9s %9s %9s %9s %8s %8s %9s\n", "", "", "TFLOP/s", "TFLOP/s", "TFLOP/s",
              "TFLOP/s", "", "", "");
  std::fflush(stdout);  // a run stopped at its time limit still shows what it finished
  int failures = 0;
  for (const Precision& precision : precisions) {
    const std::string& dtype = precision.name;
    for (const GemmShape& s : shapes) {
      absl::StatusOr<PrimFunc> func = MakeWorkload(
          "GMM", {{"B", 1}, {"M", s.m}, {"N", s.n}, {"K", s.k}}, precision.dtype, precision.acc);
      if (!func.ok()) {
        std::fprintf(stderr, "bench_cuda_gmm: %s\n", std::string(func.status().message()).c_str());
        ++failures;
        continue;
      }
      const double flops = EstimateFlops(*func);
      std::unique_ptr<Database> db = NewMemoryDatabase();
      TuneOptions options;
      options.target = *target;
      options.seed = seed;
      options.max_trials_global = trials;
      options.runoff = true;  // as `tessera tune` does
      options.measure = BenchMeasureConfig(kTimeoutSec);
      options.measure.runner.repeat = 3;
      options.measure.runner.min_repeat_ms = 20;
      absl::StatusOr<TuneSummary> summary =
          Tune({{"GMM " + s.ToString() + " " + dtype, *func, 1}}, db.get(), options);
      if (!summary.ok()) {
        std::fprintf(stderr, "bench_cuda_gmm: %s %s: %s\n", dtype.c_str(), s.ToString().c_str(),
                     std::string(summary.status().message()).c_str());
        ++failures;
        continue;
      }
      const TaskSummary& task = summary->tasks[0];
      std::fprintf(stderr,
                   "bench_cuda_gmm: %s %s: %d trials, %d build errors, %d run errors, %d "
                   "time-outs, %d wrong outputs; in-job best %.4f ms; tuning %.1f s (builds %.1f, "
                   "runs %.1f, checks with the host reference %.1f)\n",
                   dtype.c_str(), s.ToString().c_str(), task.trials, task.build_errors,
                   task.run_errors, task.timeouts, task.wrong_outputs,
                   task.best_secs.value_or(0) * 1e3, summary->times.wall, summary->times.build,
                   summary->times.run, summary->times.verify);
      // The first message of each kind of failure, to say why candidates failed.
      absl::StatusOr<std::vector<TuningRecord>> records = db->AllRecords();
      std::set<MeasureError> shown;
      for (const TuningRecord& r : records.ok() ? *records : std::vector<TuningRecord>{}) {
        if (r.error == MeasureError::kNone || !shown.insert(r.error).second) continue;
        std::fprintf(stderr, "bench_cuda_gmm: %s %s: a failed candidate: %s\n", dtype.c_str(),
                     s.ToString().c_str(), r.error_msg.substr(0, 600).c_str());
      }
      std::optional<PrimFunc> best;
      absl::StatusOr<std::optional<ChosenRecord>> chosen =
          BestRecordOrDefault(db.get(), *func, *target, /*verified_only=*/true);
      if (chosen.ok() && chosen->has_value()) {
        absl::StatusOr<PrimFunc> replayed = ReplayRecord(*func, (*chosen)->record);
        if (replayed.ok()) best = *replayed;
      }
      const std::optional<PrimFunc> def = DefaultFunc(*func, *target);
      std::vector<double> cublas, cublas32, tuned, def_secs;
      for (int round = 0; round < rounds; ++round) {
        // Each round's start on stderr: a run cut off at its time limit says where it was.
        std::fprintf(stderr, "bench_cuda_gmm: %s %s: timing round %d of %d (%.0f s in)\n",
                     dtype.c_str(), s.ToString().c_str(), round + 1, rounds,
                     absl::ToDoubleSeconds(absl::Now() - start));
        absl::StatusOr<double> c = CublasSeconds(s, precision.anchor);
        if (!c.ok()) std::fprintf(stderr, "bench_cuda_gmm: %s\n", c.status().ToString().c_str());
        cublas.push_back(c.value_or(0));
        if (precision.reference.has_value()) {
          absl::StatusOr<double> c32 = CublasSeconds(s, *precision.reference);
          cublas32.push_back(c32.value_or(0));
        }
        std::vector<PrimFunc> candidates;
        if (best) candidates.push_back(*best);
        if (def) candidates.push_back(*def);
        const std::vector<double> secs =
            MeasureSeconds(*func, candidates, *target, measurer->get(), "bench_cuda_gmm");
        if (best) tuned.push_back(secs[0]);
        if (def) def_secs.push_back(secs.back());
      }
      const double cb = Median(cublas), cb32 = Median(cublas32), tu = Median(tuned),
                   de = Median(def_secs);
      if (tu <= 0) ++failures;
      std::printf("%-17s %-16s %9s %9s %9s %9s %8s %8s %9.1f  %-8s %-8s\n", dtype.c_str(),
                  s.ToString().c_str(), Tflops(flops, cb).c_str(), Tflops(flops, tu).c_str(),
                  Tflops(flops, de).c_str(),
                  precision.reference ? Tflops(flops, cb32).c_str() : "       -",
                  Ratio(cb, tu).c_str(), Ratio(cb, de).c_str(), summary->times.wall,
                  best ? KernelFamily(*best).c_str() : "-", def ? KernelFamily(*def).c_str() : "-");
      std::fflush(stdout);
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  CLI::App app{"Tessera's tuned GMM on the GPU against cuBLAS, measured in the same run"};
  std::string shapes_text = "4096x4096x4096";
  std::string dtypes_text = "float32,float16->float32,bfloat16->float32";
  int trials = 64, rounds = 3;
  int64_t seed = 0;
  app.add_option("--shapes", shapes_text, "Comma-separated MxNxK (row-major A MxK, B KxN)")
      ->capture_default_str();
  app.add_option("--dtypes", dtypes_text,
                 "Precisions: float32, float16 (summed in float16), float16->float32, "
                 "bfloat16->float32 (summed in float32, a float32 C), tf32 (float32 operands "
                 "rounded to TF32, against cuBLAS's CUBLAS_COMPUTE_32F_FAST_TF32)")
      ->capture_default_str();
  app.add_option("--trials", trials, "Trials of each tuning job")->capture_default_str();
  app.add_option("--rounds", rounds, "Alternating timing rounds (medians)")->capture_default_str();
  app.add_option("--seed", seed, "Seed of the search and the data")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::vector<tessera::GemmShape> shapes;
  for (absl::string_view text : absl::StrSplit(shapes_text, ',', absl::SkipEmpty())) {
    std::vector<std::string> dims = absl::StrSplit(text, 'x');
    tessera::GemmShape s;
    if (dims.size() != 3 || !absl::SimpleAtoi(dims[0], &s.m) || !absl::SimpleAtoi(dims[1], &s.n) ||
        !absl::SimpleAtoi(dims[2], &s.k) || s.m <= 0 || s.n <= 0 || s.k <= 0) {
      std::fprintf(stderr, "bench_cuda_gmm: --shapes: '%s' is not MxNxK\n",
                   std::string(text).c_str());
      return 2;
    }
    shapes.push_back(s);
  }
  std::vector<tessera::Precision> precisions;
  for (const std::string& d :
       std::vector<std::string>(absl::StrSplit(dtypes_text, ',', absl::SkipEmpty()))) {
    std::optional<tessera::Precision> p = tessera::FindPrecision(d);
    if (!p.has_value()) {
      std::fprintf(stderr,
                   "bench_cuda_gmm: --dtypes: '%s' is not float32, float16, float16->float32 or "
                   "bfloat16->float32\n",
                   d.c_str());
      return 2;
    }
    precisions.push_back(*p);
  }
  return tessera::Bench(shapes, precisions, trials, std::max(rounds, 1), seed);
}
