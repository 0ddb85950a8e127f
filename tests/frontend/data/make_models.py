"""Generates the small ONNX models of the frontend tests and their reference outputs.

Run from the repository root in a virtualenv with numpy, onnx and onnxruntime from PyPI
(never part of the build):

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install onnx onnxruntime numpy
    /tmp/venv/bin/python tests/frontend/data/make_models.py [NAME...]

For each model NAME it writes NAME.onnx, NAME.input.npy (seeded random input) and
NAME.output.npy (onnxruntime's output on that input, CPU provider, all graph optimizations
off). The weights are seeded random numbers. Models:

  cnn       conv-bn-relu, max pool, two identical conv-bn-relu blocks, global average pool,
            flatten, gemm (opset 13)
  resblock  a ResNet basic block of 32 -> 64 channels on 14 x 14 with a 1x1 projection: wide
            enough that its 3x3 convolutions compile as Winograd GEMMs (opset 13)
  encoder   a transformer encoder layer: multi-head self-attention, residual, LayerNormalization,
            GELU MLP (Erf form, as PyTorch exports it), residual, LayerNormalization (opset 17)
  decoder   a decoder block: RMS norm (Pow/ReduceMean/Sqrt/Div), causal self-attention with an
            additive mask, residual, RMS norm, SwiGLU MLP, residual (opset 13)
  ops       the other operators on one small graph: grouped strided conv, average pool with
            padding, Concat, Slice, Split, Gather, Expand, Where, comparisons, Clip, LeakyRelu,
            Tanh, Exp, Sqrt, Pow, Cast, Squeeze/Unsqueeze, Reduce* with axes as an input, shape
            arithmetic (Shape/Gather/Concat/Reshape), Gemm with alpha/beta (opset 18)
  upsample  ConvTranspose: strided with pads, output_padding and bias, then grouped and dilated
            (opset 13)
  ops2      the remaining elementwise and reduction operators: Gelu (both forms, opset 20), Sub,
            Neg, Abs, Reciprocal, Log, Max, Min, Equal, Less, ReduceMin, ReduceMean,
            ReduceSumSquare, LogSoftmax, GlobalMaxPool, Range, ConstantOfShape, Identity,
            Dropout, Flatten; Pad (constant, with negative pads cropping) and Tile
  resize    Resize (opset 13): nearest with each nearest_mode and coordinate mode, linear with
            half_pixel, align_corners, asymmetric and pytorch_half_pixel, by scales (integer and
            not) and by sizes, up and down; the results flattened and concatenated
  resize11  Resize as opset-11 exporters write it: an empty roi (initializer and Constant), an
            empty scales beside sizes
  resize19  Resize (opset 19) with `axes`, half_pixel_symmetric, explicit antialias=0 and
            keep_aspect_ratio_policy=stretch
  unet      a U-Net-style block: conv-relu, max pool, conv-relu, Resize x2 (linear,
            pytorch_half_pixel), Concat with the skip connection, conv (opset 13)
  layernorm LayerNorm written out as opset-14 exports write it (ReduceMean, Sub, Pow, ReduceMean,
            Add, Sqrt, Div, Mul, Add), then the same with Pow by 3 (not a LayerNorm) (opset 14)
  mlp16     float16 throughout: MatMul + bias + Relu, MatMul, Softmax (opset 13)
  dynbatch  relu(X @ W) with X [batch, 8]: a dynamic dimension, for --input-shape (no .npy files)
  gram      Y = relu(X @ X^T) for X [512, 512]: 2.7e8 FLOP without weights, so that
            `tessera exec --check` takes its naive-build reference (no .npy files: the test
            feeds random inputs)
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []
        self.count = 0

    def name(self, base):
        self.count += 1
        return f"{base}_{self.count}"

    def weight(self, shape, scale=None, name="w"):
        scale = scale if scale is not None else 1.0 / np.sqrt(shape[0] if len(shape) else 1)
        arr = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        return self.const(arr, name)

    def const(self, arr, name="c"):
        n = self.name(name)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), n))
        return n

    def op(self, op_type, inputs, **attrs):
        out = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def model(self, inputs, outputs, opset):
        graph = helper.make_graph(self.nodes, "g", inputs, outputs, self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m


def conv_bn_relu(b, x, cin, cout):
    w = b.weight([cout, cin, 3, 3], scale=1.0 / np.sqrt(cin * 9))
    bias = b.weight([cout], scale=0.1)
    y = b.op("Conv", [x, w, bias], pads=[1, 1, 1, 1], kernel_shape=[3, 3])
    scale = b.const((1 + 0.1 * b.rng.standard_normal(cout)).astype(np.float32))
    shift = b.const((0.1 * b.rng.standard_normal(cout)).astype(np.float32))
    mean = b.const((0.1 * b.rng.standard_normal(cout)).astype(np.float32))
    var = b.const((1 + 0.1 * b.rng.random(cout)).astype(np.float32))
    y = b.op("BatchNormalization", [y, scale, shift, mean, var], epsilon=1e-5)
    return b.op("Relu", [y])


def make_resblock():
    """A ResNet basic block wide enough for Winograd (32 -> 64 channels on 14 x 14, so the last
    4 x 4 tiles are cropped): conv-bn-relu, conv-bn, a 1x1 projection of the input added, relu."""
    b = Builder(21)
    y = conv_bn_relu(b, "x", 32, 64)
    w = b.weight([64, 64, 3, 3], scale=1.0 / np.sqrt(64 * 9))
    y = b.op("Conv", [y, w], pads=[1, 1, 1, 1], kernel_shape=[3, 3])
    skip = b.op("Conv", ["x", b.weight([64, 32, 1, 1], scale=1.0 / np.sqrt(32))], kernel_shape=[1, 1])
    y = b.op("Add", [y, skip])
    y = b.op("Relu", [y])
    b.nodes[-1].output[0] = "y"
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 14, 14])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 14, 14])], 13)


def make_cnn():
    b = Builder(1)
    y = conv_bn_relu(b, "x", 3, 8)
    y = b.op("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2])
    y = conv_bn_relu(b, y, 8, 8)
    y = conv_bn_relu(b, y, 8, 8)
    y = b.op("GlobalAveragePool", [y])
    y = b.op("Flatten", [y], axis=1)
    y = b.op("Gemm", [y, b.weight([10, 8]), b.weight([10], 0.1)], transB=1)
    b.nodes[-1].output[0] = "y"
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], 13)


def linear(b, x, cin, cout):
    return b.op("Add", [b.op("MatMul", [x, b.weight([cin, cout])]), b.weight([cout], 0.1)])


def attention(b, x, seq, hidden, heads, mask=None):
    d = hidden // heads
    split = b.const(np.array([1, seq, heads, d], dtype=np.int64), "shape")
    merge = b.const(np.array([1, seq, hidden], dtype=np.int64), "shape")
    q = b.op("Transpose", [b.op("Reshape", [linear(b, x, hidden, hidden), split])], perm=[0, 2, 1, 3])
    k = b.op("Transpose", [b.op("Reshape", [linear(b, x, hidden, hidden), split])], perm=[0, 2, 3, 1])
    v = b.op("Transpose", [b.op("Reshape", [linear(b, x, hidden, hidden), split])], perm=[0, 2, 1, 3])
    s = b.op("Div", [b.op("MatMul", [q, k]), b.const(np.array(np.sqrt(d), dtype=np.float32))])
    if mask is not None:
        s = b.op("Add", [s, mask])
    p = b.op("Softmax", [s], axis=-1)
    o = b.op("Transpose", [b.op("MatMul", [p, v])], perm=[0, 2, 1, 3])
    o = b.op("Reshape", [o, merge])
    return linear(b, o, hidden, hidden)


def make_encoder(seq=16, hidden=32, heads=2, ffn=64):
    b = Builder(2)
    x = "x"
    h = b.op("Add", [x, attention(b, x, seq, hidden, heads)])
    h = b.op("LayerNormalization", [h, b.weight([hidden], 0.1), b.weight([hidden], 0.1)], axis=-1,
             epsilon=1e-5)
    m = linear(b, h, hidden, ffn)
    # GELU as PyTorch exports it: 0.5 * x * (1 + erf(x / sqrt(2))).
    g = b.op("Erf", [b.op("Div", [m, b.const(np.array(np.sqrt(2.0), dtype=np.float32))])])
    g = b.op("Mul", [b.op("Mul", [m, b.op("Add", [g, b.const(np.array(1.0, dtype=np.float32))])]),
                     b.const(np.array(0.5, dtype=np.float32))])
    m = linear(b, g, ffn, hidden)
    y = b.op("Add", [h, m])
    y = b.op("LayerNormalization", [y, b.weight([hidden], 0.1), b.weight([hidden], 0.1)], axis=-1,
             epsilon=1e-5)
    b.nodes[-1].output[0] = "y"
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, hidden])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, hidden])], 17)


def rms_norm(b, x, hidden):
    ms = b.op("ReduceMean", [b.op("Pow", [x, b.const(np.array(2.0, dtype=np.float32))])],
              axes=[-1], keepdims=1)
    r = b.op("Sqrt", [b.op("Add", [ms, b.const(np.array(1e-6, dtype=np.float32))])])
    return b.op("Mul", [b.op("Div", [x, r]), b.weight([hidden], 0.1)])


def make_decoder(seq=16, hidden=32, heads=4, ffn=48):
    b = Builder(3)
    mask = np.triu(np.full((seq, seq), -1e9, dtype=np.float32), k=1)
    x = "x"
    h = b.op("Add", [x, attention(b, rms_norm(b, x, hidden), seq, hidden, heads,
                                  mask=b.const(mask, "mask"))])
    n = rms_norm(b, h, hidden)
    gate = b.op("MatMul", [n, b.weight([hidden, ffn])])
    up = b.op("MatMul", [n, b.weight([hidden, ffn])])
    silu = b.op("Mul", [gate, b.op("Sigmoid", [gate])])
    down = b.op("MatMul", [b.op("Mul", [silu, up]), b.weight([ffn, hidden])])
    y = b.op("Add", [h, down])
    b.nodes[-1].output[0] = "y"
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, hidden])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, hidden])], 13)


def i64(*v):
    return np.array(v, dtype=np.int64)


def make_ops():
    b = Builder(4)
    x = "x"  # [1, 4, 8, 8]
    c = b.op("Conv", [x, b.weight([8, 2, 3, 3], 0.3)], group=2, strides=[2, 2], pads=[1, 1, 1, 1],
             dilations=[1, 1])  # [1, 8, 4, 4]
    p = b.op("AveragePool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
             count_include_pad=0)  # [1, 4, 4, 4]
    m = b.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])  # [1, 4, 4, 4]
    cat = b.op("Concat", [c, p, m], axis=1)  # [1, 16, 4, 4]
    sl = b.op("Slice", [cat, b.const(i64(1, 0)), b.const(i64(15, 4)), b.const(i64(1, 3)),
                        b.const(i64(2, 1))])  # [1, 7, 4, 4]
    sp = [b.name("split") for _ in range(2)]
    b.nodes.append(helper.make_node("Split", [cat, b.const(i64(6, 10))], sp, axis=1, name="split"))
    g = b.op("Gather", [sp[1], b.const(i64(0, 3, 9))], axis=1)  # [1, 3, 4, 4]
    e = b.op("Expand", [b.op("Tanh", [g]), b.const(i64(2, 3, 4, 4))])  # [2, 3, 4, 4]
    cond = b.op("Greater", [e, b.const(np.array(0.1, dtype=np.float32))])
    w = b.op("Where", [cond, e, b.op("LeakyRelu", [e], alpha=0.2)])
    r1 = b.op("ReduceMax", [w, b.const(i64(0))], keepdims=0)  # [3, 4, 4]
    r2 = b.op("ReduceSum", [b.op("Exp", [b.op("Clip", [sl, b.const(np.array(-1, dtype=np.float32)),
                                                        b.const(np.array(1, dtype=np.float32))])]),
                            b.const(i64(1))], keepdims=1)  # [1, 1, 4, 4]
    r2 = b.op("Squeeze", [r2, b.const(i64(0, 1))])  # [4, 4]
    r2 = b.op("Unsqueeze", [b.op("Sqrt", [r2]), b.const(i64(0))])  # [1, 4, 4]
    y = b.op("Add", [r1, b.op("Pow", [r2, b.const(np.array(1.5, dtype=np.float32))])])  # [3, 4, 4]
    # Shape arithmetic: reshape to [Shape(y)[0], -1].
    n = b.op("Gather", [b.op("Shape", [y]), b.const(np.array(0, dtype=np.int64))], axis=0)
    shape = b.op("Concat", [b.op("Unsqueeze", [n, b.const(i64(0))]), b.const(i64(-1))], axis=0)
    y = b.op("Reshape", [y, shape])  # [3, 16]
    y = b.op("Gemm", [y, b.weight([16, 5]), b.weight([5], 0.1)], alpha=0.5, beta=2.0)
    y = b.op("Cast", [b.op("Cast", [y], to=TensorProto.DOUBLE)], to=TensorProto.FLOAT)
    b.nodes[-1].output[0] = "y"
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 5])], 18)


def make_upsample():
    b = Builder(5)
    y = b.op("ConvTranspose", ["x", b.weight([4, 4, 3, 3], 0.3), b.weight([4], 0.1)],
             strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])  # [1, 4, 10, 10]
    y = b.op("ConvTranspose", [b.op("Relu", [y]), b.weight([4, 1, 2, 2], 0.5)], group=4,
             dilations=[2, 2])  # [1, 4, 12, 12]
    b.nodes[-1].output[0] = "y"
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 5, 5])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 12, 12])], 13)


def make_ops2():
    b = Builder(8)
    x = "x"  # [2, 3, 4, 5]
    f = lambda v: b.const(np.array(v, dtype=np.float32))  # noqa: E731
    g1 = b.op("Gelu", [x])
    g2 = b.op("Gelu", [x], approximate="tanh")
    a = b.op("Sub", [g1, b.op("Neg", [g2])])
    a = b.op("Add", [b.op("Abs", [a]), b.op("Reciprocal", [b.op("Add", [b.op("Abs", [x]), f(1.0)])])])
    a = b.op("Log", [b.op("Add", [a, f(0.5)])])
    a = b.op("Max", [a, b.op("Min", [x, f(0.25)])])
    eq = b.op("Equal", [b.op("Cast", [x], to=TensorProto.INT64),
                        b.op("ConstantOfShape", [b.const(np.array([5], dtype=np.int64))],
                             value=numpy_helper.from_array(np.array([0], dtype=np.int64)))])
    lt = b.op("Less", [x, f(-0.5)])
    a = b.op("Where", [eq, a, b.op("Where", [lt, f(-1.0), a])])
    a = b.op("Dropout", [b.op("Identity", [a])])
    r1 = b.op("ReduceMin", [a, b.const(np.array([3], dtype=np.int64))], keepdims=1)  # [2,3,4,1]
    r2 = b.op("ReduceMean", [a, b.const(np.array([1], dtype=np.int64))], keepdims=1)  # [2,1,4,5]
    r3 = b.op("ReduceSumSquare", [a, b.const(np.array([2, 3], dtype=np.int64))], keepdims=1)
    s = b.op("Add", [b.op("Add", [r1, r2]), r3])  # [2, 3, 4, 5]
    s = b.op("Add", [s, b.op("Cast", [b.op("Range", [b.const(np.array(0, dtype=np.int64)),
                                                      b.const(np.array(5, dtype=np.int64)),
                                                      b.const(np.array(1, dtype=np.int64))])],
                               to=TensorProto.FLOAT)])
    s = b.op("LogSoftmax", [s], axis=2)
    s = b.op("Pad", [s, b.const(np.array([0, 0, 1, -1, 0, 0, 2, 0], dtype=np.int64)), f(0.3)])
    s = b.op("Tile", [s, b.const(np.array([1, 1, 1, 2], dtype=np.int64))])  # [2, 3, 7, 8]
    p = b.op("Flatten", [b.op("GlobalMaxPool", [s])])  # [2, 3]
    y = b.op("Add", [p, b.op("ReduceMax", [s, b.const(np.array([2, 3], dtype=np.int64))],
                             keepdims=0)])
    b.nodes[-1].output[0] = "y"
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], 20)


def resize_model(b, opset, variants, shape=(1, 2, 5, 7)):
    """Each variant (inputs after X, attributes) resizes x; the results flattened and concatenated."""
    outs = [b.op("Flatten", [b.op("Resize", ["x"] + inputs, **attrs)], axis=1)
            for inputs, attrs in variants]
    y = b.op("Concat", outs, axis=1)
    b.nodes[-1].output[0] = "y"
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "n"])], opset)


def make_resize():
    b = Builder(11)
    f = lambda *v: b.const(np.array(v, dtype=np.float32), "scales")  # noqa: E731
    n = lambda *v: b.const(np.array(v, dtype=np.int64), "sizes")  # noqa: E731
    near = lambda c, m: dict(mode="nearest", coordinate_transformation_mode=c,  # noqa: E731
                             nearest_mode=m)
    lin = lambda c: dict(mode="linear", coordinate_transformation_mode=c)  # noqa: E731
    return resize_model(b, 13, [
        (["", f(1, 1, 2, 2)], near("asymmetric", "floor")),
        (["", f(1, 1, 1.5, 0.6)], near("half_pixel", "round_prefer_floor")),
        (["", "", n(1, 2, 9, 4)], near("align_corners", "round_prefer_ceil")),
        (["", "", n(1, 2, 3, 10)], near("pytorch_half_pixel", "ceil")),
        (["", f(1, 1, 2, 3)], near("tf_half_pixel_for_nn", "round_prefer_floor")),
        (["", f(1, 1, 3, 0.5)], near("half_pixel", "round_prefer_ceil")),
        (["", f(1, 1, 2, 2)], {}),  # the defaults: nearest, half_pixel, round_prefer_floor
        (["", f(1, 1, 2, 2)], lin("half_pixel")),
        (["", "", n(1, 2, 8, 13)], lin("align_corners")),
        (["", f(1, 1, 2.5, 0.5)], lin("asymmetric")),
        (["", "", n(1, 2, 1, 14)], lin("pytorch_half_pixel")),
        (["", "", n(1, 2, 3, 4)], lin("half_pixel")),
    ])


def make_resize11():
    b = Builder(12)
    roi = b.const(np.zeros([0], dtype=np.float32), "roi")
    empty_scales = b.const(np.zeros([0], dtype=np.float32), "scales")
    roi2 = b.name("roi")
    b.nodes.append(helper.make_node("Constant", [], [roi2], name=roi2,
                                    value=numpy_helper.from_array(np.zeros([0], np.float32))))
    return resize_model(b, 11, [
        ([roi, b.const(np.array([1, 1, 2, 2], dtype=np.float32))],
         dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")),
        ([roi2, empty_scales, b.const(np.array([1, 2, 10, 14], dtype=np.int64))],
         dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel")),
    ])


def make_resize19():
    b = Builder(13)
    return resize_model(b, 19, [
        (["", b.const(np.array([2, 1.5], dtype=np.float32))],
         dict(mode="linear", axes=[2, 3], coordinate_transformation_mode="half_pixel_symmetric",
              antialias=0, keep_aspect_ratio_policy="stretch")),
        (["", "", b.const(np.array([4, 9], dtype=np.int64))],
         dict(mode="nearest", axes=[-1, 2], coordinate_transformation_mode="half_pixel_symmetric")),
    ])


def make_unet(size=16, channels=8, mode="linear", coordinates="pytorch_half_pixel", seed=14):
    """conv-relu, max pool, conv-relu at half size, Resize x2, Concat with the skip, conv."""
    b = Builder(seed)

    def conv(x, cin, cout, relu=True):
        y = b.op("Conv", [x, b.weight([cout, cin, 3, 3], 1.0 / np.sqrt(cin * 9)),
                          b.weight([cout], 0.1)], pads=[1, 1, 1, 1], kernel_shape=[3, 3])
        return b.op("Relu", [y]) if relu else y

    skip = conv("x", 3, channels)
    y = b.op("MaxPool", [skip], kernel_shape=[2, 2], strides=[2, 2])
    y = conv(y, channels, 2 * channels)
    attrs = dict(mode=mode, coordinate_transformation_mode=coordinates)
    if mode == "nearest":
        attrs["nearest_mode"] = "floor"
    y = b.op("Resize", [y, "", b.const(np.array([1, 1, 2, 2], dtype=np.float32), "scales")],
             **attrs)
    y = b.op("Concat", [y, skip], axis=1)
    y = conv(y, 3 * channels, channels, relu=False)
    b.nodes[-1].output[0] = "y"
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                  [1, channels, size, size])], 13)


def written_layer_norm(b, x, hidden, exponent=2.0):
    f = lambda v: b.const(np.array(v, dtype=np.float32))  # noqa: E731
    c = b.op("Sub", [x, b.op("ReduceMean", [x], axes=[-1], keepdims=1)])
    var = b.op("ReduceMean", [b.op("Pow", [c, f(exponent)])], axes=[-1], keepdims=1)
    n = b.op("Div", [c, b.op("Sqrt", [b.op("Add", [var, f(1e-5)])])])
    return b.op("Add", [b.op("Mul", [n, b.weight([hidden], 0.1)]), b.weight([hidden], 0.1)])


def make_layernorm(seq=4, hidden=16):
    b = Builder(15)
    y = written_layer_norm(b, "x", hidden)
    y = written_layer_norm(b, b.op("Relu", [y]), hidden, exponent=3.0)
    b.nodes[-1].output[0] = "y"
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, hidden])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, hidden])], 14)


def make_mlp16():
    b = Builder(7)

    def w(shape, scale):
        return b.const((b.rng.standard_normal(shape) * scale).astype(np.float16))

    y = b.op("Relu", [b.op("Add", [b.op("MatMul", ["x", w([32, 64], 0.2)]), w([64], 0.1)])])
    y = b.op("Softmax", [b.op("MatMul", [y, w([64, 16], 0.2)])], axis=-1)
    b.nodes[-1].output[0] = "y"
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT16, [8, 32])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [8, 16])], 13)


def make_gram():
    b = Builder(6)
    y = b.op("Relu", [b.op("MatMul", ["x", b.op("Transpose", ["x"], perm=[1, 0])])])
    b.nodes[-1].output[0] = "y"
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [512, 512])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [512, 512])], 13)


def make_dynbatch():
    b = Builder(9)
    y = b.op("Relu", [b.op("MatMul", ["x", b.weight([8, 4])])])
    b.nodes[-1].output[0] = "y"
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])], 13)


def main():
    """Writes every model, or the ones named on the command line."""
    only = sys.argv[1:]
    for name, make in [("gram", make_gram), ("dynbatch", make_dynbatch)]:
        if not only or name in only:
            onnx.save(make(), os.path.join(HERE, f"{name}.onnx"))
    for name, make in [("cnn", make_cnn), ("encoder", make_encoder), ("decoder", make_decoder),
                       ("ops", make_ops), ("upsample", make_upsample), ("mlp16", make_mlp16),
                       ("ops2", make_ops2), ("resize", make_resize), ("resize11", make_resize11),
                       ("resize19", make_resize19), ("unet", make_unet),
                       ("layernorm", make_layernorm), ("resblock", make_resblock)]:
        if only and name not in only:
            continue
        model = make()
        path = os.path.join(HERE, f"{name}.onnx")
        onnx.save(model, path)
        shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        elem = model.graph.input[0].type.tensor_type.elem_type
        dtype = np.float16 if elem == TensorProto.FLOAT16 else np.float32
        x = np.random.default_rng(100).standard_normal(shape).astype(dtype)
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        (y,) = sess.run(None, {"x": x})
        np.save(os.path.join(HERE, f"{name}.input.npy"), x)
        np.save(os.path.join(HERE, f"{name}.output.npy"), y)
        print(f"{name}: {len(model.graph.node)} nodes, output {list(y.shape)}, "
              f"{os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
