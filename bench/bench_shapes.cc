// bench_shapes: Tessera on the shapes real models have, against anchors measured in the same
// run (issue #13). For each named shape (fp32, cpu):
//   - default: the latency of the default schedule (rules/default/, `tessera default`);
//   - tuned: the best verified schedule after each trial checkpoint (default 64 and 256), for
//     each seed, timed again here alternately with the default (the tuner's own figure beside
//     it); the worst seed counts for the goals;
//   - the anchors: OpenBLAS (cblas_sgemm / cblas_sgemv) for GEMM and GEMV shapes;
//     onnxruntime's MLAS (bench/anchors/ort_anchor.py, with --mlas-python) for GEMM, GEMV and
//     conv; oneDNN (bench/anchors/dnnl_anchor.h, if built) for GEMM, GEMV and conv; for
//     memory-bound operators the bytes they must move over the measured memory bandwidth (a
//     STREAM-like triad in this process, 2 threads), with onnxruntime's time beside it for
//     reference (Softmax, LayerNormalization, RMSNormalization; no goal). The fastest library
//     on a shape is the reference of its ratios;
//   - wall time of the tuning, the share spent building candidates, and how many trials failed
//     (build or run errors, time-outs, wrong outputs: TaskSummary::errors).
// The libraries and the default are timed in --rounds alternating rounds (medians), as memory-bound
// timings move with the host's other tenants from one minute to the next.
// GEMM and conv times are also a share of the float32 FMA peak of the target's cores, measured
// at start (worker/host.h's probe, printed first). Then the geometric means per group and which
// of the goals are met (issue 29's: GEMM kernels at >= 0.85 of that peak). An anchor that
// was not run is named as such, not guessed.
//
//   bench_shapes [--shapes bert_qkv,llama_gemv,...] [--trials 64,256] [--seeds 3] [--rounds 3]
//                [--list]
//                (--trials 0: the default schedules only, no tuning)
//                [--mlas-python build/anchor-venv/bin/python] [--no-dnnl]
//                [--rule-params '{"MultiLevelTiling": {"pad_odd_extents": false}}']
//
// Unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set, it runs with GOMP_SPINCOUNT=1000, as the
// kernel processes of `tessera` do (it re-executes itself with it, base/openmp_env.h): Tessera's
// kernels and oneDNN use libgomp, whose threads spinning 300,000 times lose whole scheduler
// slices when the cores are oversubscribed (6-10x slower seen; docs/tuning.md), while sleeping
// at once costs short kernels their wake-up time on a quiet machine. onnxruntime's own thread
// pool spins; OMP_WAIT_POLICY=active gives libgomp the same on a machine known to be quiet
// (docs/cpu-backend.md has both on the Intel core).
#include <cblas.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "base/openmp_env.h"
#include "base/random.h"
#include "bench/anchors/mlas_anchor.h"
#include "bench/bench_measure.h"
#include "database/database.h"
#include "frontend/workloads.h"
#include "ir/analysis.h"
#include "ir/flops.h"
#include "ir/structural_equal.h"
#include "rules/default/default_rule.h"
#include "tuner/best_record.h"
#include "tuner/runoff.h"
#include "tuner/tune.h"
#include "worker/host.h"
#include "worker/measurer.h"
#ifdef TESSERA_HAVE_DNNL
#include "bench/anchors/dnnl_anchor.h"
#endif

namespace tessera {
namespace {

enum class Group { kGemm, kGemv, kConv, kMemory, kBf16, kInt8 };

const char* GroupName(Group g) {
  switch (g) {
    case Group::kGemm:
      return "GEMM";
    case Group::kGemv:
      return "GEMV";
    case Group::kConv:
      return "conv";
    case Group::kMemory:
      return "memory-bound";
    case Group::kBf16:
      return "bfloat16 GEMM, conv";
    case Group::kInt8:
      return "int8 GEMM, conv";
  }
  return "";
}

struct Shape {
  std::string name;   // e.g. "bert_ffn1"
  std::string model;  // where it comes from
  std::string workload;
  std::map<std::string, int64_t> params;
  Group group;
  std::string dtype = "float32";
  std::string acc = "";  // MakeWorkload's accumulator ("": the dtype's own)
};

// Shapes of BERT-base (seq 128, hidden 768), LLaMA-7B (hidden 4096, MLP 11008; decode GEMVs, and
// a decode projection as the MatMul of one token), ResNet-18 (its stem, a strided projection,
// the 7x7x512 stage, the batch-1 classifier), ResNet-50
// and MobileNet convolutions, norms and softmax at model sizes, and odd sizes. A
// layer's product by its weight is LINEAR (or DENSE_BIAS_RELU): the weight is constant, as the
// libraries' anchors treat it (MLAS's initializers, oneDNN's reordered inner-product weights),
// and Tessera's kernels may read it pre-packed too (docs/cpu-backend.md); odd_gmm stays a GMM of
// two inputs.
// ResNet-50's stage 1 3x3 convolution, in float32, bfloat16 and int8 below.
const std::map<std::string, int64_t> kResNetConv56 = {{"N", 1},      {"H", 56},     {"W", 56},
                                                      {"CI", 64},    {"CO", 64},    {"K", 3},
                                                      {"stride", 1}, {"padding", 1}};
// Its stage 3 3x3 convolution (the tile spans the width), likewise.
const std::map<std::string, int64_t> kResNetConv14 = {{"N", 1},      {"H", 14},     {"W", 14},
                                                      {"CI", 256},   {"CO", 256},   {"K", 3},
                                                      {"stride", 1}, {"padding", 1}};

std::vector<Shape> AllShapes() {
  return {
      {"bert_attn_out",
       "BERT-base attention output 128x768x768",
       "LINEAR",
       {{"M", 128}, {"N", 768}, {"K", 768}},
       Group::kGemm},
      {"bert_ffn1",
       "BERT-base FFN up 128x3072x768 (+bias, relu)",
       "DENSE_BIAS_RELU",
       {{"M", 128}, {"N", 3072}, {"K", 768}},
       Group::kGemm},
      {"bert_ffn2",
       "BERT-base FFN down 128x768x3072",
       "LINEAR",
       {{"M", 128}, {"N", 768}, {"K", 3072}},
       Group::kGemm},
      {"llama_prefill_qkv",
       "LLaMA-7B prefill 32 tokens 32x4096x4096",
       "LINEAR",
       {{"M", 32}, {"N", 4096}, {"K", 4096}},
       Group::kGemm},
      {"odd_gmm",
       "odd sizes 127x257x509",
       "GMM",
       {{"M", 127}, {"N", 257}, {"K", 509}},
       Group::kGemm},
      {"llama_gemv_q",
       "LLaMA-7B decode q-proj 4096x4096",
       "GEMV",
       {{"M", 4096}, {"K", 4096}},
       Group::kGemv},
      {"llama_gemv_up",
       "LLaMA-7B decode MLP up 11008x4096",
       "GEMV",
       {{"M", 11008}, {"K", 4096}},
       Group::kGemv},
      {"gpt2_lm_head",
       "GPT-2 LM head, vocabulary 50257x768",
       "GEMV",
       {{"M", 50257}, {"K", 768}},
       Group::kGemv},
      {"llama_decode_q",
       "LLaMA-7B decode q-proj as its MatMul, one token 1x4096 -> 4096",
       "LINEAR",
       {{"M", 1}, {"N", 4096}, {"K", 4096}},
       Group::kGemv},
      {"resnet18_fc",
       "ResNet-18 classifier 1x512 -> 1000 (batch 1)",
       "LINEAR",
       {{"M", 1}, {"N", 1000}, {"K", 512}},
       Group::kGemv},
      {"resnet_c2d_56", "ResNet-50 stage 1 conv 3x3 56x56x64->64", "C2D", kResNetConv56,
       Group::kConv},
      {"resnet_c2d_14", "ResNet-50 stage 3 conv 3x3 14x14x256->256", "C2D", kResNetConv14,
       Group::kConv},
      {"resnet18_stem",
       "ResNet-18 stem conv 7x7 stride 2 224x224x3->64",
       "C2D",
       {{"N", 1},
        {"H", 224},
        {"W", 224},
        {"CI", 3},
        {"CO", 64},
        {"K", 7},
        {"stride", 2},
        {"padding", 3}},
       Group::kConv},
      {"resnet18_proj_56",
       "ResNet-18 projection 1x1 stride 2 56x56x64->128",
       "C2D",
       {{"N", 1},
        {"H", 56},
        {"W", 56},
        {"CI", 64},
        {"CO", 128},
        {"K", 1},
        {"stride", 2},
        {"padding", 0}},
       Group::kConv},
      {"resnet18_c2d_7",
       "ResNet-18 stage 4 conv 3x3 7x7x512->512",
       "C2D",
       {{"N", 1},
        {"H", 7},
        {"W", 7},
        {"CI", 512},
        {"CO", 512},
        {"K", 3},
        {"stride", 1},
        {"padding", 1}},
       Group::kConv},
      {"unet_c2d_64",
       "U-Net encoder conv 3x3 64x64x32->64",
       "C2D",
       {{"N", 1},
        {"H", 64},
        {"W", 64},
        {"CI", 32},
        {"CO", 64},
        {"K", 3},
        {"stride", 1},
        {"padding", 1}},
       Group::kConv},
      {"mobilenet_dep_56",
       "MobileNet depthwise 3x3 56x56x128",
       "DEP",
       {{"N", 1}, {"H", 56}, {"W", 56}, {"C", 128}, {"K", 3}, {"stride", 1}, {"padding", 1}},
       Group::kConv},
      {"bert_layer_norm",
       "BERT-base layer norm 128x768",
       "LAYER_NORM",
       {{"M", 128}, {"N", 768}},
       Group::kMemory},
      {"llama_rms_norm",
       "LLaMA-7B RMS norm 32x4096",
       "RMS_NORM",
       {{"M", 32}, {"N", 4096}},
       Group::kMemory},
      {"bert_softmax",
       "BERT-base attention softmax 12x128 rows of 128",
       "SFM",
       {{"M", 1536}, {"N", 128}},
       Group::kMemory},
      {"resnet18_maxpool",
       "ResNet-18 max pool 3x3 stride 2 112x112x64",
       "MAX_POOL",
       {{"N", 1}, {"H", 112}, {"W", 112}, {"C", 64}, {"K", 3}, {"stride", 2}, {"padding", 1}},
       Group::kMemory},
      {"seq77_softmax",
       "odd: softmax rows of 77 (CLIP text)",
       "SFM",
       {{"M", 924}, {"N", 77}},
       Group::kMemory},
      // bfloat16 weights and activations summed in float32 (a model run in bfloat16): on a core
      // with AVX-512 BF16 Tessera takes k in pairs (docs/cpu-backend.md "bfloat16 products").
      {"bert_attn_out_bf16",
       "BERT-base attention output 128x768x768 in bfloat16 (float32 sums)",
       "LINEAR",
       {{"M", 128}, {"N", 768}, {"K", 768}},
       Group::kBf16,
       "bfloat16",
       "float32"},
      {"llama_prefill_qkv_bf16",
       "LLaMA-7B prefill 32 tokens 32x4096x4096 in bfloat16 (float32 sums)",
       "LINEAR",
       {{"M", 32}, {"N", 4096}, {"K", 4096}},
       Group::kBf16,
       "bfloat16",
       "float32"},
      {"resnet_c2d_56_bf16", "ResNet-50 stage 1 conv 3x3 56x56x64->64 in bfloat16 (float32 sums)",
       "C2D", kResNetConv56, Group::kBf16, "bfloat16", "float32"},
      {"bert_seq100_bf16",
       "BERT-base attention output for 100 tokens 100x768x768 in bfloat16 (rows padded to the "
       "tiles)",
       "LINEAR",
       {{"M", 100}, {"N", 768}, {"K", 768}},
       Group::kBf16,
       "bfloat16",
       "float32"},
      {"llama_decode_q_bf16",
       "LLaMA-7B decode q-proj, one token 1x4096 -> 4096 in bfloat16",
       "LINEAR",
       {{"M", 1}, {"N", 4096}, {"K", 4096}},
       Group::kBf16,
       "bfloat16",
       "float32"},
      {"resnet_c2d_14_bf16", "ResNet-50 stage 3 conv 3x3 14x14x256->256 in bfloat16 (float32 sums)",
       "C2D", kResNetConv14, Group::kBf16, "bfloat16", "float32"},
      // int8 summed in int32 (a quantized layer's product of two inputs): with AVX-512 VNNI
      // Tessera takes k four at a time.
      {"bert_attn_out_int8",
       "BERT-base attention output 128x768x768 in int8 (int32 sums), a product of two inputs",
       "GMM",
       {{"B", 1}, {"M", 128}, {"N", 768}, {"K", 768}},
       Group::kInt8,
       "int8"},
      {"bert_ffn2_int8",
       "BERT-base FFN down 128x768x3072 by its int8 weight (int32 sums)",
       "LINEAR",
       {{"M", 128}, {"N", 768}, {"K", 3072}},
       Group::kInt8,
       "int8"},
      {"resnet_c2d_56_int8", "ResNet-50 stage 1 conv 3x3 56x56x64->64 in int8 (int32 sums)", "C2D",
       kResNetConv56, Group::kInt8, "int8"},
      {"bert_seq100_int8",
       "BERT-base attention output for 100 tokens 100x768x768 in int8 (rows padded to the tiles)",
       "LINEAR",
       {{"M", 100}, {"N", 768}, {"K", 768}},
       Group::kInt8,
       "int8"},
      {"llama_decode_q_int8",
       "LLaMA-7B decode q-proj, one token 1x4096 -> 4096 in int8",
       "LINEAR",
       {{"M", 1}, {"N", 4096}, {"K", 4096}},
       Group::kInt8,
       "int8"},
      {"resnet_c2d_14_int8", "ResNet-50 stage 3 conv 3x3 14x14x256->256 in int8 (int32 sums)",
       "C2D", kResNetConv14, Group::kInt8, "int8"},
  };
}

double SecondsOf(const std::function<void()>& fn) {
  fn();  // warm-up (thread pool, pages)
  double best = 1e30;
  for (int repeat = 0; repeat < 5; ++repeat) {
    int number = 0;
    auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    while (elapsed < 0.1) {
      fn();
      ++number;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    best = std::min(best, elapsed / number);
  }
  return best;
}

std::vector<float> RandomFloats(int64_t n) {
  std::vector<float> v(n);
  Random rng(1);
  for (float& x : v) x = static_cast<float>(rng.UniformReal());
  return v;
}

// OpenBLAS on the same problem, seconds; 0 when it has no equivalent.
double OpenBlasSeconds(const Shape& s) {
  if (s.dtype != "float32") return 0;
  auto p = [&](const char* k) { return s.params.at(k); };
  if (s.workload == "GMM" || s.workload == "LINEAR" || s.workload == "DENSE_BIAS_RELU") {
    const int64_t m = p("M"), n = p("N"), k = p("K");
    std::vector<float> a = RandomFloats(m * k), b = RandomFloats(k * n), c(m * n);
    const bool transposed = s.workload == "DENSE_BIAS_RELU";  // X . W^T
    return SecondsOf([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, transposed ? CblasTrans : CblasNoTrans, m, n, k,
                  1.0f, a.data(), k, b.data(), transposed ? k : n, 0.0f, c.data(), n);
    });
  }
  if (s.workload == "GEMV") {
    const int64_t m = p("M"), k = p("K");
    std::vector<float> a = RandomFloats(m * k), x = RandomFloats(k), y(m);
    return SecondsOf([&] {
      cblas_sgemv(CblasRowMajor, CblasNoTrans, m, k, 1.0f, a.data(), k, x.data(), 1, 0.0f, y.data(),
                  1);
    });
  }
  return 0;
}

// Which library anchors run besides OpenBLAS (issue #13: "against the best library").
struct AnchorOptions {
  std::string mlas_python;  // the anchors' virtualenv Python; empty: MLAS is not run
  std::string mlas_script;  // bench/anchors/ort_anchor.py
  bool dnnl = true;         // oneDNN, when this binary was built with it
};

// One library's time on a shape: seconds > 0, or 0 and `note` saying why there is none.
struct LibraryTime {
  std::string library;
  double secs = 0;
  std::string note;
};

// MLAS and oneDNN on `s` (OpenBLAS is timed by the caller, in the same rounds).
std::vector<LibraryTime> OtherLibraryTimes(const Shape& s, const AnchorOptions& options) {
  std::vector<LibraryTime> out;
  LibraryTime mlas{"MLAS", 0, ""};
  if (s.dtype != "float32") {
    mlas.note = "not run for " + s.dtype + " (the anchor times float32 MatMuls)";
  } else if (options.mlas_python.empty()) {
    mlas.note = "not run (pass --mlas-python VENV/bin/python; bench/anchors/setup_venv.sh)";
  } else {
    absl::StatusOr<double> secs = anchors::MlasSeconds(options.mlas_python, options.mlas_script,
                                                       s.name, s.workload, s.params);
    if (secs.ok()) {
      mlas.secs = *secs;
    } else {
      mlas.note = std::string(secs.status().message());
    }
  }
  out.push_back(mlas);
  LibraryTime dnnl{"oneDNN", 0, ""};
#ifdef TESSERA_HAVE_DNNL
  if (!options.dnnl) {
    dnnl.note = "not run (--no-dnnl)";
  } else if (!anchors::DnnlSupports(s.workload, s.dtype)) {
    dnnl.note = "no oneDNN call for " + s.workload + " in " + s.dtype;
  } else {
    absl::StatusOr<double> secs = anchors::DnnlSeconds(s.workload, s.params, 2, s.dtype);
    if (secs.ok()) {
      dnnl.secs = *secs;
    } else {
      dnnl.note = std::string(secs.status().message());
    }
  }
#else
  dnnl.note = "not built (CMake did not find libdnnl-dev)";
#endif
  out.push_back(dnnl);
  return out;
}

// The median of the positive values of `v`; 0 if there are none.
double MedianOfPositive(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return x <= 0; }), v.end());
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A STREAM-like triad a = b + s * c over 3 x 64 MB with 2 threads: bytes per second. It runs in
// a child process: OpenMP's thread pool does not survive fork(), and the runners fork the
// kernels they time (worker/runner.h), so this process itself must never run OpenMP code.
double TriadBandwidth() {
  int fds[2];
  if (pipe(fds) != 0) return 0;
  pid_t child = fork();
  if (child == 0) {
    const int64_t n = 16 << 20;
    std::vector<float> a(n), b = RandomFloats(n), c = RandomFloats(n);
    double secs = SecondsOf([&] {
#pragma omp parallel for num_threads(2)
      for (int64_t i = 0; i < n; ++i) a[i] = b[i] + 3.0f * c[i];
    });
    double bytes_per_sec = 3.0 * n * sizeof(float) / secs;
    ssize_t written = write(fds[1], &bytes_per_sec, sizeof(bytes_per_sec));
    _exit(written == sizeof(bytes_per_sec) ? 0 : 1);
  }
  close(fds[1]);
  double bytes_per_sec = 0;
  if (child < 0 || read(fds[0], &bytes_per_sec, sizeof(bytes_per_sec)) != sizeof(bytes_per_sec)) {
    bytes_per_sec = 0;
  }
  close(fds[0]);
  if (child > 0) waitpid(child, nullptr, 0);
  return bytes_per_sec;
}

// Bytes a memory-bound function must move at least: every parameter once.
double ParamBytes(const PrimFunc& f) {
  double bytes = 0;
  for (const ArgInfo& a : ArgInfosOf(f)) {
    double n = a.dtype.bytes();
    for (int64_t d : a.shape) n *= static_cast<double>(d);
    bytes += n;
  }
  return bytes;
}

// The tuned best and the default timed alternately by the bench's own measurer (twice each,
// the faster counts), so "tuned >= default" compares two kernels measured in the same minute
// the same way, not the tuner's in-job figure (fewer repeats, minutes apart) with the bench's.
struct Paired {
  double tuned = 0;
  double default_secs = 0;
  // How far the default's two timings were apart, relative to the faster: the noise of two
  // timings of one kernel in that minute.
  double default_spread = 0;
};
Paired MeasurePaired(const PrimFunc& func, const PrimFunc& tuned, const PrimFunc& def,
                     const Target& target, LocalMeasurer* measurer) {
  const std::vector<double> a =
      MeasureSeconds(func, {def, tuned}, target, measurer, "bench_shapes");
  const std::vector<double> b =
      MeasureSeconds(func, {tuned, def}, target, measurer, "bench_shapes");
  auto faster = [](double x, double y) {
    if (x <= 0) return y;
    return y <= 0 ? x : std::min(x, y);
  };
  Paired paired{faster(a[1], b[0]), faster(a[0], b[1])};
  if (a[0] > 0 && b[1] > 0) paired.default_spread = std::abs(a[0] - b[1]) / std::min(a[0], b[1]);
  return paired;
}

struct Tuned {
  std::vector<double> secs;  // per checkpoint, the tuner's own figure; 0: nothing verified
  std::vector<std::optional<PrimFunc>> best;  // per checkpoint, the best schedule (ApplyBest)
  double wall = 0;
  double build = 0;
  int trials = 0;
  int errors = 0;  // build and run errors, time-outs and wrong outputs (TaskSummary::errors)
};

Tuned TuneTo(const PrimFunc& func, const Target& target, const std::vector<int>& budgets,
             int64_t seed, const nlohmann::json& rule_params) {
  std::unique_ptr<Database> db = NewMemoryDatabase();
  TuneOptions options;
  options.target = target;
  options.seed = seed;
  options.rule_params = rule_params;
  options.runoff = true;  // as `tessera tune` does
  options.measure = BenchMeasureConfig();
  options.measure.runner.repeat = 3;
  options.measure.runner.min_repeat_ms = 20;
  Tuned out;
  int done = 0;
  for (int budget : budgets) {
    options.max_trials_global = budget - done;
    absl::StatusOr<TuneSummary> s = Tune({{"task", func, 1}}, db.get(), options);
    if (!s.ok()) {
      std::fprintf(stderr, "bench_shapes: %s\n", std::string(s.status().message()).c_str());
      break;
    }
    done += s->total_trials;
    out.wall += s->times.wall;
    out.build += s->times.build;
    out.trials += s->tasks[0].trials;
    out.errors += s->tasks[0].errors();
    out.secs.push_back(s->tasks[0].best_secs.value_or(0));
    // The runoff decides what `best` returns: say what it found, or why it failed.
    if (!s->tasks[0].runoff_error.empty()) {
      std::fprintf(stderr, "bench_shapes: seed %lld, %d trials: runoff failed: %s\n",
                   static_cast<long long>(seed), done, s->tasks[0].runoff_error.c_str());
    }
    for (const Runoff& r : s->tasks[0].runoffs) {
      std::fprintf(stderr,
                   "bench_shapes: seed %lld, %d trials: runoff of record %lld (%.4f ms in the "
                   "job) against the default's record %lld (%.4f ms): %.4f against %.4f ms, best "
                   "after it: %s (record %lld)\n",
                   static_cast<long long>(seed), done, static_cast<long long>(r.fastest_id),
                   r.fastest_secs_before * 1e3, static_cast<long long>(r.default_id),
                   r.default_secs_before * 1e3, r.fastest_secs * 1e3, r.default_secs * 1e3,
                   BestAfter(r), static_cast<long long>(r.best_id));
    }
    // The record ApplyBest compiles with, replayed as it is (ApplyBest's copy carries the
    // "scheduled" attribute, which the default schedule it is compared with does not).
    absl::StatusOr<std::optional<ChosenRecord>> chosen =
        BestRecordOrDefault(db.get(), func, target, /*verified_only=*/true);
    std::optional<PrimFunc> best;
    if (chosen.ok() && chosen->has_value()) {
      absl::StatusOr<PrimFunc> replayed = ReplayRecord(func, (*chosen)->record);
      if (replayed.ok()) best = *replayed;
    }
    out.best.push_back(best);
  }
  return out;
}

double Geomean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double log_sum = 0;
  for (double x : v) log_sum += std::log(x);
  return std::exp(log_sum / static_cast<double>(v.size()));
}

int Bench(const std::vector<std::string>& names, const std::vector<int>& budgets, int64_t seed,
          int seeds, int rounds, const AnchorOptions& anchor_options,
          const nlohmann::json& rule_params) {
  const Target target = *ResolveTarget("cpu");
  absl::StatusOr<std::unique_ptr<LocalMeasurer>> measurer =
      LocalMeasurer::Create(target, BenchMeasureConfig());
  if (!measurer.ok()) {
    std::fprintf(stderr, "bench_shapes: %s\n", std::string(measurer.status().message()).c_str());
    return 1;
  }
  const double bandwidth = TriadBandwidth();
  // The float32 FMA peak of the cores the kernels run on: worker/host.h's probe (one core, 12
  // independent FMA chains at the target's vector width) times the target's cores. 0 when the
  // host has no FMA of that width.
  const FmaProbe fma = MeasureFmaProbe(static_cast<int>(target.vector_bits()));
  const double peak_flops = fma.measured ? fma.peak_gflops * 1e9 * target.cores() : 0;
  if (peak_flops > 0) {
    std::printf("FMA peak %.1f GFLOP/s (%lld cores x %.1f, %d-bit FMAs, measured now)\n",
                peak_flops / 1e9, static_cast<long long>(target.cores()), fma.peak_gflops,
                fma.vector_bits);
  }
  std::printf(
      "fp32 on %s; triad bandwidth %.1f GB/s; anchors: OpenBLAS (GEMM, GEMV), MLAS %s, oneDNN "
      "%s (GEMM, GEMV, conv), bandwidth (memory-bound; onnxruntime beside it); ratios are "
      "against the fastest library on each shape; libraries and defaults: medians of %d "
      "alternating rounds\n",
      target.ToString().c_str(), bandwidth / 1e9,
      anchor_options.mlas_python.empty() ? "(not run: pass --mlas-python)" : "(onnxruntime)",
#ifdef TESSERA_HAVE_DNNL
      anchor_options.dnnl ? "(2.6)" : "(not run: --no-dnnl)"
#else
      "(not built)"
#endif
      ,
      rounds);
  if (!rule_params.empty()) std::printf("rule params: %s\n", rule_params.dump().c_str());
  // Ratios against the anchor (anchor time / Tessera time: > 1 is faster than the anchor).
  std::map<Group, std::vector<double>> worst_tuned_ratio;
  std::map<Group, std::set<std::string>> libraries_judged;  // which libraries the ratios saw
  std::map<Group, std::vector<double>> default_ratio;       // the same ratios for the defaults
  std::vector<double> memory_library_ratio;  // memory-bound, worst tuned against onnxruntime
  // GEMM shapes' worst tuned FLOP rate as a share of the FMA peak.
  std::vector<std::pair<std::string, double>> gemm_peak_share;
  int tuned_not_worse = 0, shapes_run = 0;
  // Shapes whose tuned schedules were slower than the default, but never by more than the
  // spread between two timings of the default in the same minute.
  int slower_within_noise = 0;
  double total_wall = 0, total_build = 0;
  for (const Shape& shape : AllShapes()) {
    if (!names.empty() && std::find(names.begin(), names.end(), shape.name) == names.end()) {
      continue;
    }
    absl::StatusOr<PrimFunc> func =
        MakeWorkload(shape.workload, shape.params, shape.dtype, shape.acc);
    if (!func.ok()) {
      std::fprintf(stderr, "bench_shapes: %s: %s\n", shape.name.c_str(),
                   std::string(func.status().message()).c_str());
      continue;
    }
    ++shapes_run;
    const double flops = EstimateFlops(*func);
    // The libraries and the default in `rounds` alternating rounds, each figure the median of
    // its rounds: a memory-bound kernel's time follows the host's other tenants from one
    // minute to the next (a GEMV's default went from 0.74x to 0.54x OpenBLAS between two runs
    // a minute apart, each timed once), so the ratios compare timings of the same minutes.
    const std::optional<PrimFunc> def_func = DefaultFunc(*func, target);
    std::vector<double> openblas_rounds, def_rounds;
    std::vector<std::vector<LibraryTime>> library_rounds;
    for (int round = 0; round < rounds; ++round) {
      openblas_rounds.push_back(OpenBlasSeconds(shape));
      library_rounds.push_back(OtherLibraryTimes(shape, anchor_options));
      def_rounds.push_back(
          def_func ? MeasureSeconds(*func, {*def_func}, target, measurer->get(), "bench_shapes")[0]
                   : 0);
    }
    const double def = MedianOfPositive(def_rounds);
    std::vector<LibraryTime> libraries = library_rounds[0];
    for (size_t lib = 0; lib < libraries.size(); ++lib) {
      std::vector<double> secs;
      for (const std::vector<LibraryTime>& times : library_rounds) secs.push_back(times[lib].secs);
      libraries[lib].secs = MedianOfPositive(secs);
    }
    const double openblas = MedianOfPositive(openblas_rounds);
    if (openblas > 0) libraries.insert(libraries.begin(), LibraryTime{"OpenBLAS", openblas, ""});
    std::vector<Tuned> runs;
    for (int k = 0; k < seeds; ++k) {
      runs.push_back(TuneTo(*func, target, budgets, seed + k, rule_params));
    }
    // The fastest library on this shape is the anchor of its ratios.
    double anchor = 1e30;
    std::string fastest;
    for (const LibraryTime& lib : libraries) {
      if (lib.secs > 0 && lib.secs < anchor) {
        anchor = lib.secs;
        fastest = lib.library;
      }
    }
    const double bound = ParamBytes(*func) / bandwidth;  // memory-bound anchor, seconds
    std::printf("\n%s: %s (%s, %.3g GFLOP)\n", shape.name.c_str(), shape.model.c_str(),
                GroupName(shape.group), flops / 1e9);
    auto describe = [&](double secs) {
      if (secs <= 0) return std::string("failed");
      char buf[160];
      if (shape.group == Group::kMemory) {
        // Their goal is the bandwidth; a library's time is printed beside it for reference.
        int n = std::snprintf(buf, sizeof(buf), "%9.3f ms = %.2f of bandwidth", secs * 1e3,
                              bound / secs);
        if (anchor < 1e30) {
          std::snprintf(buf + n, sizeof(buf) - n, " = %.2fx %s", anchor / secs, fastest.c_str());
        }
      } else {
        int n = std::snprintf(buf, sizeof(buf), "%9.3f ms = %6.1f GFLOP/s = %.2fx %s", secs * 1e3,
                              flops / secs / 1e9, anchor < 1e30 ? anchor / secs : 0.0,
                              anchor < 1e30 ? fastest.c_str() : "(no library)");
        if (peak_flops > 0 && shape.group != Group::kGemv) {
          // bfloat16 and int8 against the float32 FMAs' peak: the dot products can pass it.
          const bool narrow = shape.group == Group::kBf16 || shape.group == Group::kInt8;
          std::snprintf(buf + n, sizeof(buf) - n, " = %.2f of %s", flops / secs / peak_flops,
                        narrow ? "the float32 peak" : "peak");
        }
      }
      return std::string(buf);
    };
    for (const LibraryTime& lib : libraries) {
      std::printf("  %-17s %s\n", lib.library.c_str(),
                  lib.secs > 0 ? describe(lib.secs).c_str() : lib.note.c_str());
    }
    std::printf("  default           %s\n", describe(def).c_str());
    const double def_ref = shape.group == Group::kMemory ? bound : anchor;
    if (def > 0 && def_ref < 1e30) default_ratio[shape.group].push_back(def_ref / def);
    bool all_not_worse = true;
    bool within_noise = true;  // every slower tuned time within the default's own spread
    for (size_t c = 0; c < budgets.size(); ++c) {
      double worst = 0;
      for (int k = 0; k < seeds; ++k) {
        const double in_job = c < runs[k].secs.size() ? runs[k].secs[c] : 0;
        const std::optional<PrimFunc>& best =
            c < runs[k].best.size() ? runs[k].best[c] : std::nullopt;
        // The best is often the default itself (measured in the first batch): the same
        // kernel, so not worse, whatever two timings of it say.
        const bool is_default = best && def_func && StructuralEqual(*best, *def_func);
        Paired paired;
        if (best && def_func && !is_default) {
          paired = MeasurePaired(*func, *best, *def_func, target, measurer->get());
        }
        const double secs = is_default ? def : paired.tuned;
        std::printf("  tuned %4d seed %lld %s%s\n", budgets[c], static_cast<long long>(seed + k),
                    describe(secs).c_str(),
                    is_default
                        ? " (the default schedule)"
                        : absl::StrFormat(" (default in the same minute %.3f ms, its two "
                                          "timings %.1f%% apart; tuner's own figure %.3f ms)",
                                          paired.default_secs * 1e3, paired.default_spread * 100,
                                          in_job * 1e3)
                              .c_str());
        if (secs <= 0 || (!is_default && secs > paired.default_secs)) {
          all_not_worse = false;
          if (secs <= 0 || secs > paired.default_secs * (1 + paired.default_spread)) {
            within_noise = false;
          }
        }
        worst = secs <= 0 ? 1e30 : std::max(worst, secs);
      }
      if (c == 0 && worst < 1e30) {
        if (shape.group == Group::kGemm && peak_flops > 0) {
          gemm_peak_share.push_back({shape.name, flops / worst / peak_flops});
        }
        double ref = shape.group == Group::kMemory ? bound : anchor;
        if (ref < 1e30) worst_tuned_ratio[shape.group].push_back(ref / worst);
        if (shape.group == Group::kMemory && anchor < 1e30) {
          memory_library_ratio.push_back(anchor / worst);
        }
        for (const LibraryTime& lib : libraries) {
          if (lib.secs > 0) libraries_judged[shape.group].insert(lib.library);
        }
      }
    }
    tuned_not_worse += all_not_worse;
    slower_within_noise += !all_not_worse && within_noise;
    double wall = 0, build = 0;
    int trials = 0, errors = 0;
    for (const Tuned& t : runs) {
      wall += t.wall;
      build += t.build;
      trials += t.trials;
      errors += t.errors;
    }
    total_wall += wall;
    total_build += build;
    std::printf("  tuning wall %.1f s, build %.0f%% of it; %d of %d trials failed\n", wall,
                wall > 0 ? 100 * build / wall : 0, errors, trials);
    std::fflush(stdout);
  }
  std::printf("\nDefault schedules:\n");
  for (const auto& [group, ratios] : default_ratio) {
    std::printf("  %s geomean %.2f %s over %zu shapes\n", GroupName(group), Geomean(ratios),
                group == Group::kMemory ? "of bandwidth" : "x the fastest library", ratios.size());
  }
  if (budgets.empty()) return 0;  // --trials 0: the defaults only
  const int first = budgets[0];
  std::printf("\nGoals at %d trials, worst of %d seed(s):\n", first, seeds);
  std::printf("  tuned >= default on every shape and checkpoint: %d of %d shapes%s\n",
              tuned_not_worse, shapes_run, tuned_not_worse == shapes_run ? " (met)" : " (NOT met)");
  if (tuned_not_worse < shapes_run) {
    std::printf(
        "    of the other %d, %d were slower by no more than the default's own two timings "
        "differed (the minute's noise)\n",
        shapes_run - tuned_not_worse, slower_within_noise);
  }
  struct Goal {
    Group group;
    double target;
    const char* what;
  };
  for (const Goal& g : {Goal{Group::kGemm, 1.0, "x the fastest library (goal: >= 1.0x)"},
                        Goal{Group::kGemv, 0.9, "x the fastest library (goal: >= 0.9x)"},
                        Goal{Group::kConv, 1.0, "x the fastest library (goal: >= 1.0x)"},
                        Goal{Group::kMemory, 0.7, "of bandwidth (goal: >= 0.7)"},
                        Goal{Group::kBf16, 1.0, "x the fastest library (goal: >= 1.0x)"},
                        Goal{Group::kInt8, 1.0, "x the fastest library (goal: >= 1.0x)"}}) {
    const std::vector<double>& r = worst_tuned_ratio[g.group];
    if (r.empty()) {
      if (g.group == Group::kConv)
        std::printf("  conv: no library ran on its shapes: not judged\n");
      continue;
    }
    double mean = Geomean(r);
    std::string against;  // which libraries: a goal met without MLAS is met against fewer
    for (const std::string& lib : libraries_judged[g.group]) {
      against += (against.empty() ? "" : ", ") + lib;
    }
    std::string verdict = g.target <= 0 ? "" : mean >= g.target ? " (met)" : " (NOT met)";
    if (g.group != Group::kMemory) verdict += " [libraries: " + against + "]";
    std::printf("  %s geomean %.2f %s over %zu shapes%s\n", GroupName(g.group), mean, g.what,
                r.size(), verdict.c_str());
  }
  if (!memory_library_ratio.empty()) {
    std::printf(
        "  memory-bound geomean %.2fx onnxruntime over %zu shapes (no goal; its times include "
        "about 5 us per call of Python's session.run)\n",
        Geomean(memory_library_ratio), memory_library_ratio.size());
  }
  if (!gemm_peak_share.empty()) {
    auto lowest =
        std::min_element(gemm_peak_share.begin(), gemm_peak_share.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    std::printf("  GEMM kernels at >= 0.85 of the FMA peak: lowest %.2f (%s)%s\n", lowest->second,
                lowest->first.c_str(), lowest->second >= 0.85 ? " (met)" : " (NOT met)");
  }
  std::printf("  build share of tuning wall time: %.0f%% (goal: <= 50%%)%s\n",
              total_wall > 0 ? 100 * total_build / total_wall : 0,
              total_build <= 0.5 * total_wall ? " (met)" : " (NOT met)");
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  // libgomp (XGBoost's, oneDNN's) read its wait policy before main; see base/openmp_env.h.
  if (absl::Status s = tessera::ReexecWithOpenMpEnvDefaults(argv, tessera::KernelUse::kMeasured);
      !s.ok()) {
    std::fprintf(stderr, "warning: %s\n", std::string(s.message()).c_str());
  }
  CLI::App app{"Tessera on real-model shapes against anchors from the same run", "bench_shapes"};
  std::vector<std::string> shapes;
  std::vector<int> trials = {64, 256};
  int64_t seed = 0;
  int seeds = 3;
  int rounds = 3;
  bool list = false;
  tessera::AnchorOptions anchor_options;
  anchor_options.mlas_script = std::string(TESSERA_SOURCE_DIR) + "/bench/anchors/ort_anchor.py";
  bool no_dnnl = false;
  std::string rule_params_text = "{}";
  app.add_option("--shapes", shapes, "Shapes to run (default: all; see --list)")->delimiter(',');
  app.add_option("--trials", trials,
                 "Trial checkpoints, ascending (0: the defaults only, no tuning)")
      ->delimiter(',');
  app.add_option("--seed", seed, "Seed of the first tuning job");
  app.add_option("--seeds", seeds, "Tuning jobs per shape")->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds,
                 "Alternating rounds of the libraries and the default schedule per shape (each "
                 "figure the median of its rounds)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--list", list, "List the shapes and exit");
  app.add_option("--mlas-python", anchor_options.mlas_python,
                 "Python of the anchors' virtualenv (bench/anchors/setup_venv.sh): runs "
                 "onnxruntime's MLAS as an anchor");
  app.add_option("--mlas-script", anchor_options.mlas_script, "ort_anchor.py to run");
  app.add_flag("--no-dnnl", no_dnnl, "Do not run the oneDNN anchor");
  app.add_option("--rule-params", rule_params_text,
                 "Parameters of default schedule rules by name (JSON), e.g. "
                 "'{\"MultiLevelTiling\": {\"pad_odd_extents\": false}}'");
  CLI11_PARSE(app, argc, argv);
  const nlohmann::json rule_params = nlohmann::json::parse(rule_params_text, nullptr, false);
  if (rule_params.is_discarded() || !rule_params.is_object()) {
    std::fprintf(stderr, "bench_shapes: --rule-params: not a JSON object: %s\n",
                 rule_params_text.c_str());
    return 2;
  }
  if (list) {
    for (const tessera::Shape& s : tessera::AllShapes()) {
      std::printf("%-20s %-14s %s\n", s.name.c_str(), tessera::GroupName(s.group), s.model.c_str());
    }
    return 0;
  }
  std::sort(trials.begin(), trials.end());
  trials.erase(std::remove(trials.begin(), trials.end(), 0), trials.end());
  anchor_options.dnnl = !no_dnnl;
  return tessera::Bench(shapes, trials, seed, seeds, rounds, anchor_options, rule_params);
}
