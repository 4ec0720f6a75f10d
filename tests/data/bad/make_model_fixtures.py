#!/usr/bin/python3
"""Writes the small model and block files that docs/errors.md and tests/test_model.cpp use.

Run once, by hand: python3 tests/data/bad/make_model_fixtures.py (standard library only: the
.npy format is written by hand, so no numpy is needed). tiny_model.npz is a one-layer
character model (d_model 4, one head, d_ff 8, context 16) over the vocabulary
0 (unknown), 'a', 'b', ESC and U+202E (right-to-left override); each other file changes it
in one place, except many_heads.npz: 3 layers of 32 heads (d_model 32) over 128 positions,
whose SVG of every head would pass the 256 MiB bound, and long_context.npz: 4 layers over
1024 positions and 1000 tokens, 52 KiB on disk, whose run over a full context holds about
30 MiB (every layer's (1, 1, N, N) weights and the (1, N, V) logits) for --max-memory tests.
"""
import io
import os
import struct
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = [0, ord("a"), ord("b"), 0x1B, 0x202E]


def npy_bytes(values, shape, dtype):
    """A C-order .npy (version 1.0) of `values` as '<f4', '<i8', '<u8' or '<u2'."""
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        dtype, "".join("%d, " % s for s in shape) if len(shape) == 1 else ", ".join(map(str, shape)))
    padding = 64 - (10 + len(header) + 1) % 64
    header += " " * padding + "\n"
    code = {"<f4": "<%df", "<i8": "<%dq", "<u8": "<%dQ", "<u2": "<%dH"}[dtype]
    return (b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") +
            struct.pack(code % len(values), *values))


def floats(shape, scale=0.1):
    """Deterministic small values: a fixed pattern, no randomness needed."""
    count = 1
    for s in shape:
        count *= s
    return ([scale * (((i * 7) % 11) - 5) / 5 for i in range(count)], shape, "<f4")


def ones(n):
    return ([1.0] * n, (n,), "<f4")


def zeros(n):
    return ([0.0] * n, (n,), "<f4")


def model(E=4, F=8, CONTEXT=16, heads=(1,), vocab=None):
    vocab = vocab or (VOCAB, (len(VOCAB),), "<i8")
    V = len(vocab[0])
    arrays = {
        "vocab": vocab,
        "heads": (list(heads), (len(heads),), "<i8"),
        "token_embedding.weight": floats((V, E), 1.0),
        "position_embedding.weight": floats((CONTEXT, E), 0.5),
        "norm.weight": ones(E), "norm.bias": zeros(E),
        "lm_head.weight": floats((V, E)), "lm_head.bias": zeros(V),
    }
    for layer in range(len(heads)):
        arrays.update({"layers.%d.%s" % (layer, name): value for name, value in {
            "norm1.weight": ones(E), "norm1.bias": zeros(E),
            "norm2.weight": ones(E), "norm2.bias": zeros(E),
            "linear1.weight": floats((F, E)), "linear1.bias": zeros(F),
            "linear2.weight": floats((E, F)), "linear2.bias": zeros(E),
            "self_attn.in_proj_weight": floats((3 * E, E)),
            "self_attn.in_proj_bias": zeros(3 * E),
            "self_attn.out_proj.weight": floats((E, E)),
            "self_attn.out_proj.bias": zeros(E),
        }.items()})
    return arrays


def changed(arrays, name, index, value):
    values, shape, dtype = arrays[name]
    values = list(values)
    values[index] = value
    return {**arrays, name: (values, shape, dtype)}


def write(name, arrays):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for key, (values, shape, dtype) in arrays.items():
            archive.writestr(key + ".npy", npy_bytes(values, shape, dtype))
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(buffer.getvalue())


good = model()
write("tiny_model.npz", good)
write("model_nan_ffn.npz", changed(good, "layers.0.linear1.weight", 9, float("nan")))
write("model_inf_norm.npz", changed(good, "layers.0.norm2.bias", 2, float("inf")))
huge = {**good, "layers.0.linear1.weight": ([3e38] * 32, (8, 4), "<f4"),
        "layers.0.linear2.weight": ([3e38] * 32, (4, 8), "<f4")}
write("model_huge_ffn.npz", huge)
write("model_huge_embedding.npz", {**good, "token_embedding.weight": ([3e38] * 20, (5, 4), "<f4"),
                                   "position_embedding.weight": ([3e38] * 64, (16, 4), "<f4")})
write("model_huge_head.npz", {**good, "lm_head.weight": ([3e38] * 20, (5, 4), "<f4")})
write("model_huge_heads.npz", {**good, "heads": ([2**64 - 1], (1,), "<u8")})
write("model_surrogate.npz", changed(good, "vocab", 2, 0xD800))
block = {k[len("layers.0."):]: v for k, v in good.items() if k.startswith("layers.0.")}
write("block_nan.npz", changed(block, "linear2.bias", 1, float("nan")))
write("block_huge_ffn.npz", {k[len("layers.0."):]: v for k, v in huge.items()
                             if k.startswith("layers.0.")})
write("prefixed_block.npz", {"encoder." + k: v for k, v in
                             {"layers.0." + k: v for k, v in block.items()}.items()})
write("many_heads.npz", model(E=32, CONTEXT=128, heads=(32, 32, 32)))
# 0 (unknown), then the 999 code points from U+0020, stored as uint16 to stay small
write("long_context.npz", model(CONTEXT=1024, heads=(1, 1, 1, 1),
                                vocab=([0] + list(range(0x20, 0x20 + 999)), (1000,), "<u2")))
