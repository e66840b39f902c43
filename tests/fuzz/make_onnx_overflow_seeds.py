#!/usr/bin/env python3
"""Writes tests/fuzz/regressions/onnx/overflow-*.onnx: small ONNX models, encoded by hand
(protobuf wire format, no onnx package needed), whose sizes or attributes once made
int64 size arithmetic overflow (undefined behaviour that UBSan reports): empty
tensors whose other sizes multiply past int64, and Reshape, Tile, Split, Range,
Pad, Concat, Conv, ConvTranspose and MaxPool with huge sizes, pads, strides or
dilations. Each must now end in an error (ShapeError, ValueError), never in a
sanitizer report; scripts/sanitize runs each once through the onnx fuzz target.
They are not fuzzing seeds: a mutation or two away they ask for gigabytes, which
the fuzz targets' 256 MiB cap refuses (tests/fuzz/fuzz_file.h), or for billions of
additions over a view that needs no memory (an Expand to 2^40 elements summed),
which runs past libFuzzer's timeout.
Run from the repository root."""
import struct, sys, os

def varint(v):
    v &= (1 << 64) - 1
    out = b""
    while True:
        b = v & 0x7F; v >>= 7
        if v: out += bytes([b | 0x80])
        else: return out + bytes([b])

def f_varint(tag, v): return varint(tag << 3) + varint(v)
def f_bytes(tag, b):
    if isinstance(b, str): b = b.encode()
    return varint(tag << 3 | 2) + varint(len(b)) + b
def f_float(tag, x): return varint(tag << 3 | 5) + struct.pack("<f", x)

FLOAT, INT64 = 1, 7
def tensor(name, dtype, dims, int64s=None, floats=None):
    t = b"".join(f_varint(1, d) for d in dims) + f_varint(2, dtype)
    for v in int64s or []: t += f_varint(7, v)
    for v in floats or []: t += f_float(4, v)
    return t + f_bytes(8, name)
def vinfo(name, dtype, dims):
    shape = b"".join(f_bytes(1, f_varint(1, d)) for d in dims)
    tt = f_varint(1, dtype) + f_bytes(2, shape)
    return f_bytes(1, name) + f_bytes(2, f_bytes(1, tt))
def attr_int(name, v): return f_bytes(1, name) + f_varint(3, v) + f_varint(20, 2)
def attr_ints(name, vs): return f_bytes(1, name) + b"".join(f_varint(8, v) for v in vs) + f_varint(20, 7)
def node(op, ins, outs, attrs=()):
    n = b"".join(f_bytes(1, i) for i in ins) + b"".join(f_bytes(2, o) for o in outs) + f_bytes(4, op)
    return n + b"".join(f_bytes(5, a) for a in attrs)
def model(nodes, inits, inputs, outputs, opset=13):
    g = b"".join(f_bytes(1, n) for n in nodes) + f_bytes(2, "g")
    g += b"".join(f_bytes(5, t) for t in inits)
    g += b"".join(f_bytes(11, v) for v in inputs) + b"".join(f_bytes(12, v) for v in outputs)
    return f_varint(1, 7) + f_bytes(7, g) + f_bytes(8, f_bytes(1, "") + f_varint(2, opset))

def w(name, b):
    with open(os.path.join("tests/fuzz/regressions/onnx", "overflow-" + name), "wb") as f:
        f.write(b)

# Reshape: target shape whose product overflows int64 (known *= s).
w("reshape-overflow.onnx", model(
    [node("Reshape", ["x", "s"], ["y"])],
    [tensor("s", INT64, [3], int64s=[1 << 40, 1 << 40, -1])],
    [vinfo("x", FLOAT, [2])], [vinfo("y", FLOAT, [])]))
# Tile: repeats * dim overflows int64 (out.push_back(reps[d] * x.size(d))).
w("tile-overflow.onnx", model(
    [node("Tile", ["x", "r"], ["y"])],
    [tensor("r", INT64, [1], int64s=[1 << 62])],
    [vinfo("x", FLOAT, [4])], [vinfo("y", FLOAT, [])]))
# Range (int64): the double count exceeds the true count near INT64_MAX, start + i*delta overflows.
big = (1 << 63) - 1
w("range-overflow.onnx", model(
    [node("Range", ["a", "b", "d"], ["y"])],
    [tensor("a", INT64, [], int64s=[big - 1000]), tensor("b", INT64, [], int64s=[big]),
     tensor("d", INT64, [], int64s=[1])],
    [], [vinfo("y", INT64, [])]))

def attr_str(name, s): return f_bytes(1, name) + f_bytes(4, s) + f_varint(20, 3)
M = (1 << 63) - 1
# MaxPool SAME_UPPER with a huge stride: (in + stride - 1) overflows.
w("maxpool-same-stride.onnx", model(
    [node("MaxPool", ["x"], ["y"], [attr_ints("kernel_shape", [1]), attr_ints("strides", [M]), attr_str("auto_pad", "SAME_UPPER")])],
    [], [vinfo("x", FLOAT, [1, 1, 4])], [vinfo("y", FLOAT, [])]))
# MaxPool SAME_UPPER with a huge dilation: (kernel - 1) * dilation overflows.
w("maxpool-same-dilation.onnx", model(
    [node("MaxPool", ["x"], ["y"], [attr_ints("kernel_shape", [3]), attr_ints("dilations", [1 << 62]), attr_str("auto_pad", "SAME_UPPER")])],
    [], [vinfo("x", FLOAT, [1, 1, 4])], [vinfo("y", FLOAT, [])], opset=12))
# MaxPool with explicit huge pads.
w("maxpool-pads.onnx", model(
    [node("MaxPool", ["x"], ["y"], [attr_ints("kernel_shape", [1]), attr_ints("pads", [M, M])])],
    [], [vinfo("x", FLOAT, [1, 1, 4])], [vinfo("y", FLOAT, [])]))
# Conv 1-D with a huge dilation.
w("conv-dilation.onnx", model(
    [node("Conv", ["x", "w"], ["y"], [attr_ints("dilations", [1 << 62])])],
    [tensor("w", FLOAT, [1, 1, 3], floats=[1, 1, 1])], [vinfo("x", FLOAT, [1, 1, 4])], [vinfo("y", FLOAT, [])]))
# Conv 3-D with a huge dilation (the per-depth loop path).
w("conv3d-dilation.onnx", model(
    [node("Conv", ["x", "w"], ["y"], [attr_ints("dilations", [1 << 62, 1, 1])])],
    [tensor("w", FLOAT, [1, 1, 3, 1, 1], floats=[1, 1, 1])], [vinfo("x", FLOAT, [1, 1, 4, 1, 1])], [vinfo("y", FLOAT, [])]))
# Conv with huge pads.
w("conv-pads.onnx", model(
    [node("Conv", ["x", "w"], ["y"], [attr_ints("pads", [M, M])])],
    [tensor("w", FLOAT, [1, 1, 1], floats=[1])], [vinfo("x", FLOAT, [1, 1, 4])], [vinfo("y", FLOAT, [])]))
# ConvTranspose with a huge stride: (in - 1) * stride overflows.
w("convtranspose-stride.onnx", model(
    [node("ConvTranspose", ["x", "w"], ["y"], [attr_ints("strides", [1 << 62])])],
    [tensor("w", FLOAT, [1, 1, 1], floats=[1])], [vinfo("x", FLOAT, [1, 1, 4])], [vinfo("y", FLOAT, [])]))
# Flatten of a zero-element tensor whose other dims multiply past int64.
w("flatten-zero.onnx", model(
    [node("ConstantOfShape", ["s"], ["z"]), node("Flatten", ["z"], ["y"], [attr_int("axis", 2)])],
    [tensor("s", INT64, [3], int64s=[1 << 40, 1 << 40, 0])], [], [vinfo("y", FLOAT, [])]))
# Split sizes whose sum overflows.
w("split-sum.onnx", model(
    [node("Split", ["x", "s"], ["a", "b", "c"])],
    [tensor("s", INT64, [3], int64s=[1 << 62, 1 << 62, 1 << 62])], [vinfo("x", FLOAT, [4])],
    [vinfo("a", FLOAT, []), vinfo("b", FLOAT, []), vinfo("c", FLOAT, [])]))
# Pad with huge pads.
w("pad-huge.onnx", model(
    [node("Pad", ["x", "p"], ["y"])],
    [tensor("p", INT64, [2], int64s=[M, M])], [vinfo("x", FLOAT, [4])], [vinfo("y", FLOAT, [])]))
# Expand to a zero-size shape with huge dims, then reduce.
w("expand-zero-reduce.onnx", model(
    [node("Expand", ["x", "s"], ["z"]), node("ReduceSum", ["z"], ["y"], [attr_int("keepdims", 0)])],
    [tensor("s", INT64, [3], int64s=[1 << 40, 1 << 40, 0])], [vinfo("x", FLOAT, [1])], [vinfo("y", FLOAT, [])]))
# Reshape of a zero-element tensor with huge dims: view_strides' numel accumulate.
w("reshape-zero.onnx", model(
    [node("ConstantOfShape", ["s"], ["z"]), node("Reshape", ["z", "t"], ["y"])],
    [tensor("s", INT64, [3], int64s=[1 << 40, 1 << 40, 0]), tensor("t", INT64, [1], int64s=[0])],
    [], [vinfo("y", FLOAT, [])]))
# Legacy Softmax (opset 11) of a zero-element tensor: outer product.
w("softmax-zero.onnx", model(
    [node("ConstantOfShape", ["s"], ["z"]), node("Softmax", ["z"], ["y"], [attr_int("axis", 2)])],
    [tensor("s", INT64, [4], int64s=[1 << 40, 1 << 40, 0, 2])], [], [vinfo("y", FLOAT, [])], opset=11))
# MaxPool 2-D with a huge dilation, no auto_pad: the pool's output size.
w("maxpool2d-dilation.onnx", model(
    [node("MaxPool", ["x"], ["y"], [attr_ints("kernel_shape", [3, 1]), attr_ints("dilations", [1 << 62, 1])])],
    [], [vinfo("x", FLOAT, [1, 1, 4, 4])], [vinfo("y", FLOAT, [])], opset=12))
# MaxPool 3-D with a huge depth dilation: reduce_depth's span.
w("maxpool3d-dilation.onnx", model(
    [node("MaxPool", ["x"], ["y"], [attr_ints("kernel_shape", [3, 1, 1]), attr_ints("dilations", [1 << 62, 1, 1])])],
    [], [vinfo("x", FLOAT, [1, 1, 4, 1, 1])], [vinfo("y", FLOAT, [])], opset=12))
# Range in int32 with a delta whose multiples leave int32.
w("range-int32.onnx", model(
    [node("Range", ["a", "b", "d"], ["y"])],
    [f_varint(2, 6) + f_varint(5, (-(1 << 31)) & ((1 << 64) - 1)) + f_bytes(8, "a"),  # int32 scalars
     f_varint(2, 6) + f_varint(5, (1 << 31) - 1) + f_bytes(8, "b"),
     f_varint(2, 6) + f_varint(5, 1 << 30) + f_bytes(8, "d")],
    [], [vinfo("y", 6, [])]))

def zeros_then(op_nodes, shape, outs=("y",), opset=13, extra_inits=()):
    return model([node("ConstantOfShape", ["s"], ["z"])] + op_nodes,
                 [tensor("s", INT64, [len(shape)], int64s=shape)] + list(extra_inits), [],
                 [vinfo(o, FLOAT, []) for o in outs], opset=opset)
H = 1 << 40
w("concat-zero.onnx", zeros_then([node("Concat", ["z", "z", "z"], ["y"], [attr_int("axis", 1)])], [0, 1 << 62]))
w("gap-zero.onnx", zeros_then([node("GlobalAveragePool", ["z"], ["y"])], [1, 1, H, H, 0]))
w("reducemean-zero.onnx", zeros_then([node("ReduceMean", ["z"], ["y"], [attr_ints("axes", [0, 1, 2])])], [H, H, 0], opset=13))
w("layernorm-zero.onnx", zeros_then([node("LayerNormalization", ["z", "g"], ["y"], [attr_int("axis", 1)])], [2, H, H, 0],
    extra_inits=[tensor("g", FLOAT, [H, H, 0])], opset=17))
w("matmul-zero.onnx", zeros_then([node("MatMul", ["z", "z"], ["y"])], [H, H, 0, 0]))
w("transpose-zero-contig.onnx", zeros_then([node("Transpose", ["z"], ["t"], [attr_ints("perm", [2, 1, 0])]), node("Relu", ["t"], ["y"])], [H, H, 0]))
w("gather-zero.onnx", zeros_then([node("Gather", ["z", "i"], ["y"], [attr_int("axis", 0)])], [H, H, 0],
    extra_inits=[tensor("i", INT64, [1], int64s=[0])]))
w("slice-zero.onnx", zeros_then([node("Slice", ["z", "a", "b"], ["y"])], [H, H, 0],
    extra_inits=[tensor("a", INT64, [1], int64s=[1]), tensor("b", INT64, [1], int64s=[2])]))
w("softmax13-zero.onnx", zeros_then([node("Softmax", ["z"], ["y"], [attr_int("axis", 0)])], [H, H, 0]))
w("add-zero.onnx", zeros_then([node("Add", ["z", "z"], ["y"])], [H, H, 0]))
w("cast-zero.onnx", zeros_then([node("Cast", ["z"], ["y"], [attr_int("to", 7)])], [H, H, 0]))
w("squeeze-expand-zero.onnx", zeros_then([node("Unsqueeze", ["z", "ax"], ["u"]), node("Expand", ["u", "e"], ["y"])], [H, H, 0],
    extra_inits=[tensor("ax", INT64, [1], int64s=[0]), tensor("e", INT64, [4], int64s=[H, 1, 1, 1])]))
