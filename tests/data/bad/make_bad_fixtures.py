#!/usr/bin/python3
"""Writes the defective .npy/.npz files that docs/errors.md lists and tests/test_errors.cpp runs.

Run once, by hand: /usr/bin/python3 tests/data/bad/make_bad_fixtures.py (numpy 1.24).
Each file has one defect; the good files (x.npy, weights.npz) are the base the defects
start from: self-attention inputs (B=2, N=5, d_model=16) and a packed nn.MultiheadAttention
state dict for d_model 16.
"""
import io
import os
import struct
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def npy_bytes(array, fortran=False):
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.asfortranarray(array) if fortran else array)
    return buffer.getvalue()


def npz_bytes(arrays, compressed=False):
    buffer = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buffer, **arrays)
    return buffer.getvalue()


def header_only(header_dict):
    """An .npy version 1.0 file holding just this header text and no data."""
    text = header_dict.encode() + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text


def halves(shape, dtype=np.float32):
    return (np.arange(int(np.prod(shape))).reshape(shape) % 7 / 2 - 1.5).astype(dtype)


x = halves((2, 5, 16))
state = {
    "in_proj_weight": halves((48, 16)) / 8,
    "in_proj_bias": halves((48,)) / 16,
    "out_proj.weight": halves((16, 16)) / 8,
    "out_proj.bias": halves((16,)) / 16,
}

write("x.npy", npy_bytes(x))
write("weights.npz", npz_bytes(state))

# .npy defects
good = npy_bytes(x)
write("truncated.npy", good[: len(good) - 10])
write("truncated_header.npy", good[:40])
write("oversized_header.npy", good[:8] + struct.pack("<H", 60000) + good[10:])
write("not_npy.npy", b"B,N,d_model\n2,5,16\n")
write("float16.npy", npy_bytes(x.astype(np.float16)))
write("complex.npy", npy_bytes(x.astype(np.complex64)))
write("int32.npy", npy_bytes(x.astype(np.int32)))
write("rank2.npy", npy_bytes(x[0]))  # unbatched (N, d_model): a bad key beside a batched query
# Read since issue 13 (test_npy checks that they equal x.npy), no longer defects:
write("fortran.npy", npy_bytes(x, fortran=True))
write("big_endian.npy", npy_bytes(x.astype(">f4")))
write("structured.npy", npy_bytes(np.zeros(3, dtype=[("a", "<f4"), ("b", "<i4")])))
write("overflow_shape.npy",
      header_only("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 2), }"))
write("huge_dimension.npy",
      header_only("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 1), }"))
nan = x.copy()
nan[1, 2, 3] = np.nan
nan[1, 4, 0] = np.nan
write("nan.npy", npy_bytes(nan))
inf = x.copy()
inf[0, 3, 15] = -np.inf
write("inf.npy", npy_bytes(inf))
too_big = x.astype(np.float64)
too_big[0, 0, 1] = 1e39
write("beyond_float32.npy", npy_bytes(too_big))

# .npz containers
packed = npz_bytes(state)
write("compressed.npz", npz_bytes(state, compressed=True))
corrupt = bytearray(packed)
corrupt[200] ^= 0xFF  # inside the first entry's data
write("bad_crc.npz", bytes(corrupt))
directory_offset = struct.unpack("<I", packed[-6:-2])[0]  # from the end record
write("truncated_directory.npz", packed[: directory_offset + 30] + packed[-22:])
write("not_zip.npz", npy_bytes(x))

# state dicts
write("missing_array.npz", npz_bytes({k: v for k, v in state.items() if k != "out_proj.weight"}))
write("extra_array.npz", npz_bytes({**state, "attn_scale": halves((1, 1, 16))}))
write("bias_k_only.npz", npz_bytes({**state, "bias_k": halves((1, 1, 16))}))
write("misshaped_array.npz", npz_bytes({**state, "out_proj.weight": halves((16, 8))}))
write("int_weights.npz", npz_bytes({**state, "in_proj_weight": state["in_proj_weight"].astype(np.int64)}))
nan_weight = state["out_proj.weight"].copy()
nan_weight[5, 7] = np.nan
write("nan_weights.npz", npz_bytes({**state, "out_proj.weight": nan_weight}))
inf_bias = state["in_proj_bias"].copy()
inf_bias[40] = np.inf
write("inf_bias.npz", npz_bytes({**state, "in_proj_bias": inf_bias}))
write("unknown_names.npz", npz_bytes({"linear.weight": halves((16, 16))}))
write("num_heads_float.npz", npz_bytes({**state, "num_heads": np.float64(4)}))

# masks (for x.npy: N = M = 5, B = 2)
write("mask_wrong_shape.npy", npy_bytes(np.triu(np.ones((4, 4), dtype=bool), 1)))
write("mask_float16.npy", npy_bytes(np.zeros((5, 5), dtype=np.float16)))
nan_mask = np.zeros((5, 5), dtype=np.float32)
nan_mask[2, 1] = np.nan
write("mask_nan.npy", npy_bytes(nan_mask))
plus_inf_mask = np.zeros((5, 5), dtype=np.float32)
plus_inf_mask[0, 4] = np.inf
write("mask_plus_inf.npy", npy_bytes(plus_inf_mask))
write("mask_4d_wrong.npy", npy_bytes(np.zeros((3, 1, 5, 5), dtype=bool)))  # B is 2, not 3
write("padding_wrong_shape.npy", npy_bytes(np.zeros((2, 4), dtype=bool)))

# zero-size dimensions (refused, naming the file and the dimension)
write("zero_d_model.npy", npy_bytes(np.zeros((1, 4, 0), dtype=np.float32)))
write("zero_seq_len.npy", npy_bytes(np.zeros((1, 0, 4), dtype=np.float32)))
write("zero_batch.npy", npy_bytes(np.zeros((0, 4, 4), dtype=np.float32)))
empty = np.zeros((0, 0), dtype=np.float32)
write("zero_e.npz", npz_bytes({"in_proj_weight": empty, "out_proj.weight": empty}))
write("zero_e_scratch.npz", npz_bytes({f"W_{p}.weight": empty for p in "qkvo"}))

# finite float32 inputs whose scores q·k/sqrt(d_k) pass float32's range with the seeded weights
write("huge_values.npy", npy_bytes(np.full((1, 3, 16), 1e30, dtype=np.float32)))
# a finite dO for x.npy's output whose gradients pass float32's range
write("huge_grad_output.npy", npy_bytes(np.full((2, 5, 16), 3e38, dtype=np.float32)))
