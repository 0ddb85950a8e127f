"""The Python package (python/tessera) on the CNN test model compiled by the CTest fixture:
inputs and outputs as onnxruntime names them, outputs against onnxruntime's (the stored
tests/frontend/data/cnn.output.npy, and onnxruntime itself when it is installed), and errors.

usage: python_runtime_test.py COMPILED_DIR INPUT.npy EXPECTED.npy
Exits 77 (CTest's skip) without numpy, after trying $TESSERA_TEST_VENV's Python.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
from test_venv import run_in_test_venv_or_skip  # noqa: E402

try:
    import numpy as np
except ImportError:
    run_in_test_venv_or_skip("numpy is not installed; python3 -m venv build/test-venv && "
                             "build/test-venv/bin/pip install numpy onnxruntime (docs/models.md) "
                             "runs this test")

import tessera  # noqa: E402  (after the numpy check, on purpose)

model_dir, input_path, expected_path = sys.argv[1:4]
x = np.load(input_path)
expected = np.load(expected_path)

sess = tessera.InferenceSession(model_dir, num_threads=2)
[inp] = sess.get_inputs()
[out] = sess.get_outputs()
assert inp.name == "x" and inp.type == "tensor(float)" and inp.shape == list(x.shape), inp
assert out.shape == list(expected.shape), out

[y] = sess.run(None, {"x": x})
np.testing.assert_allclose(y, expected, rtol=1e-3, atol=1e-4)
assert np.array_equal(sess.run([out.name], {"x": x})[0], y)
assert np.array_equal(tessera.load(model_dir).run({"x": x})[out.name], y)

try:
    import onnxruntime as ort
except ImportError:
    print("onnxruntime not installed: compared with its stored outputs only")
else:
    model_onnx = os.path.join(model_dir, "model.onnx")
    ref = ort.InferenceSession(model_onnx, providers=["CPUExecutionProvider"])
    assert [i.name for i in ref.get_inputs()] == [inp.name]
    assert [o.name for o in ref.get_outputs()] == [out.name]
    [want] = ref.run(None, {"x": x})
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-4)
    print("matches onnxruntime %s: max abs error %g" % (ort.__version__, np.abs(y - want).max()))

for feed, words in [({"nope": x, "x": x}, "no model input named nope"),
                    ({}, "input x is missing"),
                    ({"x": x[:, :1]}, "input x: shape")]:
    try:
        sess.run(None, feed)
    except ValueError as e:
        assert words in str(e), (words, e)
    else:
        raise AssertionError("ran with %s" % words)
try:
    tessera.InferenceSession("/nonexistent/model")
except tessera.TesseraError as e:
    assert e.code == "NOT_FOUND" and "/nonexistent/model/plan.json" in str(e), e
else:
    raise AssertionError("loaded a missing directory")
print("PASS")
