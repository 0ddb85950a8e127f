"""Writes the models of bench/models/bench_models.sh (random seeded weights) into OUTDIR:

  resnet.onnx  a ResNet-style CNN: 3x3 stem conv-bn-relu at 64x64, max pool, two basic blocks
               (conv-bn-relu, conv-bn, residual add, relu) at 32 channels, a strided block to
               64 channels with a 1x1 projection, global average pool, fc 10 (opset 13)
  resnet18.onnx  ResNet-18 as torchvision defines it, in NCHW at 224x224: the 7x7 stride-2 stem,
               3x3 stride-2 max pool, four stages of two basic blocks (64/128/256/512 channels,
               1x1 stride-2 projections), global average pool, fc 1000 (opset 13)
  bert.onnx    a BERT-base encoder layer: seq 128, hidden 768, 12 heads, FFN 3072, exported-GELU
               (opset 17)
  unet.onnx    a U-Net-style block at 128x128: conv-relu (32 channels), max pool, conv-relu (64),
               Resize x2 (nearest, asymmetric, floor: torch's Upsample), Concat with the skip,
               conv (opset 13)
  llama.onnx   a LLaMA-style decoder block: seq 128, hidden 2048, 16 heads, SwiGLU FFN 5632, RMS
               norm as exported (Pow, ReduceMean, Add, Sqrt, Reciprocal, Mul), RoPE (Slice, Neg,
               Concat, Mul, Add with constant cos/sin), an additive causal mask, no biases
               (opset 13)
  gpt2.onnx    a GPT-2 block: seq 128, hidden 768, 12 heads, FFN 3072; LayerNorm written out as
               opset-14 exports write it (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul,
               Add), one QKV projection split in three, a causal Where, the Pow/Tanh GELU
               (opset 14)

and for each a seeded random input NAME.input.npy. Usage: python make_bench_models.py OUTDIR
[NAME...] (all models, or the ones named)
(numpy and onnx from PyPI in the bench's own virtualenv).
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, save

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "frontend", "data"))
import make_models  # noqa: E402  (the Builder and the encoder layer of the test models)


def conv_bn(b, x, cin, cout, k=3, stride=1, relu=True):
    w = b.weight([cout, cin, k, k], scale=1.0 / np.sqrt(cin * k * k))
    y = b.op("Conv", [x, w], pads=[k // 2] * 4, strides=[stride, stride], kernel_shape=[k, k])
    consts = [(1 + 0.1 * b.rng.standard_normal(cout)), 0.1 * b.rng.standard_normal(cout),
              0.1 * b.rng.standard_normal(cout), 1 + 0.1 * b.rng.random(cout)]
    y = b.op("BatchNormalization", [y] + [b.const(c.astype(np.float32)) for c in consts])
    return b.op("Relu", [y]) if relu else y


def basic_block(b, x, cin, cout, stride):
    y = conv_bn(b, x, cin, cout, stride=stride)
    y = conv_bn(b, y, cout, cout, relu=False)
    shortcut = x if stride == 1 and cin == cout else conv_bn(b, x, cin, cout, k=1, stride=stride,
                                                             relu=False)
    return b.op("Relu", [b.op("Add", [y, shortcut])])


def make_resnet():
    b = make_models.Builder(10)
    y = conv_bn(b, "x", 3, 32)
    y = b.op("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2])
    y = basic_block(b, y, 32, 32, 1)
    y = basic_block(b, y, 32, 32, 1)
    y = basic_block(b, y, 32, 64, 2)
    y = b.op("Flatten", [b.op("GlobalAveragePool", [y])])
    y = b.op("Gemm", [y, b.weight([10, 64]), b.weight([10], 0.1)], transB=1)
    b.nodes[-1].output[0] = "y"
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 64, 64])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], 13)


def make_resnet18():
    b = make_models.Builder(18)
    y = conv_bn(b, "x", 3, 64, k=7, stride=2)
    y = b.op("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        y = basic_block(b, y, cin, cout, stride)
        y = basic_block(b, y, cout, cout, 1)
        cin = cout
    y = b.op("Flatten", [b.op("GlobalAveragePool", [y])])
    y = b.op("Gemm", [y, b.weight([1000, 512]), b.weight([1000], 0.1)], transB=1)
    b.nodes[-1].output[0] = "y"
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 224, 224])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1000])], 13)


def f32(v):
    return np.array(v, dtype=np.float32)


def rms_norm(b, x, hidden):
    """x * (1 / sqrt(mean(x^2) + eps)) * w, as Hugging Face's LlamaRMSNorm exports."""
    ms = b.op("ReduceMean", [b.op("Pow", [x, b.const(f32(2.0))])], axes=[-1], keepdims=1)
    r = b.op("Reciprocal", [b.op("Sqrt", [b.op("Add", [ms, b.const(f32(1e-6))])])])
    return b.op("Mul", [b.op("Mul", [x, r]), b.weight([hidden], 0.1)])


def heads(b, x, seq, n, d, perm):
    return b.op("Transpose", [b.op("Reshape", [x, b.const(np.array([1, seq, n, d], np.int64))])],
                perm=perm)


def rope(b, x, seq, d):
    """x * cos + rotate_half(x) * sin over [1, heads, seq, d]."""
    angles = np.outer(np.arange(seq), 10000.0 ** (-np.arange(0, d, 2) / d))
    cos = b.const(f32(np.cos(np.concatenate([angles, angles], axis=1))), "cos")
    sin = b.const(f32(np.sin(np.concatenate([angles, angles], axis=1))), "sin")
    axis, half = b.const(np.array([3], np.int64)), d // 2
    lo = b.op("Slice", [x, b.const(np.array([0], np.int64)), b.const(np.array([half], np.int64)),
                        axis])
    hi = b.op("Slice", [x, b.const(np.array([half], np.int64)), b.const(np.array([d], np.int64)),
                        axis])
    rotated = b.op("Concat", [b.op("Neg", [hi]), lo], axis=-1)
    return b.op("Add", [b.op("Mul", [x, cos]), b.op("Mul", [rotated, sin])])


def attend(b, q, k, v, seq, hidden, d, mask_add=None, mask_where=None):
    """softmax(q k^T / sqrt(d) + mask) v, heads merged back to [1, seq, hidden]."""
    s = b.op("Div", [b.op("MatMul", [q, k]), b.const(f32(np.sqrt(d)))])
    if mask_add is not None:
        s = b.op("Add", [s, mask_add])
    if mask_where is not None:
        s = b.op("Where", [mask_where, s, b.const(f32(np.finfo(np.float32).min))])
    o = b.op("MatMul", [b.op("Softmax", [s], axis=-1), v])
    o = b.op("Transpose", [o], perm=[0, 2, 1, 3])
    return b.op("Reshape", [o, b.const(np.array([1, seq, hidden], np.int64))])


def make_llama(seq=128, hidden=2048, n_heads=16, ffn=5632):
    b = make_models.Builder(20)
    d = hidden // n_heads
    x = "x"
    n = rms_norm(b, x, hidden)
    proj = lambda t, cin, cout: b.op("MatMul", [t, b.weight([cin, cout])])  # noqa: E731
    q = rope(b, heads(b, proj(n, hidden, hidden), seq, n_heads, d, [0, 2, 1, 3]), seq, d)
    k = rope(b, heads(b, proj(n, hidden, hidden), seq, n_heads, d, [0, 2, 1, 3]), seq, d)
    k = b.op("Transpose", [k], perm=[0, 1, 3, 2])
    v = heads(b, proj(n, hidden, hidden), seq, n_heads, d, [0, 2, 1, 3])
    mask = b.const(np.triu(np.full((seq, seq), -1e9, dtype=np.float32), k=1), "mask")
    h = b.op("Add", [x, proj(attend(b, q, k, v, seq, hidden, d, mask_add=mask), hidden, hidden)])
    n = rms_norm(b, h, hidden)
    gate, up = proj(n, hidden, ffn), proj(n, hidden, ffn)
    silu = b.op("Mul", [gate, b.op("Sigmoid", [gate])])
    y = b.op("Add", [h, proj(b.op("Mul", [silu, up]), ffn, hidden)])
    b.nodes[-1].output[0] = "y"
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, hidden])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, hidden])], 13)


def layer_norm(b, x, hidden):
    """LayerNorm as torch exports it below opset 17."""
    mean = b.op("ReduceMean", [x], axes=[-1], keepdims=1)
    c = b.op("Sub", [x, mean])
    var = b.op("ReduceMean", [b.op("Pow", [c, b.const(f32(2.0))])], axes=[-1], keepdims=1)
    n = b.op("Div", [c, b.op("Sqrt", [b.op("Add", [var, b.const(f32(1e-5))])])])
    return b.op("Add", [b.op("Mul", [n, b.weight([hidden], 0.1)]), b.weight([hidden], 0.1)])


def make_gpt2(seq=128, hidden=768, n_heads=12, ffn=3072):
    b = make_models.Builder(21)
    d = hidden // n_heads
    x = "x"
    linear = make_models.linear
    qkv = linear(b, layer_norm(b, x, hidden), hidden, 3 * hidden)
    parts = [b.name("split") for _ in range(3)]
    b.nodes.append(helper.make_node("Split", [qkv, b.const(np.array([hidden] * 3, np.int64))],
                                    parts, axis=2, name=b.name("split")))
    q = heads(b, parts[0], seq, n_heads, d, [0, 2, 1, 3])
    k = heads(b, parts[1], seq, n_heads, d, [0, 2, 3, 1])
    v = heads(b, parts[2], seq, n_heads, d, [0, 2, 1, 3])
    causal = b.const(np.tril(np.ones((1, 1, seq, seq), dtype=bool)), "causal")
    h = b.op("Add", [x, linear(b, attend(b, q, k, v, seq, hidden, d, mask_where=causal), hidden,
                               hidden)])
    m = linear(b, layer_norm(b, h, hidden), hidden, ffn)
    # GELU as GPT-2 writes it: 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).
    inner = b.op("Add", [m, b.op("Mul", [b.const(f32(0.044715)),
                                         b.op("Pow", [m, b.const(f32(3.0))])])])
    t = b.op("Tanh", [b.op("Mul", [b.const(f32(np.sqrt(2 / np.pi))), inner])])
    g = b.op("Mul", [b.op("Mul", [b.const(f32(0.5)), m]), b.op("Add", [b.const(f32(1.0)), t])])
    y = b.op("Add", [h, linear(b, g, ffn, hidden)])
    b.nodes[-1].output[0] = "y"
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, hidden])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, hidden])], 14)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    models = [("resnet", make_resnet), ("resnet18", make_resnet18),
              ("bert", lambda: make_models.make_encoder(seq=128, hidden=768, heads=12, ffn=3072)),
              ("unet", lambda: make_models.make_unet(size=128, channels=32, mode="nearest",
                                                     coordinates="asymmetric", seed=22)),
              ("llama", make_llama), ("gpt2", make_gpt2)]
    only = sys.argv[2:]
    for name, make in models:
        if only and name not in only:
            continue
        model = make()
        save(model, os.path.join(out, f"{name}.onnx"))
        shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        np.save(os.path.join(out, f"{name}.input.npy"),
                np.random.default_rng(1).standard_normal(shape).astype(np.float32))
        print(f"{name}: {len(model.graph.node)} nodes")


if __name__ == "__main__":
    main()
