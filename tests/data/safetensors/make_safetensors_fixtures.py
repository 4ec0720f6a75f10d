#!/usr/bin/python3
# Writes widen.safetensors, a safetensors file of F32, F16, BF16 and F64 tensors (subnormals,
# infinities, NaN, signed zeros, values that round), and expected_<name>.npy with each
# tensor's float32 values as torch's .float() gives them: the truth for mha's widening.
# There is no safetensors package here, so the format is written from its description
# (huggingface/safetensors README): an 8-byte little-endian header length, the JSON header
# padded with spaces to a multiple of 8, then each tensor's little-endian bytes.
#
# Run from this folder: /usr/bin/python3 make_safetensors_fixtures.py

import json
import struct

import numpy as np
import torch

torch.manual_seed(46)

# every 61st 16-bit pattern (all signs, exponents and many fractions) and the edges
EDGES_16 = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0x7C00, 0xFC00, 0x7C01,
            0x7D00, 0x7E00, 0xFE01, 0x7FFF, 0x7F7F, 0x7F80, 0xFF80, 0x7F81, 0x7FC0, 0x0080,
            0x007F, 0x3C00, 0x3F80]
PATTERNS_16 = torch.tensor(sorted(set(list(range(0, 65536, 61)) + EDGES_16)), dtype=torch.int32)


def from_bits_16(dtype):
    """The patterns as a tensor of dtype (float16 or bfloat16), bit for bit."""
    return PATTERNS_16.to(torch.int16).view(dtype)  # to(int16) wraps 0x8000.. to negatives


F32 = torch.cat([
    torch.randn(24),
    torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-45, -1e-40,
                  3.4028234663852886e38, 1.1754943508222875e-38, 1.0 / 3.0]),
]).to(torch.float32)

F64 = torch.tensor([
    0.1, 1.0 / 3.0, -2.0 / 3.0, 1e-40, -1e-42, 1e-46, 7e-46, 1.401298464324817e-45,
    3.4028234663852886e38, 3.4028235e38, -3.40282356e38, 1.0000000596046448, 1.0000001788139343,
    float("inf"), float("-inf"), float("nan"), 0.0, -0.0, 123456789.123456789, 6.02214076e23,
], dtype=torch.float64)

TENSORS = {
    "f32": F32.reshape(2, 17),
    "f16": from_bits_16(torch.float16),
    "bf16": from_bits_16(torch.bfloat16),
    "f64": F64.reshape(4, 5),
    "rows.bf16": torch.randn(6, 5).to(torch.bfloat16),
    "rows.f16": torch.randn(7, 3).to(torch.float16),
    "scalar": torch.tensor(2.5, dtype=torch.float32),
}

DTYPE_NAMES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
               torch.float64: "F64"}


def little_endian_bytes(tensor):
    assert struct.pack("=H", 1) == struct.pack("<H", 1), "written on a little-endian machine"
    return tensor.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def write_safetensors(path, tensors):
    # larger items first (so that each tensor starts at a multiple of its item size), then by name
    order = sorted(tensors, key=lambda n: (-tensors[n].element_size(), n))
    header = {"__metadata__": {"format": "pt"}}
    data = b""
    for name in order:
        raw = little_endian_bytes(tensors[name])
        header[name] = {"dtype": DTYPE_NAMES[tensors[name].dtype],
                        "shape": list(tensors[name].shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def main():
    write_safetensors("widen.safetensors", TENSORS)
    for name, tensor in TENSORS.items():
        np.save("expected_" + name + ".npy", tensor.float().numpy())


if __name__ == "__main__":
    main()
