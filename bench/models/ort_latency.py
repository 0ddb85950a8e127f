"""Median latency of a model under onnxruntime's CPU provider (all graph optimizations on),
in seconds, on the given .npy input: python ort_latency.py MODEL INPUT.npy [REPEAT].
$OMP_NUM_THREADS, when set, is also onnxruntime's intra-op thread count (as for Tessera's
OpenMP kernels), so both run on the same number of threads."""
import os
import sys
import time

import numpy as np
import onnxruntime as ort


def main():
    model, inp = sys.argv[1], np.load(sys.argv[2])
    repeat = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    opts = ort.SessionOptions()
    if os.environ.get("OMP_NUM_THREADS"):
        opts.intra_op_num_threads = int(os.environ["OMP_NUM_THREADS"])
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    feed = {sess.get_inputs()[0].name: inp}
    sess.run(None, feed)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        sess.run(None, feed)
        times.append(time.perf_counter() - t)
    print(f"{sorted(times)[len(times) // 2]:.9f}")


if __name__ == "__main__":
    main()
