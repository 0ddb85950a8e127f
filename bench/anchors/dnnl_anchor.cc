#include "bench/anchors/dnnl_anchor.h"

#include <omp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>

#include "absl/strings/str_cat.h"

namespace tessera {
namespace anchors {
namespace {

int64_t Param(const ShapeParams& p, const std::string& key, int64_t fallback) {
  auto it = p.find(key);
  return it == p.end() ? fallback : it->second;
}

// Element counts of the arguments, in MakeWorkload's order (output last).
absl::StatusOr<std::vector<int64_t>> ArgSizes(const std::string& workload, const ShapeParams& p) {
  try {
    if (workload == "GMM" || workload == "LINEAR") {
      const int64_t m = p.at("M"), n = p.at("N"), k = p.at("K");
      return std::vector<int64_t>{m * k, k * n, m * n};
    }
    if (workload == "DENSE_BIAS_RELU") {
      const int64_t m = p.at("M"), n = p.at("N"), k = p.at("K");
      return std::vector<int64_t>{m * k, n * k, n, m * n};
    }
    if (workload == "GEMV")
      return std::vector<int64_t>{p.at("M") * p.at("K"), p.at("K"), p.at("M")};
    if (workload == "C2D" || workload == "DEP") {
      const int64_t n = p.at("N"), h = p.at("H"), w = p.at("W"), k = p.at("K");
      const int64_t stride = Param(p, "stride", 1), pad = Param(p, "padding", 0);
      const int64_t oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
      if (workload == "C2D") {
        const int64_t ci = p.at("CI"), co = p.at("CO");
        return std::vector<int64_t>{n * h * w * ci, k * k * ci * co, n * oh * ow * co};
      }
      const int64_t c = p.at("C");
      return std::vector<int64_t>{n * h * w * c, k * k * c, n * oh * ow * c};
    }
  } catch (const std::out_of_range&) {
    return absl::InvalidArgumentError(
        absl::StrCat("oneDNN anchor: ", workload, ": a shape parameter is missing"));
  }
  return absl::UnimplementedError(absl::StrCat("oneDNN anchor: no oneDNN call for ", workload));
}

// A callable that runs the primitive of `pd` on args[0] (source) into args[2] (destination)
// with the weights args[1] (`user_w_md`) reordered once into the layout and type the primitive
// chose, and the source (`user_src_md`) once into its type where it differs (bfloat16).
template <typename Primitive>
std::function<void()> WithWeightsReordered(const dnnl::engine& engine,
                                           const typename Primitive::primitive_desc& pd,
                                           const dnnl::memory::desc& user_src_md,
                                           const dnnl::memory::desc& user_w_md,
                                           const dnnl::memory::desc& dst_md,
                                           const std::vector<float*>& args) {
  using dnnl::memory;
  dnnl::stream stream(engine);
  auto reordered = [&](memory user, const memory::desc& wanted) {
    if (wanted == user.get_desc()) return user;
    memory converted(wanted, engine);
    dnnl::reorder(user, converted).execute(stream, user, converted);
    stream.wait();
    return converted;
  };
  memory w_mem = reordered(memory(user_w_md, engine, args[1]), pd.weights_desc());
  memory src = reordered(memory(user_src_md, engine, args[0]), pd.src_desc());
  memory dst(dst_md, engine, args[2]);
  Primitive primitive(pd);
  return [=]() mutable {
    primitive.execute(stream,
                      {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w_mem}, {DNNL_ARG_DST, dst}});
    stream.wait();
  };
}

// oneDNN's types for a workload's `dtype`: its inputs, and its output (what it sums in).
dnnl::memory::data_type InputType(const std::string& dtype) {
  if (dtype == "bfloat16") return dnnl::memory::data_type::bf16;
  if (dtype == "int8") return dnnl::memory::data_type::s8;
  return dnnl::memory::data_type::f32;
}
dnnl::memory::data_type OutputType(const std::string& dtype) {
  return dtype == "int8" ? dnnl::memory::data_type::s32 : dnnl::memory::data_type::f32;
}

// A convolution on NHWC activations with Tessera's weights (HWIO, or [K,K,C] depthwise).
// The primitive picks its weight layout ("any"); the weights are reordered into it here, once.
// In bfloat16 or int8 (InputType), input and weights converted once; the output float32 or int32.
std::function<void()> PrepareConv(const std::string& workload, const ShapeParams& p,
                                  const std::vector<float*>& args, const std::string& dtype) {
  using dnnl::memory;
  using tag = memory::format_tag;
  const bool depthwise = workload == "DEP";
  const int64_t n = p.at("N"), h = p.at("H"), w = p.at("W"), k = p.at("K");
  const int64_t stride = Param(p, "stride", 1), pad = Param(p, "padding", 0);
  const int64_t ci = depthwise ? p.at("C") : p.at("CI"), co = depthwise ? p.at("C") : p.at("CO");
  const int64_t oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;

  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const memory::data_type in = InputType(dtype);
  memory::desc user_src_md({n, ci, h, w}, memory::data_type::f32, tag::nhwc);
  memory::desc src_md({n, ci, h, w}, in, tag::nhwc);
  memory::desc dst_md({n, co, oh, ow}, OutputType(dtype), tag::nhwc);
  // Depthwise: groups = C with one input and one output channel each; [K,K,C] is hwigo.
  memory::desc user_w_md = depthwise
                               ? memory::desc({co, 1, 1, k, k}, memory::data_type::f32, tag::hwigo)
                               : memory::desc({co, ci, k, k}, memory::data_type::f32, tag::hwio);
  memory::desc any_w_md(user_w_md.dims(), in, tag::any);
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                       dnnl::algorithm::convolution_auto, src_md, any_w_md, dst_md,
                                       {stride, stride}, {pad, pad}, {pad, pad});
  dnnl::convolution_forward::primitive_desc pd(desc, engine);
  return WithWeightsReordered<dnnl::convolution_forward>(engine, pd, user_src_md, user_w_md, dst_md,
                                                         args);
}

// LINEAR, Y = X W with a constant W[K, N]: oneDNN's inner product (its layer with a weight),
// which picks its weight layout ("any") that W is reordered into once. Inner-product weights
// are [N, K] logically; W[K, N] is that matrix stored as `ba`. In bfloat16 or int8, X and W
// converted once from the float32 arguments (as such a model holds them), Y float32 or int32.
std::function<void()> PrepareLinear(const ShapeParams& p, const std::vector<float*>& args,
                                    const std::string& dtype) {
  using dnnl::memory;
  using tag = memory::format_tag;
  const int64_t m = p.at("M"), n = p.at("N"), k = p.at("K");
  const memory::data_type in = InputType(dtype);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  memory::desc user_src_md({m, k}, memory::data_type::f32, tag::ab);
  memory::desc src_md({m, k}, in, tag::ab);
  memory::desc dst_md({m, n}, OutputType(dtype), tag::ab);
  memory::desc user_w_md({n, k}, memory::data_type::f32, tag::ba);
  memory::desc any_w_md({n, k}, in, tag::any);
  dnnl::inner_product_forward::desc desc(dnnl::prop_kind::forward_inference, src_md, any_w_md,
                                         dst_md);
  dnnl::inner_product_forward::primitive_desc pd(desc, engine);
  return WithWeightsReordered<dnnl::inner_product_forward>(engine, pd, user_src_md, user_w_md,
                                                           dst_md, args);
}

// A callable that runs `workload` on `args` (sizes as ArgSizes says). dnnl_sgemm's status is
// not looked at: its arguments are valid by construction, and the test compares the results.
absl::StatusOr<std::function<void()>> Prepare(const std::string& workload, const ShapeParams& p,
                                              const std::vector<float*>& args,
                                              const std::string& dtype) {
  if (!DnnlSupports(workload, dtype)) {
    return absl::UnimplementedError(
        absl::StrCat("oneDNN anchor: no oneDNN call for ", workload, " in ", dtype));
  }
  absl::StatusOr<std::vector<int64_t>> sizes = ArgSizes(workload, p);
  if (!sizes.ok()) return sizes.status();
  if (args.size() != sizes->size()) {
    return absl::InvalidArgumentError(absl::StrCat("oneDNN anchor: ", workload, " takes ",
                                                   sizes->size(), " arguments, got ", args.size()));
  }
  if (workload == "GMM") {
    if (Param(p, "B", 1) != 1) {
      return absl::UnimplementedError("oneDNN anchor: GMM with batch B > 1 is not modelled");
    }
    const int64_t m = p.at("M"), n = p.at("N"), k = p.at("K");
    if (dtype == "int8") {  // A and B converted once; C's int32s in the output's storage
      auto a = std::make_shared<std::vector<int8_t>>(args[0], args[0] + m * k);
      auto b = std::make_shared<std::vector<int8_t>>(args[1], args[1] + k * n);
      auto* c = reinterpret_cast<int32_t*>(args[2]);
      const int32_t no_offset = 0;
      return std::function<void()>([=] {
        (void)dnnl_gemm_s8s8s32('N', 'N', 'F', m, n, k, 1.0f, a->data(), k, 0, b->data(), n, 0,
                                0.0f, c, n, &no_offset);
      });
    }
    return std::function<void()>([=] {
      (void)dnnl_sgemm('N', 'N', m, n, k, 1.0f, args[0], k, args[1], n, 0.0f, args[2], n);
    });
  }
  if (workload == "DENSE_BIAS_RELU") {  // relu(X W^T + bias): sgemm, then one pass for the rest
    const int64_t m = p.at("M"), n = p.at("N"), k = p.at("K");
    return std::function<void()>([=] {
      (void)dnnl_sgemm('N', 'T', m, n, k, 1.0f, args[0], k, args[1], k, 0.0f, args[3], n);
      float* y = args[3];
      const float* bias = args[2];
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) y[i * n + j] = std::max(y[i * n + j] + bias[j], 0.0f);
      }
    });
  }
  if (workload == "GEMV") {  // y = A x as an M x 1 product
    const int64_t m = p.at("M"), k = p.at("K");
    return std::function<void()>([=] {
      (void)dnnl_sgemm('N', 'N', m, 1, k, 1.0f, args[0], k, args[1], 1, 0.0f, args[2], 1);
    });
  }
  try {
    if (workload == "LINEAR") return PrepareLinear(p, args, dtype);
    return PrepareConv(workload, p, args, dtype);
  } catch (const dnnl::error& e) {
    return absl::InternalError(absl::StrCat("oneDNN anchor: ", workload, ": ", e.what()));
  }
}

double MedianSecondsPerCall(const std::function<void()>& fn) {
  for (int i = 0; i < 3; ++i) fn();  // warm-up: threads, pages, caches
  std::vector<double> samples;
  for (int repeat = 0; repeat < 5; ++repeat) {
    int number = 0;
    const auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    while (elapsed < 0.2) {
      fn();
      ++number;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    samples.push_back(elapsed / number);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace

bool DnnlSupports(const std::string& workload, const std::string& dtype) {
  if (dtype == "bfloat16") return workload == "LINEAR" || workload == "C2D";
  if (dtype == "int8") return workload == "GMM" || workload == "LINEAR" || workload == "C2D";
  return dtype == "float32" &&
         (workload == "GMM" || workload == "LINEAR" || workload == "DENSE_BIAS_RELU" ||
          workload == "GEMV" || workload == "C2D" || workload == "DEP");
}

absl::Status DnnlRun(const std::string& workload, const ShapeParams& params,
                     const std::vector<float*>& args, const std::string& dtype) {
  absl::StatusOr<std::function<void()>> fn = Prepare(workload, params, args, dtype);
  if (!fn.ok()) return fn.status();
  try {
    (*fn)();
  } catch (const dnnl::error& e) {
    return absl::InternalError(absl::StrCat("oneDNN anchor: ", workload, ": ", e.what()));
  }
  return absl::OkStatus();
}

absl::StatusOr<double> DnnlSeconds(const std::string& workload, const ShapeParams& params,
                                   int threads, const std::string& dtype) {
  if (!DnnlSupports(workload, dtype)) {
    return absl::UnimplementedError(
        absl::StrCat("oneDNN anchor: no oneDNN call for ", workload, " in ", dtype));
  }
  absl::StatusOr<std::vector<int64_t>> sizes = ArgSizes(workload, params);
  if (!sizes.ok()) return sizes.status();
  int fds[2];
  if (pipe(fds) != 0) return absl::InternalError("oneDNN anchor: pipe() failed");
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    omp_set_num_threads(threads);
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<std::vector<float>> data;
    std::vector<float*> args;
    for (int64_t n : *sizes) {
      data.emplace_back(n);
      for (float& x : data.back()) x = uniform(rng);
    }
    for (std::vector<float>& d : data) args.push_back(d.data());
    double secs = -1;
    absl::StatusOr<std::function<void()>> fn = Prepare(workload, params, args, dtype);
    if (fn.ok()) {
      try {
        secs = MedianSecondsPerCall(*fn);
      } catch (const dnnl::error&) {
        secs = -1;
      }
    }
    const ssize_t written = write(fds[1], &secs, sizeof(secs));
    _exit(written == sizeof(secs) ? 0 : 1);
  }
  close(fds[1]);
  double secs = -1;
  const bool got = child > 0 && read(fds[0], &secs, sizeof(secs)) == sizeof(secs);
  close(fds[0]);
  if (child > 0) waitpid(child, nullptr, 0);
  if (!got || secs <= 0) {
    return absl::InternalError(
        absl::StrCat("oneDNN anchor: ", workload, " did not run in the child process"));
  }
  return secs;
}

}  // namespace anchors
}  // namespace tessera
