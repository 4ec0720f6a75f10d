# Makes the fixtures for the modern attention features: RoPE (both layouts), ALiBi,
# sliding windows with attention sinks, logit soft-capping, QK-norm and multi-head
# latent attention (MLA).
#
# Every reference below is written from the papers' definitions, computed in float64
# and cast to float32 when written:
#   RoPE      Su et al. 2021, RoFormer, eq. 34: pairs rotated by position * theta^(-2i/d)
#   ALiBi     Press et al. 2022, Train Short, Test Long, section 3 and its slope rule
#   window    Jiang et al. 2023, Mistral 7B, section 2 (query p sees keys p - W < j <= p)
#   sinks     Xiao et al. 2024, StreamingLLM, section 3.2 (the first S keys stay visible)
#   soft-cap  Gemma Team 2024, Gemma 2, section 2 (C * tanh(scores / C))
#   head_dim, query_pre_attn_scalar  Gemma 2's heads are wider than d_model / h and its
#             scores are scaled by 1/sqrt(query_pre_attn_scalar) (config.json; Hugging
#             Face's Gemma2Attention); nn.MultiheadAttention cannot express either
#   QK-norm   RMSNorm (Zhang & Sennrich 2019) of each head's q and k, as Qwen 3 applies it
#   block     nn.TransformerEncoderLayer's pre- and post-LN steps around a layer whose
#             heads are not d_model / h wide (checked against the nn modules themselves)
#   MLA       DeepSeek-AI 2024, DeepSeek-V2, section 2.1, eq. 9-19, in the Hugging Face
#             state-dict layout (kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj) and in the
#             paper's separate matrices (W_dkv, W_kr, W_uk, W_uv)
#
# Two kinds of files, both under tests/data/modern/:
#   units/<topic>.npz   inputs and expected values of one core function each
#   <case>/             a whole attention layer like tests/data/parity/<case>/ (weights.npz,
#                       query.npy, key.npy/value.npy for cross-attention, expected.npz with
#                       output and attn_weights), listed with its mha options in
#                       tests/data/modern_cases.txt
#
# Run from the repository root (PyTorch 1.13, NumPy 1.24); it rewrites tests/data/modern/:
#
#     /usr/bin/python3 tests/data/make_modern_fixtures.py
#
# or, to rewrite only the masked MLA folders (mla_masked, mla_window_softcap, each with the
# mha options of its case in options.txt):
#
#     /usr/bin/python3 tests/data/make_modern_fixtures.py mla-masked
#
# or only the MLA layer decoded token by token with its latent cache (mla_decode):
#
#     /usr/bin/python3 tests/data/make_modern_fixtures.py mla-decode
#
# Each computation is checked a second, independent way before anything is written
# (complex multiplication for RoPE, the weight permutation between the RoPE layouts, an
# explicit loop for the masks, float32 nn.Module forms for the layers, the absorbed form
# for MLA); the script prints the largest difference of each check.

import math
import os
import shutil
import sys

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "modern")
UNITS_DIR = os.path.join(OUT_DIR, "units")
CASES_FILE = os.path.join(HERE, "modern_cases.txt")

TOLERANCE = 1e-5  # largest difference accepted between two computations
RMS_EPS = 1e-6    # the RMSNorm epsilon of Qwen 3, OLMo 2 and DeepSeek-V2's configs
D64 = torch.float64

report = []  # (what, max difference), printed at the end


def check(a, b, what, tolerance=TOLERANCE):
    diff = float((torch.as_tensor(a, dtype=D64) - torch.as_tensor(b, dtype=D64)).abs().max())
    assert diff <= tolerance, f"{what}: max difference {diff:.3g} > {tolerance}"
    report.append((what, diff))
    return diff


def f32(t):
    return np.ascontiguousarray(torch.as_tensor(t).to(torch.float32).numpy())


# ------------------------------------------------------------- the references (float64)


def inv_freq(d, theta):
    """theta^(-2i/d) for i = 0 .. d/2 - 1."""
    i = torch.arange(d // 2, dtype=D64)
    return theta ** (-2.0 * i / d)


def angles(positions, d, theta):
    """(L) positions -> (L, d/2) angles position * inv_freq[i]."""
    return torch.as_tensor(positions, dtype=D64)[:, None] * inv_freq(d, theta)[None, :]


def rope(x, positions, theta, layout):
    """x (..., L, d) rotated: half pairs (x[i], x[i + d/2]); interleaved pairs (x[2i], x[2i+1])."""
    d = x.shape[-1]
    a = angles(positions, d, theta)
    cos, sin = a.cos(), a.sin()
    if layout == "half":
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = x1 * cos - x2 * sin
    out[..., 1::2] = x1 * sin + x2 * cos
    return out


def rope_complex(x, positions, theta):
    """The interleaved layout a second way: each pair a complex number times e^(i angle)."""
    d = x.shape[-1]
    z = torch.view_as_complex(x.reshape(*x.shape[:-1], d // 2, 2).contiguous())
    turned = z * torch.polar(torch.ones_like(angles(positions, d, theta)), angles(positions, d, theta))
    return torch.view_as_real(turned).reshape(x.shape)


def interleaved_to_half_rows(w, heads):
    """W (h·d_k, in) of the interleaved layout -> the rows the half layout needs: within each
    head, half row i = interleaved row 2i and half row i + d_k/2 = interleaved row 2i + 1."""
    out_features, in_features = w.shape
    d = out_features // heads
    return w.reshape(heads, d // 2, 2, in_features).transpose(1, 2).reshape(out_features, in_features)


def alibi_slopes(h):
    """Press et al.: 2^(-8(i+1)/h) for h a power of two; otherwise the slopes of the largest
    power of two n < h, followed by every other slope of 2n (the odd-numbered ones) until
    there are h."""
    def power_of_two(n):
        return [2.0 ** (-8.0 * (i + 1) / n) for i in range(n)]
    n = 2 ** int(math.floor(math.log2(h)))
    if n == h:
        return torch.tensor(power_of_two(h), dtype=D64)
    return torch.tensor(power_of_two(n) + power_of_two(2 * n)[0::2][: h - n], dtype=D64)


def alibi_bias(h, N, M):
    """(h, N, M) bias -m_i |p - j| with query i at position p = i + M - N."""
    p = torch.arange(N, dtype=D64)[:, None] + (M - N)
    j = torch.arange(M, dtype=D64)[None, :]
    return -alibi_slopes(h)[:, None, None] * (p - j).abs()[None]


def allowed(N, M, causal=True, window=None, sinks=0):
    """(N, M) bool: which keys each query sees; query i is at position p = i + M - N."""
    p = torch.arange(N)[:, None] + (M - N)
    j = torch.arange(M)[None, :]
    keep = j <= p if causal else torch.ones(N, M, dtype=torch.bool)
    if window is not None:
        keep = keep & ((j > p - window) | (j < sinks))
    return keep


def allowed_by_loop(N, M, window, sinks):
    keep = np.zeros((N, M), dtype=bool)
    for i in range(N):
        p = i + M - N
        for j in range(M):
            keep[i, j] = j <= p and (p - window < j or j < sinks)
    return torch.as_tensor(keep)


def softcap(s, cap):
    return cap * torch.tanh(s / cap)


def rms_norm(x, weight):
    return x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + RMS_EPS) * weight


# ------------------------------------------------------------------- unit fixtures


def unit_rope():
    torch.manual_seed(1401)
    x = torch.randn(2, 3, 5, 8, dtype=D64)  # (B, h, L, d_k)
    positions = torch.arange(5)
    half = rope(x, positions, 10000.0, "half")
    interleaved = rope(x, positions, 10000.0, "interleaved")
    check(interleaved, rope_complex(x, positions, 10000.0), "rope interleaved vs complex product")
    # the half layout is the interleaved one after the permutation of the features
    order = torch.cat([torch.arange(0, 8, 2), torch.arange(1, 8, 2)])
    check(rope(x[..., order], positions, 10000.0, "half"), interleaved[..., order],
          "rope half of permuted x vs permuted interleaved")
    offset = torch.arange(3, 8)  # the last 5 of 8 positions, as decode and cross-attention see them
    w = torch.randn(2 * 8, 16, dtype=D64)  # (h·d_k, d_model) with h = 2
    return {
        "x": x, "half": half, "interleaved": interleaved,
        "half_theta500": rope(x, positions, 500.0, "half"),
        "interleaved_theta500": rope(x, positions, 500.0, "interleaved"),
        "half_from3": rope(x, offset, 10000.0, "half"),
        "interleaved_from3": rope(x, offset, 10000.0, "interleaved"),
        "inv_freq": inv_freq(8, 10000.0),
        "w_interleaved": w, "w_half": interleaved_to_half_rows(w, 2),
    }


def unit_alibi():
    out = {}
    for h in (1, 4, 6, 8, 12):
        out[f"slopes_h{h}"] = alibi_slopes(h)
    # Press et al.'s closed form for h = 8: 1/2, 1/4, ..., 1/256
    check(alibi_slopes(8), torch.tensor([2.0 ** -(i + 1) for i in range(8)], dtype=D64),
          "alibi slopes h=8 vs 1/2 .. 1/256")
    out["bias_h6_n4_m6"] = alibi_bias(6, 4, 6)
    return out


def unit_window():
    out = {}
    for name, N, M, W, S in [("w1", 6, 6, 1, 0), ("w3", 6, 6, 3, 0), ("w8", 6, 6, 8, 0),
                             ("w3_s2", 7, 7, 3, 2), ("w2_n2_m6", 2, 6, 2, 0), ("w2_s1_n2_m6", 2, 6, 2, 1)]:
        keep = allowed(N, M, window=W, sinks=S)
        check(keep.to(D64), allowed_by_loop(N, M, W, S).to(D64), f"window {name} vs loop")
        out[name] = keep.to(D64)
    check(out["w8"], allowed(6, 6).to(D64), "window W >= N vs causal")
    return out


def unit_softcap():
    torch.manual_seed(1402)
    s = torch.randn(4, 9, dtype=D64) * 40.0
    return {"scores": s, "cap5": softcap(s, 5.0), "cap50": softcap(s, 50.0)}


def unit_rms_norm():
    torch.manual_seed(1403)
    x = torch.randn(2, 3, 4, 8, dtype=D64)  # (B, h, L, d_k)
    weight = 1.0 + 0.1 * torch.randn(8, dtype=D64)
    # a second way: the root mean square from the norm
    alt = x / (x.norm(dim=-1, keepdim=True) ** 2 / 8 + RMS_EPS).sqrt() * weight
    check(rms_norm(x, weight), alt, "rms norm vs the norm form")
    return {"x": x, "weight": weight, "out": rms_norm(x, weight)}


# ------------------------------------------------------------------ layer fixtures


class ModernAttention(nn.Module):
    """A from-scratch attention layer with the modern options, float32 like a model.

    State dict: W_q, W_k, W_v, W_o (.weight, .bias) and, with qk_norm, q_norm.weight and
    k_norm.weight of shape (d_k). Steps: project, split into heads, [RMSNorm q and k],
    [RoPE q and k], scores / sqrt(d_k), [soft-cap], [+ ALiBi bias], mask, softmax, context.
    """

    def __init__(self, d_model, heads, rope=None, theta=10000.0, alibi=False, causal=False,
                 window=None, sinks=0, cap=None, qk_norm=False, bias=True, head_dim=None,
                 kv_heads=None, scale_base=None):
        super().__init__()
        self.heads, self.d_k = heads, head_dim or d_model // heads
        self.kv_heads, self.scale_base = kv_heads or heads, scale_base
        self.rope, self.theta, self.alibi, self.causal = rope, theta, alibi, causal
        self.window, self.sinks, self.cap, self.qk_norm = window, sinks, cap, qk_norm
        inner, kv = heads * self.d_k, self.kv_heads * self.d_k  # h·d_k, G·d_k
        for name, (fan_in, fan_out) in (("W_q", (d_model, inner)), ("W_k", (d_model, kv)),
                                        ("W_v", (d_model, kv)), ("W_o", (inner, d_model))):
            setattr(self, name, nn.Linear(fan_in, fan_out, bias=bias))
        if qk_norm:
            self.q_norm = nn.Module()
            self.q_norm.weight = nn.Parameter(1.0 + 0.2 * torch.randn(self.d_k))
            self.k_norm = nn.Module()
            self.k_norm.weight = nn.Parameter(1.0 + 0.2 * torch.randn(self.d_k))

    def forward(self, x_q, x_k, x_v, dtype=torch.float32):
        """The layer in the given dtype (float64 for the reference, float32 as a model runs)."""
        sd = {k: v.to(dtype) for k, v in self.state_dict().items()}
        B, N, E = x_q.shape
        M = x_k.shape[1]

        def lin(x, name):
            y = x.to(dtype) @ sd[name + ".weight"].T
            return y + sd[name + ".bias"] if name + ".bias" in sd else y

        def split(x, L, heads):  # (B, L, heads·d_k) -> (B, heads, L, d_k)
            return x.view(B, L, heads, self.d_k).transpose(1, 2)

        G, group = self.kv_heads, self.heads // self.kv_heads  # query head i reads K/V head i // group
        q = split(lin(x_q, "W_q"), N, self.heads)
        k = split(lin(x_k, "W_k"), M, G).repeat_interleave(group, dim=1)
        v = split(lin(x_v, "W_v"), M, G).repeat_interleave(group, dim=1)
        if self.qk_norm:
            q, k = rms_norm(q, sd["q_norm.weight"]), rms_norm(k, sd["k_norm.weight"])
        if self.rope:
            q = rope(q.to(D64), torch.arange(M - N, M), self.theta, self.rope).to(dtype)
            k = rope(k.to(D64), torch.arange(M), self.theta, self.rope).to(dtype)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.scale_base or self.d_k)  # (B, h, N, M)
        if self.cap is not None:
            scores = softcap(scores, self.cap)
        if self.alibi:
            scores = scores + alibi_bias(self.heads, N, M).to(dtype)
        if self.causal or self.window is not None:
            scores = scores.masked_fill(~allowed(N, M, window=self.window, sinks=self.sinks),
                                        float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        context = (weights @ v).transpose(1, 2).reshape(B, N, self.heads * self.d_k)
        return lin(context, "W_o"), weights


def layer_case(name, options, d_model=16, heads=4, B=2, N=6, M=None, **features):
    seed = 1400 + sum(map(ord, name))
    torch.manual_seed(seed)
    module = ModernAttention(d_model, heads, **features)
    with torch.no_grad():
        for pname, param in module.named_parameters():
            if pname.endswith("bias"):
                param.uniform_(-0.1, 0.1)
    x_q = torch.randn(B, N, d_model)
    cross = M is not None
    x_k = torch.randn(B, M, d_model) if cross else x_q
    x_v = torch.randn(B, M, d_model) if cross else x_q
    with torch.no_grad():
        output, weights = module(x_q, x_k, x_v, dtype=D64)
        out32, w32 = module(x_q, x_k, x_v, dtype=torch.float32)
    check(out32, output, f"{name}: float32 module vs float64 output", 1e-5)
    check(w32, weights, f"{name}: float32 module vs float64 weights", 1e-5)
    files = {"query": x_q}
    if cross:
        files.update(key=x_k, value=x_v)
    return name, options, module, files, output, weights


class ModernBlock(nn.Module):
    """A transformer block (nn.TransformerEncoderLayer's steps) around a ModernAttention.

    State dict in the from-scratch names mha reads: attn.* (the layer), ln1, ln2 (LayerNorm,
    eps 1e-5), ffn.0 and ffn.2 (the feed-forward's two Linear layers, GELU between them).
    pre: x + attn(ln1(x)), then + ffn(ln2(.)); post: ln1(x + attn(x)), then ln2(. + ffn(.)).
    """

    def __init__(self, d_model, heads, d_ff, pre, **features):
        super().__init__()
        self.pre = pre
        self.attn = ModernAttention(d_model, heads, **features)
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))

    def forward(self, x, dtype=torch.float32):
        """The block written out in the given dtype: LayerNorm, GELU and residuals by hand."""
        sd = {k: v.to(dtype) for k, v in self.state_dict().items()}
        x = x.to(dtype)

        def norm(y, name):  # (y - mean) / sqrt(biased variance + 1e-5) * gamma + beta
            mean = y.mean(-1, keepdim=True)
            var = ((y - mean) ** 2).mean(-1, keepdim=True)
            return (y - mean) / torch.sqrt(var + 1e-5) * sd[name + ".weight"] + sd[name + ".bias"]

        def ffn(y):  # GELU(u) = u/2 (1 + erf(u / sqrt 2)) between the two Linear layers
            u = y @ sd["ffn.0.weight"].T + sd["ffn.0.bias"]
            return (u / 2 * (1 + torch.erf(u / math.sqrt(2)))) @ sd["ffn.2.weight"].T + sd["ffn.2.bias"]

        if self.pre:
            a = norm(x, "ln1")
            attended, weights = self.attn(a, a, a, dtype)
            h = x + attended
            return h + ffn(norm(h, "ln2")), weights
        attended, weights = self.attn(x, x, x, dtype)
        h = norm(x + attended, "ln1")
        return norm(h + ffn(h), "ln2"), weights

    def modules(self, x):
        """The same block from the nn modules, float32: the second, independent way."""
        if self.pre:
            a = self.ln1(x)
            attended, weights = self.attn(a, a, a)
            h = x + attended
            return h + self.ffn(self.ln2(h)), weights
        attended, weights = self.attn(x, x, x)
        h = self.ln1(x + attended)
        return self.ln2(h + self.ffn(h)), weights


def block_case(name, options, pre, d_model=16, heads=2, d_ff=24, B=2, N=5, **features):
    seed = 1400 + sum(map(ord, name))
    torch.manual_seed(seed)
    module = ModernBlock(d_model, heads, d_ff, pre, **features)
    with torch.no_grad():
        for pname, param in module.named_parameters():
            if pname.endswith("bias"):
                param.uniform_(-0.1, 0.1)
            elif pname.startswith("ln"):  # LayerNorm gains other than 1
                param.uniform_(0.5, 1.5)
    x = torch.randn(B, N, d_model)
    with torch.no_grad():
        output, weights = module(x, dtype=D64)
        out32, w32 = module.modules(x)
    check(out32, output, f"{name}: nn modules (float32) vs the block by hand (float64): output", 1e-5)
    check(w32, weights, f"{name}: nn modules (float32) vs the block by hand (float64): weights", 1e-5)
    return name, options, module, {"query": x}, output, weights


def equal_after_permutation():
    """RoPE interleaved with W_q, W_k equals RoPE half with their rows permuted per head."""
    torch.manual_seed(1410)
    a = ModernAttention(16, 2, rope="interleaved")
    b = ModernAttention(16, 2, rope="half")
    b.load_state_dict(a.state_dict())
    with torch.no_grad():
        for name in ("W_q", "W_k"):
            getattr(b, name).weight.copy_(interleaved_to_half_rows(getattr(a, name).weight, 2))
            getattr(b, name).bias.copy_(
                interleaved_to_half_rows(getattr(a, name).bias[:, None], 2)[:, 0])
        x = torch.randn(1, 5, 16)
        out_a, w_a = a(x, x, x, dtype=D64)
        out_b, w_b = b(x, x, x, dtype=D64)
    check(out_a, out_b, "rope interleaved vs half with permuted W_q, W_k: output", 1e-12)
    check(w_a, w_b, "rope interleaved vs half with permuted W_q, W_k: weights", 1e-12)


def layer_cases():
    return [
        layer_case("rope_half", "--heads 4 --rope half", rope="half"),
        layer_case("rope_interleaved", "--heads 4 --rope interleaved", rope="interleaved"),
        layer_case("rope_half_theta", "--heads 2 --rope half --rope-theta 500000", heads=2,
                   rope="half", theta=500000.0),
        layer_case("rope_half_causal_cross", "--heads 4 --rope half --causal", N=3, M=7,
                   rope="half", causal=True),
        layer_case("rope_interleaved_window", "--heads 4 --rope interleaved --window 3", N=7,
                   rope="interleaved", window=3),
        layer_case("alibi_h4", "--heads 4 --alibi", alibi=True),
        layer_case("alibi_h6_causal", "--heads 6 --alibi --causal", d_model=24, heads=6,
                   alibi=True, causal=True),
        layer_case("window_1", "--heads 4 --window 1", window=1),
        layer_case("window_3", "--heads 4 --window 3", N=8, window=3),
        layer_case("window_8", "--heads 4 --window 8", window=8),
        layer_case("window_3_sinks_2", "--heads 2 --window 3 --sink-tokens 2", heads=2, N=8,
                   window=3, sinks=2),
        layer_case("softcap", "--heads 4 --softcap 2", cap=2.0),
        layer_case("softcap_causal", "--heads 2 --softcap 1.5 --causal", heads=2, cap=1.5,
                   causal=True),
        layer_case("qk_norm", "--heads 4 --qk-norm", qk_norm=True),
        layer_case("qk_norm_rope_causal", "--heads 2 --qk-norm --rope half --causal", heads=2,
                   qk_norm=True, rope="half", causal=True),
        # Gemma 2's shapes in miniature: heads wider than d_model / h, the scale's base
        layer_case("head_dim_wide", "--heads 2 --head-dim 12", heads=2, head_dim=12),
        layer_case("head_dim_narrow_cross", "--heads 4 --head-dim 3 --causal", N=3, M=5,
                   head_dim=3, causal=True),
        layer_case("scale_base", "--heads 4 --scale-base 2", scale_base=2.0),
        layer_case("gemma2_local", "--heads 4 --kv-heads 2 --head-dim 8 --scale-base 6 "
                   "--softcap 1 --rope half --window 3", N=7, head_dim=8, kv_heads=2,
                   scale_base=6.0, cap=1.0, rope="half", window=3),
        layer_case("gemma2_global", "--heads 4 --kv-heads 2 --head-dim 8 --scale-base 6 "
                   "--softcap 1 --rope half --causal", N=7, head_dim=8, kv_heads=2,
                   scale_base=6.0, cap=1.0, rope="half", causal=True),
        # the block around heads wider or narrower than d_model / h: W_o brings the
        # h·d_k-wide concat back to d_model before the residual
        block_case("block_pre_head_dim", "--heads 2 --head-dim 12 --block pre --causal", True,
                   head_dim=12, causal=True),
        block_case("block_post_head_dim", "--heads 4 --head-dim 3 --block post", False,
                   heads=4, head_dim=3),
    ]


# ------------------------------------------------------------------------------ MLA


class LatentAttention(nn.Module):
    """DeepSeek-V2's multi-head latent attention, float32, Hugging Face names.

    q_proj (h·(d_h + d_R), E): per head q = [q_nope (d_h), q_pe (d_R)]
    kv_a_proj_with_mqa (d_c + d_R, E): [c_kv (d_c), k_pe (d_R)]; k_pe is shared by the heads
    kv_a_layernorm.weight (d_c): RMSNorm of c_kv
    kv_b_proj (h·(d_h + d_v), d_c): per head [k_nope (d_h), v (d_v)]
    o_proj (E, h·d_v)
    Scores (q_nope·k_nope + q_pe·k_pe) / sqrt(d_h + d_R); RoPE (half layout) on q_pe, k_pe.
    """

    def __init__(self, E, heads, d_h, d_R, d_c, d_v):
        super().__init__()
        self.h, self.d_h, self.d_R, self.d_c, self.d_v = heads, d_h, d_R, d_c, d_v
        self.q_proj = nn.Linear(E, heads * (d_h + d_R), bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(E, d_c + d_R, bias=False)
        self.kv_a_layernorm = nn.Module()
        self.kv_a_layernorm.weight = nn.Parameter(1.0 + 0.2 * torch.randn(d_c))
        self.kv_b_proj = nn.Linear(d_c, heads * (d_h + d_v), bias=False)
        self.o_proj = nn.Linear(heads * d_v, E, bias=False)

    def forward(self, x, causal):
        B, N, _ = x.shape
        h, d_h, d_R, d_c, d_v = self.h, self.d_h, self.d_R, self.d_c, self.d_v
        q = self.q_proj(x).view(B, N, h, d_h + d_R).transpose(1, 2)  # (B, h, N, d_h + d_R)
        q_nope, q_pe = q.split([d_h, d_R], dim=-1)
        c_kv, k_pe = self.kv_a_proj_with_mqa(x).split([d_c, d_R], dim=-1)  # (B, N, d_c), (B, N, d_R)
        var = c_kv.pow(2).mean(-1, keepdim=True)
        c_kv = c_kv * torch.rsqrt(var + RMS_EPS) * self.kv_a_layernorm.weight
        kv = self.kv_b_proj(c_kv).view(B, N, h, d_h + d_v).transpose(1, 2)  # (B, h, N, d_h + d_v)
        k_nope, v = kv.split([d_h, d_v], dim=-1)
        positions = torch.arange(N)
        q_pe = rope(q_pe.double(), positions, 10000.0, "half").float()
        k_pe = rope(k_pe.double(), positions, 10000.0, "half").float()[:, None]  # (B, 1, N, d_R)
        k = torch.cat([k_nope, k_pe.expand(B, h, N, d_R)], dim=-1)
        scores = torch.cat([q_nope, q_pe], -1) @ k.transpose(-2, -1) / math.sqrt(d_h + d_R)
        if causal:
            scores = scores.masked_fill(~allowed(N, N), float("-inf"))
        weights = scores.softmax(-1)
        context = (weights @ v).transpose(1, 2).reshape(B, N, h * d_v)
        return self.o_proj(context), weights


class PaperLatentAttention(nn.Module):
    """MLA again, written with the paper's separate matrices (DeepSeek-V2 eq. 9-19), float32:
    W_q, W_dkv (d_c, E), W_kr (d_R, E), kv_norm (d_c), W_uk (h·d_h, d_c), W_uv (h·d_v, d_c), W_o.
    These are the from-scratch state-dict names mha reads beside Hugging Face's."""

    def __init__(self, E, heads, d_h, d_R, d_c, d_v):
        super().__init__()
        self.h, self.d_h, self.d_R, self.d_c, self.d_v = heads, d_h, d_R, d_c, d_v
        self.W_q = nn.Linear(E, heads * (d_h + d_R), bias=False)
        self.W_dkv = nn.Linear(E, d_c, bias=False)
        self.W_kr = nn.Linear(E, d_R, bias=False)
        self.kv_norm = nn.Module()
        self.kv_norm.weight = nn.Parameter(torch.ones(d_c))
        self.W_uk = nn.Linear(d_c, heads * d_h, bias=False)
        self.W_uv = nn.Linear(d_c, heads * d_v, bias=False)
        self.W_o = nn.Linear(heads * d_v, E, bias=False)

    def load_hugging_face(self, sd):
        """The same layer from LatentAttention's Hugging Face names."""
        h, d_h, d_c, d_v = self.h, self.d_h, self.d_c, self.d_v
        w_b = sd["kv_b_proj.weight"].view(h, d_h + d_v, d_c)
        self.load_state_dict({
            "W_q.weight": sd["q_proj.weight"],
            "W_dkv.weight": sd["kv_a_proj_with_mqa.weight"][:d_c],
            "W_kr.weight": sd["kv_a_proj_with_mqa.weight"][d_c:],
            "kv_norm.weight": sd["kv_a_layernorm.weight"],
            "W_uk.weight": w_b[:, :d_h].reshape(h * d_h, d_c),
            "W_uv.weight": w_b[:, d_h:].reshape(h * d_v, d_c),
            "W_o.weight": sd["o_proj.weight"],
        })

    def forward(self, x, causal):
        B, N, _ = x.shape
        h, d_h, d_R, d_v = self.h, self.d_h, self.d_R, self.d_v
        c = rms_norm(self.W_dkv(x), self.kv_norm.weight)                 # (B, N, d_c), eq. 9
        k_c = self.W_uk(c).view(B, N, h, d_h).transpose(1, 2)            # eq. 10
        v_c = self.W_uv(c).view(B, N, h, d_v).transpose(1, 2)            # eq. 11
        positions = torch.arange(N)
        k_r = rope(self.W_kr(x).double(), positions, 10000.0, "half").float()  # (B, N, d_R), eq. 17
        q = self.W_q(x).view(B, N, h, d_h + d_R).transpose(1, 2)
        q_c, q_r = q[..., :d_h], rope(q[..., d_h:].double(), positions, 10000.0, "half").float()
        scores = (q_c @ k_c.transpose(-2, -1) + q_r @ k_r[:, None].transpose(-2, -1)) \
            / math.sqrt(d_h + d_R)                                       # eq. 19
        if causal:
            scores = scores.masked_fill(~allowed(N, N), float("-inf"))
        weights = scores.softmax(-1)
        return self.W_o((weights @ v_c).transpose(1, 2).reshape(B, N, h * d_v)), weights


def mla_parts(sd, x, d):
    """The shared first half of both float64 forms: queries, the latent and the RoPE key."""
    h, d_h, d_R, d_c, d_v = d
    B, N, _ = x.shape
    q = (x @ sd["q_proj.weight"].T).view(B, N, h, d_h + d_R).transpose(1, 2)
    q_nope, q_pe = q[..., :d_h], q[..., d_h:]
    a = x @ sd["kv_a_proj_with_mqa.weight"].T
    c_kv = rms_norm(a[..., :d_c], sd["kv_a_layernorm.weight"])  # (B, N, d_c): the cache
    positions = torch.arange(N)
    q_pe = rope(q_pe, positions, 10000.0, "half")
    k_pe = rope(a[..., d_c:], positions, 10000.0, "half")  # (B, N, d_R): cached beside c_kv
    w_b = sd["kv_b_proj.weight"].view(h, d_h + d_v, d_c)
    return q_nope, q_pe, c_kv, k_pe, w_b[:, :d_h], w_b[:, d_h:]  # W_UK (h, d_h, d_c), W_UV (h, d_v, d_c)


def mla_masked_scores(scores, causal, mods):
    """Steps 7-8 after the scale, in mha's order: the soft-cap, the additive masks (attn_mask
    and key padding as one (B, 1, N, N) bias), then the causal rule and the window."""
    N = scores.shape[-1]
    if mods.get("cap"):
        scores = softcap(scores, mods["cap"])
    if mods.get("bias") is not None:
        scores = scores + mods["bias"]
    if causal:
        scores = scores.masked_fill(~allowed(N, N, window=mods.get("window")), float("-inf"))
    return scores


def mla_naive(sd, x, d, causal, mods={}):
    h, d_h, d_R, d_c, d_v = d
    B, N, _ = x.shape
    q_nope, q_pe, c_kv, k_pe, w_uk, w_uv = mla_parts(sd, x, d)
    k_nope = torch.einsum("hdc,bnc->bhnd", w_uk, c_kv)  # (B, h, N, d_h): up-projected keys
    v = torch.einsum("hdc,bnc->bhnd", w_uv, c_kv)       # (B, h, N, d_v)
    scores = (q_nope @ k_nope.transpose(-2, -1) + q_pe @ k_pe[:, None].transpose(-2, -1)) \
        / math.sqrt(d_h + d_R)
    weights = mla_masked_scores(scores, causal, mods).softmax(-1)
    context = (weights @ v).transpose(1, 2).reshape(B, N, h * d_v)
    return context @ sd["o_proj.weight"].T, weights


def mla_absorbed(sd, x, d, causal, mods={}):
    """W_UK folded into the query and W_UV applied after the weighted sum: the keys and values
    are never up-projected; every head reads the (B, N, d_c) latent directly."""
    h, d_h, d_R, d_c, d_v = d
    B, N, _ = x.shape
    q_nope, q_pe, c_kv, k_pe, w_uk, w_uv = mla_parts(sd, x, d)
    q_latent = torch.einsum("bhnd,hdc->bhnc", q_nope, w_uk)  # (B, h, N, d_c)
    scores = (q_latent @ c_kv[:, None].transpose(-2, -1) + q_pe @ k_pe[:, None].transpose(-2, -1)) \
        / math.sqrt(d_h + d_R)
    weights = mla_masked_scores(scores, causal, mods).softmax(-1)
    latent_context = weights @ c_kv[:, None]  # (B, h, N, d_c)
    context = torch.einsum("bhnc,hdc->bhnd", latent_context, w_uv)  # (B, h, N, d_v)
    context = context.transpose(1, 2).reshape(B, N, h * d_v)
    return context @ sd["o_proj.weight"].T, weights


def mla_case(name, causal, seed, E=16, d=(2, 4, 2, 6, 3), N=5):
    """d: h, d_h, d_R, d_c, d_v. Returns the Hugging Face module, the paper-named one with the
    same weights, x, and the float64 naive output and weights."""
    torch.manual_seed(seed)
    module = LatentAttention(E, *d)
    paper = PaperLatentAttention(E, *d)
    paper.load_hugging_face(module.state_dict())
    x = torch.randn(2, N, E)
    sd = {k: v.to(D64) for k, v in module.state_dict().items()}
    with torch.no_grad():
        out32, w32 = module(x, causal=causal)
        paper32, paper_w32 = paper(x, causal=causal)
    out, weights = mla_naive(sd, x.to(D64), d, causal)
    out_abs, weights_abs = mla_absorbed(sd, x.to(D64), d, causal)
    check(out_abs, out, f"{name}: absorbed vs naive: output", 1e-12)
    check(weights_abs, weights, f"{name}: absorbed vs naive: weights", 1e-12)
    check(out32, out, f"{name}: float32 Hugging Face module vs naive: output")
    check(w32, weights, f"{name}: float32 Hugging Face module vs naive: weights")
    check(paper32, out, f"{name}: float32 paper-named module vs naive: output")
    check(paper_w32, weights, f"{name}: float32 paper-named module vs naive: weights")
    return module, paper, x, out, weights


def mla_decode(sd, x, d):
    """MLA decoded token by token with a latent cache, as DeepSeek-V2 serves it (section 2.1.2:
    only c_kv and the decoupled RoPE key are cached): token t projects only x[:, t], appends
    c_kv_t (after its RMSNorm) and k_pe_t (rotated to position t) to the cache, then up-projects
    every head's k_nope and v from all the cached latents and attends with its one query, no
    causal mask (later tokens are not cached yet). In sd's dtype. Returns the (B, T, E) output,
    the (B, h, T, T) weights (zero above the diagonal) and the cache (B, T, d_c + d_R)."""
    h, d_h, d_R, d_c, d_v = d
    B, T, _ = x.shape
    w_b = sd["kv_b_proj.weight"].view(h, d_h + d_v, d_c)
    latents, rope_keys, outputs = [], [], []
    weights = torch.zeros(B, h, T, T, dtype=x.dtype)
    for t in range(T):
        x_t = x[:, t:t + 1]                                              # (B, 1, E)
        q = (x_t @ sd["q_proj.weight"].T).view(B, 1, h, d_h + d_R).transpose(1, 2)
        turn = lambda part: rope(part.double(), torch.tensor([t]), 10000.0, "half").to(x.dtype)
        q_nope, q_pe = q[..., :d_h], turn(q[..., d_h:])
        a = x_t @ sd["kv_a_proj_with_mqa.weight"].T                      # (B, 1, d_c + d_R)
        latents.append(rms_norm(a[..., :d_c], sd["kv_a_layernorm.weight"]))
        rope_keys.append(turn(a[..., d_c:]))                             # rotated, then cached
        c_kv, k_pe = torch.cat(latents, 1), torch.cat(rope_keys, 1)     # (B, t+1, d_c), (B, t+1, d_R)
        k_nope = torch.einsum("hdc,bnc->bhnd", w_b[:, :d_h], c_kv)       # (B, h, t+1, d_h)
        v = torch.einsum("hdc,bnc->bhnd", w_b[:, d_h:], c_kv)            # (B, h, t+1, d_v)
        scores = (q_nope @ k_nope.transpose(-2, -1) + q_pe @ k_pe[:, None].transpose(-2, -1)) \
            / math.sqrt(d_h + d_R)                                       # (B, h, 1, t+1)
        p = scores.softmax(-1)
        weights[:, :, t, :t + 1] = p[:, :, 0]
        outputs.append((p @ v).transpose(1, 2).reshape(B, 1, h * d_v) @ sd["o_proj.weight"].T)
    return torch.cat(outputs, 1), weights, torch.cat([c_kv, k_pe], -1)


def write_mla_decode():
    """tests/data/modern/mla_decode/: mla_causal's layer (same seed, sizes and x) decoded with
    a latent cache, in float64 and float32, each checked against the one-shot causal pass."""
    name, seed, E, d, N = "mla_decode", 1420, 16, (2, 4, 2, 6, 3), 5
    torch.manual_seed(seed)
    module = LatentAttention(E, *d)
    x = torch.randn(2, N, E)
    sd = {k: v.to(D64) for k, v in module.state_dict().items()}
    out, weights, cache = mla_decode(sd, x.to(D64), d)
    with torch.no_grad():
        out32, weights32, _ = mla_decode(module.state_dict(), x, d)
        one_shot, one_shot_weights = module(x, causal=True)
    full, full_weights = mla_naive(sd, x.to(D64), d, True)
    check(out, full, f"{name}: decoded vs one-shot causal: output", 1e-12)
    check(weights, full_weights, f"{name}: decoded vs one-shot causal: weights", 1e-12)
    check(out32, out, f"{name}: float32 decode vs float64: output")
    check(weights32, weights, f"{name}: float32 decode vs float64: weights")
    check(one_shot, out32, f"{name}: float32 one-shot module vs float32 decode: output")
    check(one_shot_weights, weights32, f"{name}: float32 one-shot module vs decode: weights")
    folder = os.path.join(OUT_DIR, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    write_npz(os.path.join(folder, "weights.npz"), module.state_dict())
    np.save(os.path.join(folder, "query.npy"), f32(x))
    write_npz(os.path.join(folder, "expected.npz"),
              {"output": out, "attn_weights": weights, "latent_cache": cache})


def mla_masked_case(name, seed, mods, files, E=16, d=(2, 4, 2, 6, 3), N=5):
    """MLA with step 8's masks and step 7's soft-cap (always causal: the window is too), from
    the float64 forms of mla_case's layer; checked naive against absorbed, and the masks
    against an explicit loop over the allowed keys."""
    torch.manual_seed(seed)
    module = LatentAttention(E, *d)
    x = torch.randn(2, N, E)
    sd = {k: v.to(D64) for k, v in module.state_dict().items()}
    out, weights = mla_naive(sd, x.to(D64), d, True, mods)
    out_abs, weights_abs = mla_absorbed(sd, x.to(D64), d, True, mods)
    check(out_abs, out, f"{name}: absorbed vs naive: output", 1e-12)
    check(weights_abs, weights, f"{name}: absorbed vs naive: weights", 1e-12)
    blocked = torch.zeros(2, N, N, dtype=torch.bool)
    for b in range(2):
        for i in range(N):
            for j in range(N):
                window = mods.get("window")
                blocked[b, i, j] = (j > i or (window is not None and j <= i - window)
                                    or ("mask" in files and files["mask"][i, j] == -math.inf)
                                    or ("key_padding_mask" in files
                                        and bool(files["key_padding_mask"][b, j])))
    check((weights == 0).all(1), blocked, f"{name}: zero weights where a loop blocks", 0)
    return module, x, out, weights


def mla_masked_cases():
    """(name, mha options, module, x, files, output, weights, mods) of the masked MLA layers
    (mods as mla_naive takes them; make_mla_grad_fixtures.py differentiates the same layers)."""
    N = 5
    mask = torch.tensor([[0.0, 0.0, 0.0, 0.0, 0.0],
                         [0.5, 0.0, 0.0, 0.0, 0.0],
                         [0.0, -math.inf, 0.0, 0.0, 0.0],
                         [-0.25, 0.0, 1.0, -math.inf, 0.0],
                         [0.0, 0.0, -math.inf, 0.3, 0.0]], dtype=D64)
    padding = torch.tensor([[False, False, False, False, True],
                            [False, False, False, True, False]])
    bias = (mask[None] + torch.zeros(2, 1, 1, dtype=D64)
            ).masked_fill(padding[:, None, :], -math.inf)[:, None]  # (B, 1, N, N)
    cases = []
    files = {"mask": mask, "key_padding_mask": padding}
    module, x, out, weights = mla_masked_case("mla_masked", 1422, {"bias": bias}, files, N=N)
    cases.append(("mla_masked", "--causal --mask mask.npy --key-padding-mask key_padding_mask.npy",
                  module, x, files, out, weights, {"bias": bias}))
    mods = {"window": 2, "cap": 0.3}
    module, x, out, weights = mla_masked_case("mla_window_softcap", 1423, mods, {}, N=N)
    cases.append(("mla_window_softcap", "--causal --window 2 --softcap 0.3", module, x, {}, out,
                  weights, mods))
    return cases


def write_mla_masked():
    """Only the masked MLA folders, each with its mha options in options.txt."""
    for name, options, module, x, files, out, weights, _ in mla_masked_cases():
        folder = os.path.join(OUT_DIR, name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        write_npz(os.path.join(folder, "weights.npz"), module.state_dict())
        np.save(os.path.join(folder, "query.npy"), f32(x))
        for fname, value in files.items():
            np.save(os.path.join(folder, fname + ".npy"),
                    value.numpy() if value.dtype == torch.bool else f32(value))
        write_npz(os.path.join(folder, "expected.npz"), {"output": out, "attn_weights": weights})
        with open(os.path.join(folder, "options.txt"), "w") as f:
            f.write(options + "\n")


# ---------------------------------------------------------------------------- writing


def write_npz(path, arrays):
    np.savez(path, **{k: f32(v) for k, v in arrays.items()})


def main():
    shutil.rmtree(OUT_DIR, ignore_errors=True)
    os.makedirs(UNITS_DIR)
    for topic, make in [("rope", unit_rope), ("alibi", unit_alibi), ("window", unit_window),
                        ("softcap", unit_softcap), ("rms_norm", unit_rms_norm)]:
        write_npz(os.path.join(UNITS_DIR, topic + ".npz"), make())
    equal_after_permutation()

    # MLA layers: weights.npz in Hugging Face names, weights_scratch.npz in the paper's, the
    # same numbers; expected.npz also holds the sizes (d_model, h, d_h, d_R, d_c, d_v).
    for name, causal, seed, E, d, N in [("mla_causal", True, 1420, 16, (2, 4, 2, 6, 3), 5),
                                        ("mla_plain", False, 1421, 12, (3, 2, 4, 5, 2), 6)]:
        module, paper, x, out, weights = mla_case(name, causal, seed, E, d, N)
        folder = os.path.join(OUT_DIR, name)
        os.makedirs(folder)
        write_npz(os.path.join(folder, "weights.npz"), module.state_dict())
        write_npz(os.path.join(folder, "weights_scratch.npz"), paper.state_dict())
        np.save(os.path.join(folder, "query.npy"), f32(x))
        write_npz(os.path.join(folder, "expected.npz"),
                  {"output": out, "attn_weights": weights,
                   "sizes": torch.tensor([E, *d], dtype=D64)})

    lines = ["# Layers with the modern options, made by make_modern_fixtures.py: <case folder>",
             "# <extra mha options>. The folders are under tests/data/modern/ and hold the same",
             "# files as tests/data/parity/ cases."]
    for name, options, module, files, output, weights in layer_cases():
        folder = os.path.join(OUT_DIR, name)
        os.makedirs(folder)
        write_npz(os.path.join(folder, "weights.npz"), module.state_dict())
        for fname, value in files.items():
            np.save(os.path.join(folder, fname + ".npy"), f32(value))
        write_npz(os.path.join(folder, "expected.npz"), {"output": output, "attn_weights": weights})
        lines.append(f"{name} {options}")
    with open(CASES_FILE, "w") as f:
        f.write("\n".join(lines) + "\n")
    write_mla_masked()
    write_mla_decode()

    print_report()


def print_report():
    width = max(len(what) for what, _ in report)
    for what, diff in report:
        print(f"{what:<{width}}  {diff:.3g}")


if __name__ == "__main__":
    if sys.argv[1:] == ["mla-masked"]:  # only the masked MLA folders, the rest left as they are
        write_mla_masked()
        print_report()
    elif sys.argv[1:] == ["mla-decode"]:  # only the decoded MLA folder
        write_mla_decode()
        print_report()
    else:
        main()
