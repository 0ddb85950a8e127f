#!/usr/bin/env python3
"""onnxruntime's MLAS as an anchor for bench_shapes (issue #13): one-node ONNX models timed
with onnxruntime's CPU provider, 2 intra-op threads, in the anchors' own virtualenv
(bench/anchors/setup_venv.sh). Never used by the C++ build or the tests.

    ort_anchor.py --shape bert_attn_out:GMM:M=128,N=768,K=768 \
                  --shape resnet_c2d_56:C2D:N=1,H=56,W=56,CI=64,CO=64,K=3,stride=1,padding=1

Workloads, as bench_shapes and frontend/workloads define them (fp32):
  GMM M,N,K[,B=1]       MatMul  A[M,K] x B[K,N]
  LINEAR M,N,K          MatMul  X[M,K] x W[K,N]
  DENSE_BIAS_RELU M,N,K Gemm(X[M,K], W[N,K], bias, transB=1) + Relu (onnxruntime fuses them)
  GEMV M,K              Gemm(x[1,K], A[M,K], transB=1)
  C2D N,H,W,CI,CO,K,stride,padding     Conv, NCHW (the layout ONNX Conv has; with all graph
                                       optimisations onnxruntime reorders to its NCHWc kernels)
  DEP N,H,W,C,K,stride,padding         Conv with group=C (depthwise)
  MAX_POOL N,H,W,C,K,stride,padding    MaxPool, NCHW
  SFM M,N                Softmax over the last axis
  LAYER_NORM M,N         LayerNormalization over the last axis, gamma and beta, eps 1e-5
  RMS_NORM M,N           RMSNormalization (opset 23) over the last axis, gamma, eps 1e-5
Weights (B, W, bias, conv kernels) are constant initializers, as in a model, so MLAS may pack
them once at session creation; the activations are inputs. Only the operator runs in the
timing loop.

Prints one JSON line per shape: name, workload, params, seconds (median of --repeat repeats,
each a loop of >= --min-repeat-ms), min_seconds, gflops, max_abs_err against numpy, the
versions, and run_overhead_seconds (what session.run costs around a one-float Identity: the
seconds include it). A workload it has no model for gives a line with "error" instead of seconds.
"""
import argparse
import json
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def parse_shape(text):
    """name:WORKLOAD:K=V,K=V -> (name, workload, {K: int})."""
    parts = text.split(":")
    if len(parts) != 3:
        raise SystemExit(f"--shape {text!r}: expected NAME:WORKLOAD:K=V,K=V")
    params = {}
    for item in parts[2].split(","):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--shape {text!r}: parameter {item!r} is not K=V")
        params[key] = int(value)
    return parts[0], parts[1], params


def conv_out(size, k, stride, pad):
    return (size + 2 * pad - k) // stride + 1


def conv_nchw_reference(x, w, stride, pad, groups):
    """Direct NCHW convolution in numpy (one matmul per kernel tap)."""
    n, ci, h, wd = x.shape
    co, cig, k, _ = w.shape
    oh, ow = conv_out(h, k, stride, pad), conv_out(wd, k, stride, pad)
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))).astype(np.float64)
    out = np.zeros((n, co, oh, ow))
    cog = co // groups
    for g in range(groups):
        xs = xp[:, g * cig : (g + 1) * cig]
        ws = w[g * cog : (g + 1) * cog].astype(np.float64)
        for kh in range(k):
            for kw in range(k):
                patch = xs[:, :, kh : kh + stride * oh : stride, kw : kw + stride * ow : stride]
                out[:, g * cog : (g + 1) * cog] += np.einsum("nchw,oc->nohw", patch, ws[:, :, kh, kw])
    return out


def build(workload, p, rng):
    """(model, feeds, flops, reference output) for one workload, or a string saying why not."""
    f32 = lambda shape: rng.uniform(-1, 1, shape).astype(np.float32)  # noqa: E731
    opset = 17
    init = numpy_helper.from_array
    vi = helper.make_tensor_value_info
    if workload in ("GMM", "LINEAR"):  # LINEAR: X W, the same MatMul with W an initializer
        if p.get("B", 1) != 1:
            return "GMM with batch B > 1 is not modelled"
        m, n, k = p["M"], p["N"], p["K"]
        a, b = f32((m, k)), f32((k, n))
        nodes = [helper.make_node("MatMul", ["A", "Bw"], ["C"])]
        inputs, inits, out = [vi("A", TensorProto.FLOAT, [m, k])], [init(b, "Bw")], [m, n]
        feeds, flops, ref = {"A": a}, 2.0 * m * n * k, a.astype(np.float64) @ b
    elif workload == "DENSE_BIAS_RELU":
        m, n, k = p["M"], p["N"], p["K"]
        x, w, bias = f32((m, k)), f32((n, k)), f32((n,))
        nodes = [
            helper.make_node("Gemm", ["X", "W", "bias"], ["T"], transB=1),
            helper.make_node("Relu", ["T"], ["C"]),
        ]
        inputs, inits, out = [vi("X", TensorProto.FLOAT, [m, k])], [init(w, "W"), init(bias, "bias")], [m, n]
        feeds, flops = {"X": x}, 2.0 * m * n * k
        ref = np.maximum(x.astype(np.float64) @ w.T + bias, 0)
    elif workload == "GEMV":
        # As x[1,K] A^T: onnxruntime runs MatMul(A[M,K], x[K]) 7x slower here than this Gemm.
        m, k = p["M"], p["K"]
        a, x = f32((m, k)), f32((1, k))
        nodes = [helper.make_node("Gemm", ["x", "Aw"], ["C"], transB=1)]
        inputs, inits, out = [vi("x", TensorProto.FLOAT, [1, k])], [init(a, "Aw")], [1, m]
        feeds, flops, ref = {"x": x}, 2.0 * m * k, x.astype(np.float64) @ a.T
    elif workload in ("C2D", "DEP"):
        n, h, wd, k = p["N"], p["H"], p["W"], p["K"]
        stride, pad = p.get("stride", 1), p.get("padding", 0)
        if p.get("dilation", 1) != 1:
            return "dilated convolutions are not modelled"
        if workload == "C2D":
            ci, co, groups = p["CI"], p["CO"], 1
        else:
            ci = co = groups = p["C"]
        x, w = f32((n, ci, h, wd)), f32((co, ci // groups, k, k))
        oh, ow = conv_out(h, k, stride, pad), conv_out(wd, k, stride, pad)
        nodes = [
            helper.make_node("Conv", ["X", "Wc"], ["C"], kernel_shape=[k, k], strides=[stride, stride],
                             pads=[pad, pad, pad, pad], group=groups)
        ]
        inputs, inits, out = [vi("X", TensorProto.FLOAT, [n, ci, h, wd])], [init(w, "Wc")], [n, co, oh, ow]
        feeds = {"X": x}
        flops = 2.0 * n * oh * ow * co * (ci // groups) * k * k
        ref = conv_nchw_reference(x, w, stride, pad, groups)
    elif workload == "MAX_POOL":
        n, h, wd, c, k = p["N"], p["H"], p["W"], p["C"], p["K"]
        stride, pad = p.get("stride", 1), p.get("padding", 0)
        x = f32((n, c, h, wd))
        oh, ow = conv_out(h, k, stride, pad), conv_out(wd, k, stride, pad)
        nodes = [
            helper.make_node("MaxPool", ["X"], ["C"], kernel_shape=[k, k], strides=[stride, stride],
                             pads=[pad, pad, pad, pad])
        ]
        inputs, inits, out = [vi("X", TensorProto.FLOAT, [n, c, h, wd])], [], [n, c, oh, ow]
        feeds, flops = {"X": x}, float(n * c * oh * ow * k * k)
        padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)),
                        constant_values=-np.inf)
        ref = np.full((n, c, oh, ow), -np.inf)
        for dy in range(k):
            for dx in range(k):
                ref = np.maximum(ref, padded[:, :, dy:dy + stride * oh:stride, dx:dx + stride * ow:stride])
    elif workload in ("SFM", "LAYER_NORM", "RMS_NORM"):
        m, n = p["M"], p["N"]
        a = f32((m, n))
        a64 = a.astype(np.float64)
        inputs, out, feeds = [vi("A", TensorProto.FLOAT, [m, n])], [m, n], {"A": a}
        if workload == "SFM":
            nodes, inits = [helper.make_node("Softmax", ["A"], ["C"], axis=-1)], []
            e = np.exp(a64 - a64.max(axis=1, keepdims=True))
            ref = e / e.sum(axis=1, keepdims=True)
            flops = 4.0 * m * n  # as Tessera counts it: max, exp, sum, divide
        else:
            gamma, beta = f32((n,)), f32((n,))
            if workload == "LAYER_NORM":
                nodes = [helper.make_node("LayerNormalization", ["A", "gamma", "beta"], ["C"],
                                          axis=-1, epsilon=1e-5)]
                inits = [init(gamma, "gamma"), init(beta, "beta")]
                centred = a64 - a64.mean(axis=1, keepdims=True)
                ref = centred / np.sqrt((centred**2).mean(axis=1, keepdims=True) + 1e-5) * gamma + beta
            else:  # RMSNormalization is ONNX opset 23
                nodes = [helper.make_node("RMSNormalization", ["A", "gamma"], ["C"], axis=-1,
                                          epsilon=1e-5)]
                inits = [init(gamma, "gamma")]
                ref = a64 / np.sqrt((a64**2).mean(axis=1, keepdims=True) + 1e-5) * gamma
                opset = 23
            flops = 5.0 * m * n
    else:
        return f"no onnxruntime model for workload {workload}"
    graph = helper.make_graph(nodes, "anchor", inputs, [vi("C", TensorProto.FLOAT, out)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model, feeds, flops, ref


def median_seconds(run, repeat, min_repeat_ms):
    for _ in range(3):  # warm-up: thread pool, packed weights, pages
        run()
    samples = []
    for _ in range(repeat):
        number, start = 0, time.perf_counter()
        while True:
            run()
            number += 1
            elapsed = time.perf_counter() - start
            if elapsed * 1e3 >= min_repeat_ms:
                break
        samples.append(elapsed / number)
    return float(np.median(samples)), float(np.min(samples))


def session(model, threads):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def run_overhead_seconds(args):
    """What one session.run costs around its kernel: a one-float Identity, timed like the shapes
    (about 5 us here; it matters beside the norms' 6-us kernels)."""
    vi = helper.make_tensor_value_info
    graph = helper.make_graph([helper.make_node("Identity", ["A"], ["C"])], "overhead",
                              [vi("A", TensorProto.FLOAT, [1])], [vi("C", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    sess, feeds = session(model, args.threads), {"A": np.zeros(1, np.float32)}
    return median_seconds(lambda: sess.run(None, feeds), args.repeat, args.min_repeat_ms)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--shape", action="append", default=[], help="NAME:WORKLOAD:K=V,... (repeatable)")
    ap.add_argument("--threads", type=int, default=2, help="intra-op threads")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--min-repeat-ms", type=float, default=200)
    args = ap.parse_args()
    if not args.shape:
        ap.error("give at least one --shape")
    rng = np.random.default_rng(0)
    overhead = run_overhead_seconds(args)
    for text in args.shape:
        name, workload, params = parse_shape(text)
        rec = {"anchor": "mlas", "name": name, "workload": workload, "params": params,
               "onnxruntime": ort.__version__, "threads": args.threads,
               "run_overhead_seconds": overhead}
        built = build(workload, params, rng)
        if isinstance(built, str):
            rec["error"] = built
            print(json.dumps(rec), flush=True)
            continue
        model, feeds, flops, ref = built
        sess = session(model, args.threads)
        out = sess.run(None, feeds)[0]
        err = float(np.max(np.abs(out.astype(np.float64) - ref)))
        secs, best = median_seconds(lambda: sess.run(None, feeds), args.repeat, args.min_repeat_ms)
        rec.update({"seconds": secs, "min_seconds": best, "gflops": flops / secs / 1e9,
                    "max_abs_err": err})
        print(json.dumps(rec), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
