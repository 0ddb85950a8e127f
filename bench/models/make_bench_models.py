"""Writes the models of bench/models/bench_models.sh (random seeded weights) into OUTDIR:

  resnet.onnx  a ResNet-style CNN: 3x3 stem conv-bn-relu at 64x64, max pool, two basic blocks
               (conv-bn-relu, conv-bn, residual add, relu) at 32 channels, a strided block to
               64 channels with a 1x1 projection, global average pool, fc 10 (opset 13)
  resnet18.onnx  ResNet-18 as torchvision defines it, in NCHW at 224x224: the 7x7 stride-2 stem,
               3x3 stride-2 max pool, four stages of two basic blocks (64/128/256/512 channels,
               1x1 stride-2 projections), global average pool, fc 1000 (opset 13)
  bert.onnx    a BERT-base encoder layer: seq 128, hidden 768, 12 heads, FFN 3072, exported-GELU
               (opset 17)

and for each a seeded random input NAME.input.npy. Usage: python make_bench_models.py OUTDIR
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


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    models = [("resnet", make_resnet), ("resnet18", make_resnet18),
              ("bert", lambda: make_models.make_encoder(seq=128, hidden=768, heads=12, ffn=3072))]
    for name, make in models:
        model = make()
        save(model, os.path.join(out, f"{name}.onnx"))
        shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        np.save(os.path.join(out, f"{name}.input.npy"),
                np.random.default_rng(1).standard_normal(shape).astype(np.float32))
        print(f"{name}: {len(model.graph.node)} nodes")


if __name__ == "__main__":
    main()
