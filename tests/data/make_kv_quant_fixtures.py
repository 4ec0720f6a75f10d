# Makes the quantised-KV-cache fixtures (--decode T --kv-quant ...): a reference quantiser
# written here from the rule in docs/decode.md, independent of mha's C++.
#
# The rule (KIVI's asymmetric min-max per group, float32): for a group x,
#     m = min x,  s = (max x - m) / (2^bits - 1),
#     q = clamp(round_half_even((x - m) / s), 0, 2^bits - 1),  x_hat = s * q + m,
# and x_hat = m (s = 0) when max x = min x. Token groups run along d_k within one position;
# channel groups run along the positions within one channel, and only whole groups are
# quantised; the last R positions stay float.
#
# Fixed K and V: the weights make mha's cache hold the input itself (k_proj and v_proj pick
# columns of x with ones and zeros, no biases: x·1 + 0 + ... is exact in float32), so the
# float cache mha fills is known here to the bit. Each case folder under tests/data/kv_quant/
# holds weights.npz (Hugging Face names, q_proj ... o_proj), query.npy (B, T, d_model) and
# expected.npz: k_cache.dequantised and v_cache.dequantised (B, G, T, d_k) once all T are
# cached, k_cache.scale / .zero and v_cache.scale / .zero (token axis: (B, G, Q, d_k/g);
# channel: (B, G, Q/g, d_k)), all float32 and compared bit for bit, and output (B, T,
# d_model): each token attending over the cache dequantised as it stood then, in float64.
# tests/data/kv_quant_cases.txt lists "<case> <mha options>".
#
# Run from the repository root (PyTorch 1.13, NumPy 1.24); it rewrites tests/data/kv_quant/:
#
#     /usr/bin/python3 tests/data/make_kv_quant_fixtures.py

import os
import shutil

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "kv_quant")
CASES_FILE = os.path.join(HERE, "kv_quant_cases.txt")
F32 = np.float32
B, T, E, H, D_K = 2, 7, 16, 2, 8


def quantise_groups(groups, bits):
    """groups (..., g): each last-axis row a group. Returns x_hat, scale, zero (float32)."""
    zero = groups.min(axis=-1, keepdims=True)
    top = groups.max(axis=-1, keepdims=True)
    scale = ((top - zero) / F32(2 ** bits - 1)).astype(F32)
    flat = scale == 0
    safe = np.where(flat, F32(1), scale)
    codes = np.clip(np.rint((groups - zero) / safe), 0, 2 ** bits - 1).astype(F32)  # rint: ties to even
    x_hat = np.where(flat, zero, scale * codes + zero).astype(F32)
    return x_hat, scale[..., 0], zero[..., 0]


def quantised_count(length, axis, group, residual):
    old = max(length - residual, 0)
    return old if axis == "token" else old // group * group


def quantise_cache(cache, bits, axis, group, residual):
    """cache (B, G, L, d_k) -> its dequantised copy, scales and zeros of the quantised part."""
    b, g, length, d_k = cache.shape
    count = quantised_count(length, axis, group, residual)
    out = cache.copy()
    part = cache[:, :, :count]
    if axis == "token":  # (B, G, Q, d_k/g, g)
        x_hat, scale, zero = quantise_groups(part.reshape(b, g, count, d_k // group, group), bits)
        out[:, :, :count] = x_hat.reshape(b, g, count, d_k)
    else:  # (B, G, Q/g, g, d_k) -> groups along the positions: move them last
        grouped = part.reshape(b, g, count // group, group, d_k).transpose(0, 1, 2, 4, 3)
        x_hat, scale, zero = quantise_groups(grouped, bits)
        out[:, :, :count] = x_hat.transpose(0, 1, 2, 4, 3).reshape(b, g, count, d_k)
    return out, scale, zero


def decode(x, p, kv_heads, quant):
    """Token by token over the cache as it stands after each token, in float64."""
    bits, k_axis, v_axis, k_group, v_group, residual = quant
    d64 = lambda a: torch.from_numpy(a.astype(np.float64))
    k = (x @ p["k_proj.weight"].T).reshape(B, T, kv_heads, D_K).transpose(0, 2, 1, 3)
    v = (x @ p["v_proj.weight"].T).reshape(B, T, kv_heads, D_K).transpose(0, 2, 1, 3)
    q = d64(x) @ d64(p["q_proj.weight"]).T  # (B, T, h·d_k)
    rows = []
    for t in range(T):
        k_hat = d64(quantise_cache(k[:, :, :t + 1], bits, k_axis, k_group, residual)[0])
        v_hat = d64(quantise_cache(v[:, :, :t + 1], bits, v_axis, v_group, residual)[0])
        k_hat = k_hat.repeat_interleave(H // kv_heads, dim=1)
        v_hat = v_hat.repeat_interleave(H // kv_heads, dim=1)
        q_t = q[:, t].reshape(B, H, 1, D_K)
        weights = torch.softmax(q_t @ k_hat.transpose(-2, -1) / D_K ** 0.5, dim=-1)
        rows.append((weights @ v_hat).reshape(B, H * D_K))
    concat = torch.stack(rows, dim=1)
    out = concat @ d64(p["o_proj.weight"]).T
    k_all = quantise_cache(k, bits, k_axis, k_group, residual)
    v_all = quantise_cache(v, bits, v_axis, v_group, residual)
    return out.numpy().astype(F32), k_all, v_all


def inputs(seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=(B, T, E)).astype(F32)
    x[:, :, 5] = F32(0.5)  # one channel of K constant: channel groups with max = min
    x[0, 0, 8:12] = [0.0, 0.9375, 0.15625, 0.21875]  # int4 s = 1/16: ties 2.5, 3.5 -> 2, 4
    x[1, 0:3, 9] = [0.0, 0.9375, 0.15625]  # along the tokens too
    return x


def weights(seed, kv_heads):
    rng = np.random.default_rng(seed)
    width = kv_heads * D_K
    pick = lambda first: np.eye(width, E, k=first, dtype=F32)  # row i: 1 at column first + i
    return {"q_proj.weight": rng.uniform(-0.5, 0.5, size=(H * D_K, E)).astype(F32),
            "k_proj.weight": pick(0), "v_proj.weight": pick(E - width),
            "o_proj.weight": rng.uniform(-0.5, 0.5, size=(E, H * D_K)).astype(F32)}


CASES = [  # name, options, kv_heads, (bits, K axis, V axis, K group, V group, residual)
    ("int4_kivi_default", "--kv-quant int4", 2, (4, "channel", "token", 7, 8, 0)),
    ("int4_kivi_group2", "--kv-quant int4 --kv-quant-group 2", 2, (4, "channel", "token", 2, 2, 0)),
    ("int4_token_group4", "--kv-quant int4 --kv-quant-axis token --kv-quant-group 4", 2,
     (4, "token", "token", 4, 4, 0)),
    ("int8_token_residual", "--kv-quant int8 --kv-quant-axis token --kv-quant-group 4 "
     "--kv-residual 2", 2, (8, "token", "token", 4, 4, 2)),
    ("int4_channel_gqa", "--kv-quant int4 --kv-quant-axis channel --kv-quant-group 3 "
     "--kv-residual 1 --kv-heads 1", 1, (4, "channel", "channel", 3, 3, 1)),
]


def main():
    shutil.rmtree(OUT_DIR, ignore_errors=True)
    lines = ["# <case> <mha options>; the test adds --decode 7 --heads 2 --weights, --input and --save"]
    for seed, (name, options, kv_heads, quant) in enumerate(CASES):
        folder = os.path.join(OUT_DIR, name)
        os.makedirs(folder)
        x = inputs(seed)
        p = weights(100 + seed, kv_heads)
        out, (k_hat, k_scale, k_zero), (v_hat, v_scale, v_zero) = decode(x, p, kv_heads, quant)
        np.savez(os.path.join(folder, "weights.npz"), **p)
        np.save(os.path.join(folder, "query.npy"), x)
        np.savez(os.path.join(folder, "expected.npz"), output=out,
                 **{"k_cache.dequantised": k_hat, "v_cache.dequantised": v_hat,
                    "k_cache.scale": k_scale, "k_cache.zero": k_zero,
                    "v_cache.scale": v_scale, "v_cache.zero": v_zero})
        lines.append(name + " " + options)
    with open(CASES_FILE, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
