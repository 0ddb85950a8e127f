#!/usr/bin/env python3
"""TVM MetaSchedule on bench_shapes' GEMM shapes: runs the anchors' TVM script (kept outside the
repository, see docs/tuning.md "Side by side with TVM") with one more workload name,
gmm<M>x<N>x<K> (C[M,N] = A[M,K] B[K,N], fp32), next to its matmul<N> and
conv2d_nhwc_56x56x64_k3 (= bench_shapes' resnet_c2d_56). Every other argument is the script's.

    /tmp/tvm-venv/bin/python bench/anchors/tvm_shapes.py --tvm-script PATH/tvm_ms_cpu_027.py \\
        --workloads gmm128x768x768,conv2d_nhwc_56x56x64_k3 --trials 64 --lean-builder \\
        --work-root /tmp/tvm-runs --out /tmp/tvm.jsonl
"""
import importlib.util
import re
import sys

import numpy as np


def load_script(path):
    spec = importlib.util.spec_from_file_location("tvm_ms_anchor", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wl_gmm(m, n, k):
    from tvm import te  # pylint: disable=import-outside-toplevel

    A = te.placeholder((m, k), name="A", dtype="float32")
    B = te.placeholder((k, n), name="B", dtype="float32")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    func = te.create_prim_func([A, B, C])

    def make_args(rng):
        a = rng.uniform(-1, 1, (m, k)).astype("float32")
        b = rng.uniform(-1, 1, (k, n)).astype("float32")
        return [a, b, np.zeros((m, n), "float32")], a @ b

    return func, 2.0 * m * n * k, make_args


def main():
    argv = sys.argv[1:]
    if "--tvm-script" not in argv or argv.index("--tvm-script") + 1 >= len(argv):
        sys.exit("tvm_shapes.py: --tvm-script PATH (tvm_ms_cpu_027.py) is required")
    i = argv.index("--tvm-script")
    script = load_script(argv[i + 1])
    del argv[i : i + 2]
    original = script.workload

    def workload(name):
        m = re.fullmatch(r"gmm(\d+)x(\d+)x(\d+)", name)
        if m:
            return wl_gmm(*(int(g) for g in m.groups()))
        return original(name)

    script.workload = workload  # the script looks its workloads up through this global
    sys.argv = ["tvm_shapes.py"] + argv  # the script's argparse reads sys.argv
    return script.main()


if __name__ == "__main__":
    sys.exit(main())
