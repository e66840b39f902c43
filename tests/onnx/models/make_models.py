#!/usr/bin/python3
"""Exports the PyTorch models that tests/onnx/test_pytorch_models.cpp runs, with their
reference data, so that the test checks Ember against PyTorch without needing PyTorch.

Run with torch 1.13 and onnx 1.12 (the tests never need either):

    /usr/bin/python3 tests/onnx/models/make_models.py

Writes, next to this script, for each model NAME in mlp, resnet, transformer, seed_net,
conv_block:
  NAME.onnx           torch.onnx.export of the model in eval mode, batch axis dynamic
                      ("N"); opset 13, except the transformer at opset 17 so that
                      nn.LayerNorm becomes one LayerNormalization node;
  NAME_input_0.pb     the input batch (batch 3) as a serialized onnx TensorProto;
  NAME_output_0.pb    PyTorch's output for it (float32), the same way.
Every model has fixed seeds, so rerunning the script rewrites the same numbers.
"""
import os
import struct
import json

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
SEED_WEIGHTS = os.path.join(HERE, "..", "..", "nn", "data", "safetensors_seed_net.safetensors")
BATCH = 3


class MLP(nn.Module):
    """784-256-128-10 with ReLU between the layers: Gemm + Relu."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(784, 256), nn.Linear(256, 128), nn.Linear(128, 10)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class Block(nn.Module):
    """A pre-activation residual block: BN-ReLU-conv twice, plus a (projected) shortcut.
    BatchNorm sits before each conv, so the exporter cannot fold it into the conv's
    weights and BatchNormalization stays in the graph. The first conv is grouped and
    dilated (padding = dilation keeps the size)."""

    def __init__(self, cin, cout, stride, groups, dilation):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=dilation, dilation=dilation, groups=groups)
        self.bn2 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.proj = nn.Conv2d(cin, cout, 1, stride=stride) if stride != 1 or cin != cout else None

    def forward(self, x):
        y = self.conv1(F.relu(self.bn1(x)))
        y = self.conv2(F.relu(self.bn2(y)))
        return y + (self.proj(x) if self.proj is not None else x)


class ResNet(nn.Module):
    """[N,3,32,32] -> stem conv -> 2 residual blocks -> MaxPool -> block (stride 2) ->
    AveragePool -> GlobalAveragePool (AdaptiveAvgPool2d(1)) -> Flatten -> Linear(32,10)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.block1 = Block(16, 16, 1, groups=4, dilation=2)
        self.pool1 = nn.MaxPool2d(3, stride=2, padding=1)
        self.block2 = Block(16, 32, 2, groups=2, dilation=1)
        self.pool2 = nn.AvgPool2d(2)
        self.bn = nn.BatchNorm2d(32)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = self.block1(self.stem(x))                 # 16 x 32 x 32
        x = self.block2(self.pool1(x))                # 32 x 8 x 8
        x = F.relu(self.bn(self.pool2(x)))            # 32 x 4 x 4
        return self.fc(torch.flatten(self.gap(x), 1))


class ConvBlock(nn.Module):
    """Two 64-channel 3x3 convolutions at 14x14, the width of a real network's
    middle layers, each with ReLU -> global average pool -> Linear(64, 10). The
    quantized copy (make_quantized.sh) is the onnx suite's int8 convolution case."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(64, 64, 3, padding=1)
        self.conv2 = nn.Conv2d(64, 64, 3, padding=1)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv2(F.relu(self.conv1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class Transformer(nn.Module):
    """Token ids [N,16] (int64) -> Embedding(100,64) -> 2 post-norm encoder layers
    (4 heads, feed-forward 128, GELU, no dropout) -> LayerNorm -> Linear(64,10): [N,16,10]."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 64)
        layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, activation="gelu",
                                           batch_first=True, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(64)
        self.head = nn.Linear(64, 10)

    def forward(self, ids):
        return self.head(self.norm(self.encoder(self.embed(ids))))


class SeedNet(nn.Module):
    """Ember's seed network (nn/models/network.*), same layers and parameter names."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 6, 5), nn.Conv2d(6, 12, 5)
        self.fc1, self.fc2, self.out = nn.Linear(192, 120), nn.Linear(120, 60), nn.Linear(60, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.out(F.relu(self.fc2(x)))


def read_safetensors(path):
    """The F32 tensors of a safetensors file (8-byte header length, JSON header, data)."""
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", name
        begin, end = info["data_offsets"]
        data = np.frombuffer(blob[8 + n + begin:8 + n + end], dtype="<f4").reshape(info["shape"])
        out[name] = torch.from_numpy(data.copy())
    return out


def randomize_batchnorm(model, gen):
    """Non-trivial running statistics and affine parameters, so BatchNorm is not an identity."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(c, generator=gen) + 0.5)
            m.weight.data.copy_(torch.rand(c, generator=gen) + 0.5)
            m.bias.data.copy_(torch.randn(c, generator=gen) * 0.1)


def save_tensor(array, path):
    with open(path, "wb") as f:
        f.write(onnx.numpy_helper.from_array(np.ascontiguousarray(array)).SerializeToString())


def export(name, model, x, opset):
    model.eval()
    path = os.path.join(HERE, name + ".onnx")
    # Grad mode stays on while tracing: under no_grad, nn.TransformerEncoderLayer takes its
    # fused fast path (_transformer_encoder_layer_fwd), which has no ONNX export.
    torch.onnx.export(model, (x,), path, opset_version=opset, input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "N"}, "output": {0: "N"}}, do_constant_folding=True)
    onnx.checker.check_model(onnx.load(path))
    with torch.no_grad():
        y = model(x)
    save_tensor(x.numpy(), os.path.join(HERE, name + "_input_0.pb"))
    save_tensor(y.numpy().astype(np.float32), os.path.join(HERE, name + "_output_0.pb"))
    ops = sorted({n.op_type for n in onnx.load(path).graph.node})
    print(f"{name}: {os.path.getsize(path)} bytes, output {tuple(y.shape)}, ops {' '.join(ops)}")


def main():
    torch.manual_seed(0)
    export("mlp", MLP(), torch.randn(BATCH, 784), 13)

    torch.manual_seed(1)
    resnet = ResNet()
    randomize_batchnorm(resnet, torch.Generator().manual_seed(11))
    export("resnet", resnet, torch.randn(BATCH, 3, 32, 32), 13)

    torch.manual_seed(2)
    export("transformer", Transformer(), torch.randint(0, 100, (BATCH, 16), dtype=torch.int64), 17)

    seed = SeedNet()
    seed.load_state_dict(read_safetensors(SEED_WEIGHTS))
    torch.manual_seed(3)
    export("seed_net", seed, torch.randn(BATCH, 1, 28, 28), 13)

    torch.manual_seed(4)
    export("conv_block", ConvBlock(), torch.randn(BATCH, 64, 14, 14), 13)


if __name__ == "__main__":
    main()
