#!/usr/bin/python3
"""Writes tests/quant/data/quant_reference.json: quantization parameters, codes and a
dynamic quantized Linear computed by PyTorch 1.13, the references of tests/quant.

  /usr/bin/python3 tests/quant/make_quant_reference.py

The tests never need PyTorch; rerun this only to change the cases.
"""
import json
import os

import torch
import torch.ao.quantization as tq

torch.manual_seed(0)
out = {"torch": torch.__version__}

# Affine parameters from (min, max): torch._choose_qparams_per_tensor runs
# ChooseQuantizationParams with codes [0, 255] on the tensor's min and max.
ranges = [(-1.0, 1.0), (0.0, 6.0), (-3.5, -0.25), (0.1, 0.2), (-1e-6, 2e-6), (0.0, 0.0), (-2.0, 0.0),
          (-0.731, 5.29), (1e-3, 1e-3), (-100.0, 3.0), (-7e-5, 1e-5)]
cases = []
for lo, hi in ranges:
    for reduce_range in (False, True):
        scale, zp = torch._choose_qparams_per_tensor(torch.tensor([lo, hi]), reduce_range)
        cases.append({"min": lo, "max": hi, "reduce_range": reduce_range, "scale": scale, "zero_point": zp})
out["affine"] = cases

# Symmetric int8 weights, per tensor and per output channel (the observers of
# quantize_dynamic's default and per-channel qconfigs).
w = torch.randn(5, 7) * torch.tensor([[0.1], [1.0], [3.0], [0.02], [0.5]])
w[3] = 0.0  # an all-zero channel takes the minimum scale
obs = tq.PerChannelMinMaxObserver(ch_axis=0, dtype=torch.qint8, qscheme=torch.per_channel_symmetric)
obs(w)
pc_scale, pc_zp = obs.calculate_qparams()
pc = torch.quantize_per_channel(w, pc_scale, pc_zp, 0, torch.qint8)
obs_t = tq.MinMaxObserver(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric)
obs_t(w)
pt_scale, pt_zp = obs_t.calculate_qparams()
pt = torch.quantize_per_tensor(w, float(pt_scale), int(pt_zp), torch.qint8)
out["weight"] = {
    "shape": list(w.shape), "values": w.flatten().tolist(),
    "per_channel_scale": pc_scale.tolist(), "per_channel_codes": pc.int_repr().flatten().tolist(),
    "per_tensor_scale": float(pt_scale), "per_tensor_codes": pt.int_repr().flatten().tolist(),
}

# quint8 codes, ties included: x / scale lands on .5 for several values.
scale, zp = 0.5, 10
x = torch.tensor([-10.0, -5.25, -0.25, 0.25, 0.75, 1.25, 3.0, 100.0, 127.6, -4.75, 0.0, 2.2])
out["quint8"] = {"scale": scale, "zero_point": zp, "values": x.tolist(),
                 "codes": torch.quantize_per_tensor(x, scale, zp, torch.quint8).int_repr().tolist()}

# A dynamic quantized Linear (per-channel weights) on a small input.
torch.backends.quantized.engine = "onednn" if "onednn" in torch.backends.quantized.supported_engines else "fbgemm"
lin = torch.nn.Sequential(torch.nn.Linear(6, 4))
xin = torch.randn(3, 6)
with torch.no_grad():
    y_float = lin(xin)
q = tq.quantize_dynamic(lin, {torch.nn.Linear: tq.per_channel_dynamic_qconfig}, dtype=torch.qint8)
with torch.no_grad():
    y_q = q(xin)
out["linear"] = {"engine": torch.backends.quantized.engine,
                 "weight": lin[0].weight.flatten().tolist(), "bias": lin[0].bias.tolist(),
                 "input": xin.flatten().tolist(), "float_output": y_float.flatten().tolist(),
                 "quantized_output": y_q.flatten().tolist(), "repr": repr(q)}

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "quant_reference.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1)
print("wrote", path)
