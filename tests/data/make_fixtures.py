# Makes the PyTorch parity fixtures that the mha tests compare against.
#
# For every case it writes one folder tests/data/parity/<case>/ holding the
# weights (weights.npz, the module's state_dict), the inputs (query.npy, plus
# key.npy / value.npy for cross-attention), the masks when the case has them
# (mask.npy, key_padding_mask.npy) and PyTorch's answer (expected.npz with
# `output` (B, N, E) and per-head `attn_weights` (B, h, N, M)). It also writes
# tests/data/cases.txt, one line per case: the folder name and the extra
# command-line options the tool needs for it.
#
# Run from the repository root (PyTorch 1.13, NumPy 1.24):
#
#     /usr/bin/python3 tests/data/make_fixtures.py
#
# Every case seeds torch on its own and everything is float32, so running the
# script twice writes byte-identical files. Before writing, the script checks
# each case three ways: the from-scratch modules agree with an
# nn.MultiheadAttention holding the same weights; nn.MultiheadAttention's
# documented path agrees with its fused fast path where that path applies;
# and a float64 NumPy re-computation made only from the files on disk and
# the case's cases.txt options reproduces expected.npz.

import math
import os
import shutil

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
PARITY_DIR = os.path.join(HERE, "parity")
CASES_FILE = os.path.join(HERE, "cases.txt")

TOLERANCE = 1e-5  # largest difference accepted between two computations


# ---------------------------------------------------------------- modules


def fill_biases(module):
    """Replaces every bias (PyTorch zeroes nn.MultiheadAttention's) with U(-0.1, 0.1)."""
    with torch.no_grad():
        for name, param in module.named_parameters():
            if name.endswith("bias"):
                param.uniform_(-0.1, 0.1)


class ScratchAttention(nn.Module):
    """Multi-head attention written the way tutorials write it: four Linear layers.

    `names` gives the attribute names of the query, key, value and output
    projections, so the state dict reads W_q.weight ... or w_q.weight ...
    The mask, when given, is a keep-mask: 0 = blocked, anything else = allowed.
    """

    def __init__(self, d_model, heads, names=("W_q", "W_k", "W_v", "W_o")):
        super().__init__()
        assert d_model % heads == 0
        self.heads = heads
        self.d_k = d_model // heads
        self.names = names
        for name in names:
            setattr(self, name, nn.Linear(d_model, d_model))

    def project(self, x):
        q_name, k_name, v_name, _ = self.names
        return getattr(self, q_name)(x), getattr(self, k_name)(x), getattr(self, v_name)(x)

    def split_heads(self, x):
        B, N, _ = x.shape
        return x.view(B, N, self.heads, self.d_k).transpose(1, 2)  # (B, N, d_model) -> (B, h, N, d_k)

    def forward(self, x, mask=None):
        B, N, d_model = x.shape
        q, k, v = self.project(x)  # each (B, N, d_model)
        Q, K, V = self.split_heads(q), self.split_heads(k), self.split_heads(v)  # each (B, h, N, d_k)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)  # (B, h, N, d_k) x (B, h, d_k, N) -> (B, h, N, N)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (B, h, N, N)
        context = weights @ V  # (B, h, N, N) x (B, h, N, d_k) -> (B, h, N, d_k)
        context = context.transpose(1, 2).contiguous().view(B, N, d_model)  # (B, N, d_model)
        return getattr(self, self.names[3])(context), weights


class FusedScratchAttention(ScratchAttention):
    """Like ScratchAttention, but one Linear(E, 3E) makes q, k and v (in that order)."""

    def __init__(self, d_model, heads):
        nn.Module.__init__(self)
        self.heads = heads
        self.d_k = d_model // heads
        self.names = ("W_qkv", None, None, "W_o")
        self.W_qkv = nn.Linear(d_model, 3 * d_model)
        self.W_o = nn.Linear(d_model, d_model)

    def project(self, x):
        return self.W_qkv(x).split(x.shape[-1], dim=-1)  # (B, N, 3E) -> 3 x (B, N, E)


class GroupedQueryAttention(ScratchAttention):
    """Grouped-query attention: W_k and W_v make only G heads of d_k features, and
    K.repeat_interleave(h // G, dim=1) lets query head i read key/value head i // (h // G).
    G = 1 is multi-query attention."""

    def __init__(self, d_model, heads, kv_heads):
        super().__init__(d_model, heads)
        self.kv_heads = kv_heads
        self.W_k = nn.Linear(d_model, kv_heads * self.d_k)
        self.W_v = nn.Linear(d_model, kv_heads * self.d_k)

    def forward(self, x, mask=None):
        B, N, d_model = x.shape
        G, group = self.kv_heads, self.heads // self.kv_heads
        Q = self.split_heads(self.W_q(x))  # (B, h, N, d_k)
        K = self.W_k(x).view(B, N, G, self.d_k).transpose(1, 2)  # (B, G, N, d_k)
        V = self.W_v(x).view(B, N, G, self.d_k).transpose(1, 2)
        K, V = K.repeat_interleave(group, dim=1), V.repeat_interleave(group, dim=1)  # (B, h, N, d_k)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        context = (weights @ V).transpose(1, 2).contiguous().view(B, N, d_model)
        return self.W_o(context), weights


def expanded_kv(linear, group, d_k):
    """(G·d_k, E) weight and (G·d_k) bias with every head's rows repeated `group` times."""
    E = linear.weight.shape[1]
    weight = linear.weight.view(-1, d_k, E).repeat_interleave(group, dim=0).reshape(-1, E)
    bias = linear.bias.view(-1, d_k).repeat_interleave(group, dim=0).reshape(-1)
    return weight, bias


def scratch_as_torch_mha(scratch, d_model, heads):
    """An nn.MultiheadAttention holding the same weights as a scratch module."""
    mha = nn.MultiheadAttention(d_model, heads, batch_first=True).eval()
    with torch.no_grad():
        if isinstance(scratch, FusedScratchAttention):
            mha.in_proj_weight.copy_(scratch.W_qkv.weight)
            mha.in_proj_bias.copy_(scratch.W_qkv.bias)
        elif isinstance(scratch, GroupedQueryAttention):
            group = heads // scratch.kv_heads
            k_weight, k_bias = expanded_kv(scratch.W_k, group, scratch.d_k)
            v_weight, v_bias = expanded_kv(scratch.W_v, group, scratch.d_k)
            mha.in_proj_weight.copy_(torch.cat([scratch.W_q.weight, k_weight, v_weight]))
            mha.in_proj_bias.copy_(torch.cat([scratch.W_q.bias, k_bias, v_bias]))
        else:
            q, k, v, _ = [getattr(scratch, n) for n in scratch.names]
            mha.in_proj_weight.copy_(torch.cat([q.weight, k.weight, v.weight]))
            mha.in_proj_bias.copy_(torch.cat([q.bias, k.bias, v.bias]))
        out = getattr(scratch, scratch.names[3])
        mha.out_proj.weight.copy_(out.weight)
        mha.out_proj.bias.copy_(out.bias)
    return mha


def max_diff(a, b):
    return float((torch.as_tensor(a, dtype=torch.float64) - torch.as_tensor(b, dtype=torch.float64)).abs().max())


def assert_close(a, b, what):
    diff = max_diff(a, b)
    assert diff <= TOLERANCE, f"{what}: max difference {diff:.3g} > {TOLERANCE}"
    return diff


def run_torch_mha(mha, query, key, value, attn_mask=None, key_padding_mask=None):
    """nn.MultiheadAttention's documented (F.multi_head_attention_forward) path.

    Autograd stays on while the parameters require grad, which is one of the
    conditions that keep 1.13 off its fused fast path. When the fast path
    would apply (self-attention, no attn_mask, even head count), it is run
    too under no_grad and must agree. A module without biases is left out of
    that comparison: 1.13 still enters the fast path then and fails with
    "argument 'qkv_bias' must be Tensor, not NoneType" (pytorch/pytorch#97128).
    """
    mha.eval()
    output, weights = mha(query, key, value, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                          need_weights=True, average_attn_weights=False)
    if mha.in_proj_bias is None:
        return output.detach(), weights.detach()
    with torch.no_grad():
        fast_output, fast_weights = mha(query, key, value, attn_mask=attn_mask,
                                        key_padding_mask=key_padding_mask,
                                        need_weights=True, average_attn_weights=False)
    assert_close(output, fast_output, "no_grad output vs documented path")
    assert_close(weights, fast_weights, "no_grad weights vs documented path")
    return output.detach(), weights.detach()


# ------------------------------------------------------------------ cases
#
# Each case builder returns a dict:
#   module  - the nn.Module whose state_dict goes into weights.npz
#   inputs  - {"query": ..., "key": ..., "value": ...} (only query for self-attention)
#   files   - extra arrays to write ({"mask": ..., "key_padding_mask": ...})
#   output, attn_weights - PyTorch's answer
#   options - the cases.txt options after the case name
#   checks  - notes for the summary line


def self_case(E, h, B, N, bias=True, attn_mask=None, key_padding_mask=None):
    mha = nn.MultiheadAttention(E, h, bias=bias, batch_first=True)
    fill_biases(mha)
    x = torch.randn(B, N, E)
    output, weights = run_torch_mha(mha, x, x, x, attn_mask, key_padding_mask)
    return dict(module=mha, inputs={"query": x}, output=output, attn_weights=weights)


def cross_case(E, h, B, N, M, kdim=None, vdim=None, attn_mask=None, key_padding_mask=None):
    mha = nn.MultiheadAttention(E, h, kdim=kdim, vdim=vdim, batch_first=True)
    fill_biases(mha)
    query = torch.randn(B, N, E)
    key = torch.randn(B, M, kdim or E)
    value = torch.randn(B, M, vdim or E)
    output, weights = run_torch_mha(mha, query, key, value, attn_mask, key_padding_mask)
    return dict(module=mha, inputs={"query": query, "key": key, "value": value},
                output=output, attn_weights=weights)


def assert_no_full_row(blocked, what):
    """`blocked` is a bool tensor (..., N, M); no query may have every key blocked."""
    assert not bool(blocked.all(dim=-1).any()), f"{what}: a query row is fully masked"


def case_self_bias():
    return dict(self_case(E=16, h=4, B=2, N=5), options="--heads 4")


def case_self_nobias():
    case = self_case(E=16, h=4, B=2, N=5, bias=False)
    assert set(case["module"].state_dict()) == {"in_proj_weight", "out_proj.weight"}
    return dict(case, options="--heads 4")


def case_cross():
    return dict(cross_case(E=16, h=4, B=2, N=4, M=6), options="--heads 4")


def case_bool_mask():
    N = 5
    mask = torch.rand(N, N) < 0.4  # True = may not attend
    mask.fill_diagonal_(False)  # every query keeps at least itself
    assert bool(mask.any())
    assert_no_full_row(mask, "bool_mask")
    case = self_case(E=16, h=2, B=2, N=N, attn_mask=mask)
    return dict(case, files={"mask": mask}, options="--heads 2")


def case_float_mask():
    N = 5
    mask = torch.empty(N, N).uniform_(-2.0, 2.0)  # added to the scores
    for i, j in [(0, 3), (2, 0), (2, 4), (4, 1)]:
        mask[i, j] = float("-inf")
    assert_no_full_row(torch.isinf(mask), "float_mask")
    case = self_case(E=16, h=4, B=2, N=N, attn_mask=mask)
    return dict(case, files={"mask": mask}, options="--heads 4")


def case_int_mask_keep():
    N = 5
    keep = (torch.rand(N, N) < 0.7).to(torch.int64)  # 1 = may attend, 0 = blocked
    keep.fill_diagonal_(1)
    assert bool((keep == 0).any())
    assert_no_full_row(keep == 0, "int_mask_keep")
    case = self_case(E=16, h=4, B=2, N=N, attn_mask=(keep == 0))
    return dict(case, files={"mask": keep}, options="--heads 4 --mask-means keep")


def case_mask_per_head():
    E, h, B, N, M = 16, 2, 2, 3, 4
    mask = torch.rand(B * h, N, M) < 0.5  # index b * h + head, True = may not attend
    always_open = torch.randint(0, M, (B * h, N))  # one key per row stays visible
    mask.scatter_(-1, always_open.unsqueeze(-1), False)
    assert_no_full_row(mask, "mask_per_head")
    assert len({tuple(m.flatten().tolist()) for m in mask}) == B * h, "patterns should differ"
    case = cross_case(E=E, h=h, B=B, N=N, M=M, attn_mask=mask)
    return dict(case, files={"mask": mask}, options="--heads 2")


def case_padding():
    B, M = 2, 5
    padding = torch.zeros(B, M, dtype=torch.bool)  # True = ignore this key
    padding[0, M - 1:] = True
    padding[1, M - 2:] = True
    case = cross_case(E=16, h=4, B=B, N=3, M=M, key_padding_mask=padding)
    return dict(case, files={"key_padding_mask": padding}, options="--heads 4")


def case_causal_self():
    N = 6
    causal = torch.triu(torch.ones(N, N, dtype=torch.bool), diagonal=1)
    case = self_case(E=16, h=4, B=2, N=N, attn_mask=causal)
    return dict(case, options="--heads 4 --causal")


def case_causal_cross():
    N, M = 3, 5
    causal = torch.triu(torch.ones(N, M, dtype=torch.bool), diagonal=M - N + 1)  # bottom-right aligned
    assert_no_full_row(causal, "causal_cross")
    case = cross_case(E=16, h=4, B=1, N=N, M=M, attn_mask=causal)
    return dict(case, options="--heads 4 --causal")


def case_causal_and_padding():
    B, N = 2, 5
    causal = torch.triu(torch.ones(N, N, dtype=torch.bool), diagonal=1)
    padding = torch.zeros(B, N, dtype=torch.bool)
    padding[1, N - 1] = True
    assert_no_full_row(causal.unsqueeze(0) | padding.unsqueeze(1), "causal_and_padding")
    case = self_case(E=16, h=2, B=B, N=N, attn_mask=causal, key_padding_mask=padding)
    return dict(case, files={"key_padding_mask": padding}, options="--heads 2 --causal")


def case_kdim_vdim():
    case = cross_case(E=16, h=4, B=2, N=4, M=3, kdim=12, vdim=10)
    shapes = {k: tuple(v.shape) for k, v in case["module"].state_dict().items()}
    assert shapes == {"q_proj_weight": (16, 16), "k_proj_weight": (16, 12), "v_proj_weight": (16, 10),
                      "in_proj_bias": (48,), "out_proj.weight": (16, 16), "out_proj.bias": (16,)}, shapes
    return dict(case, options="--heads 4")


def case_wide():
    return dict(self_case(E=64, h=8, B=2, N=7), options="--heads 8")


def scratch_case(module, E, h, B, N, keep_mask=None):
    """Runs a scratch module and checks it against nn.MultiheadAttention."""
    fill_biases(module)
    module.eval()
    x = torch.randn(B, N, E)
    with torch.no_grad():
        output, weights = module(x, keep_mask)
    reference = scratch_as_torch_mha(module, E, h)
    block = None if keep_mask is None else (keep_mask == 0)
    ref_output, ref_weights = run_torch_mha(reference, x, x, x, attn_mask=block)
    assert_close(output, ref_output, "scratch vs nn.MultiheadAttention output")
    assert_close(weights, ref_weights, "scratch vs nn.MultiheadAttention weights")
    return dict(module=module, inputs={"query": x}, output=output, attn_weights=weights)


def case_scratch():
    return dict(scratch_case(ScratchAttention(16, 4), E=16, h=4, B=2, N=5), options="--heads 4")


def case_scratch_lower_keep():
    N = 4
    keep = torch.tril(torch.ones(N, N, dtype=torch.int64))  # 1 = may attend
    module = ScratchAttention(16, 2, names=("w_q", "w_k", "w_v", "w_o"))
    case = scratch_case(module, E=16, h=2, B=2, N=N, keep_mask=keep)
    return dict(case, files={"mask": keep}, options="--heads 2 --mask-means keep")


def case_scratch_fused():
    return dict(scratch_case(FusedScratchAttention(16, 4), E=16, h=4, B=2, N=5), options="--heads 4")


def fill_norms(module):
    """LayerNorm weights from U(0.5, 1.5) instead of PyTorch's ones (biases: fill_biases)."""
    with torch.no_grad():
        for name, param in module.named_parameters():
            if "norm" in name and name.endswith("weight") or name.startswith("ln") and name.endswith("weight"):
                param.uniform_(0.5, 1.5)


class ScratchBlock(nn.Module):
    """A from-scratch pre-LN transformer block: attn (ScratchAttention), ln1, ln2 and an
    ffn = nn.Sequential(Linear, GELU, Linear), so the state dict reads ffn.0 and ffn.2."""

    def __init__(self, d_model, heads, d_ff):
        super().__init__()
        self.attn = ScratchAttention(d_model, heads)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))

    def forward(self, x, keep_mask=None):
        attended, weights = self.attn(self.ln1(x), keep_mask)
        h = x + attended
        return h + self.ffn(self.ln2(h)), weights


def encoder_layer_case(norm_first):
    E, h, d_ff, B, N = 16, 4, 32, 2, 5
    layer = nn.TransformerEncoderLayer(E, h, dim_feedforward=d_ff, dropout=0.0, activation="gelu",
                                       batch_first=True, norm_first=norm_first).eval()
    fill_biases(layer)
    fill_norms(layer)
    x = torch.randn(B, N, E)
    with torch.no_grad():
        output = layer(x)
        attn_input = layer.norm1(x) if norm_first else x
        _, weights = layer.self_attn(attn_input, attn_input, attn_input, need_weights=True,
                                     average_attn_weights=False)
        # the same block written out by hand must agree with the module
        a = layer.self_attn(attn_input, attn_input, attn_input, need_weights=False)[0]
        ffn = lambda y: layer.linear2(F.gelu(layer.linear1(y)))
        if norm_first:
            h_ = x + a
            manual = h_ + ffn(layer.norm2(h_))
        else:
            h_ = layer.norm1(x + a)
            manual = layer.norm2(h_ + ffn(h_))
    assert_close(output, manual, "nn.TransformerEncoderLayer vs the block by hand")
    kind = "pre" if norm_first else "post"
    return dict(module=layer, inputs={"query": x}, output=output, attn_weights=weights,
                options=f"--heads 4 --block {kind}")


def case_block_pre():
    return encoder_layer_case(norm_first=True)


def case_block_post():
    return encoder_layer_case(norm_first=False)


def case_scratch_block_causal():
    E, h, d_ff, B, N = 16, 2, 24, 2, 4
    block = ScratchBlock(E, h, d_ff).eval()
    fill_biases(block)
    fill_norms(block)
    x = torch.randn(B, N, E)
    keep = torch.tril(torch.ones(N, N, dtype=torch.int64))
    with torch.no_grad():
        output, weights = block(x, keep)
        reference = nn.TransformerEncoderLayer(E, h, dim_feedforward=d_ff, dropout=0.0,
                                               activation="gelu", batch_first=True,
                                               norm_first=True).eval()
        reference.self_attn.load_state_dict(scratch_as_torch_mha(block.attn, E, h).state_dict())
        reference.norm1.load_state_dict(block.ln1.state_dict())
        reference.norm2.load_state_dict(block.ln2.state_dict())
        reference.linear1.load_state_dict(block.ffn[0].state_dict())
        reference.linear2.load_state_dict(block.ffn[2].state_dict())
        causal = torch.triu(torch.ones(N, N, dtype=torch.bool), diagonal=1)
        assert_close(output, reference(x, src_mask=causal), "scratch block vs TransformerEncoderLayer")
    return dict(module=block, inputs={"query": x}, output=output, attn_weights=weights,
                options="--heads 2 --block pre --causal")


def case_gqa():
    module = GroupedQueryAttention(16, 4, kv_heads=2)
    return dict(scratch_case(module, E=16, h=4, B=2, N=5), options="--heads 4 --kv-heads 2")


def case_mqa_causal():
    N = 6
    keep = torch.tril(torch.ones(N, N, dtype=torch.int64))
    module = GroupedQueryAttention(32, 4, kv_heads=1)
    case = scratch_case(module, E=32, h=4, B=2, N=N, keep_mask=keep)
    return dict(case, options="--heads 4 --kv-heads 1 --causal")


CASES = [
    ("self_bias", case_self_bias),
    ("self_nobias", case_self_nobias),
    ("cross", case_cross),
    ("bool_mask", case_bool_mask),
    ("float_mask", case_float_mask),
    ("int_mask_keep", case_int_mask_keep),
    ("mask_per_head", case_mask_per_head),
    ("padding", case_padding),
    ("causal_self", case_causal_self),
    ("causal_cross", case_causal_cross),
    ("causal_and_padding", case_causal_and_padding),
    ("kdim_vdim", case_kdim_vdim),
    ("wide", case_wide),
    ("scratch", case_scratch),
    ("scratch_lower_keep", case_scratch_lower_keep),
    ("scratch_fused", case_scratch_fused),
    ("gqa", case_gqa),
    ("mqa_causal", case_mqa_causal),
    ("block_pre", case_block_pre),
    ("block_post", case_block_post),
    ("scratch_block_causal", case_scratch_block_causal),
]


# -------------------------------------------- independent float64 check
#
# Recomputes a case from its folder and options alone, the way the tool is
# meant to: if this agrees with expected.npz, the files say everything needed.


def np_linear(x, w, b):
    y = x @ w.T
    return y if b is None else y + b


def projections_from_state_dict(sd, E):
    """(w_q, b_q, w_k, b_k, w_v, b_v, w_o, b_o) for every naming the fixtures use."""
    if "in_proj_weight" in sd:
        w = np.split(sd["in_proj_weight"], 3)
    elif "q_proj_weight" in sd:
        w = [sd["q_proj_weight"], sd["k_proj_weight"], sd["v_proj_weight"]]
    elif "W_qkv.weight" in sd:
        w = np.split(sd["W_qkv.weight"], 3)
    else:
        prefix = "W_" if "W_q.weight" in sd else "w_"
        w = [sd[prefix + n + ".weight"] for n in "qkv"]
        b = [sd[prefix + n + ".bias"] for n in "qkv"]
        return (w[0], b[0], w[1], b[1], w[2], b[2], sd[prefix + "o.weight"], sd[prefix + "o.bias"])
    bias = sd.get("in_proj_bias", sd.get("W_qkv.bias"))
    b = [None] * 3 if bias is None else np.split(bias, 3)
    out_w = sd.get("out_proj.weight", sd.get("W_o.weight"))
    out_b = sd.get("out_proj.bias", sd.get("W_o.bias"))
    return (w[0], b[0], w[1], b[1], w[2], b[2], out_w, out_b)


def additive_mask(folder, options, B, h, N, M):
    """The mask as a float64 (B, h, N, M) addition to the scores."""
    add = np.zeros((B, h, N, M))
    path = os.path.join(folder, "mask.npy")
    if os.path.exists(path):
        mask = np.load(path)
        if mask.ndim == 3:
            mask = mask.reshape(B, h, N, M)  # (B·h, N, M), batch-major
        if "--mask-means keep" in options:
            add = add + np.where(mask == 0, -np.inf, 0.0)
        elif mask.dtype.kind == "f":
            add = add + mask.astype(np.float64)
        else:
            add = add + np.where(mask != 0, -np.inf, 0.0)
    if "--causal" in options:
        i = np.arange(N)[:, None]
        j = np.arange(M)[None, :]
        add = add + np.where(j > i + (M - N), -np.inf, 0.0)
    path = os.path.join(folder, "key_padding_mask.npy")
    if os.path.exists(path):
        padding = np.load(path)  # (B, M)
        add = add + np.where(padding, -np.inf, 0.0)[:, None, None, :]
    return add


def np_layer_norm(x, weight, bias):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * weight + bias


def np_gelu(u):
    return 0.5 * u * (1.0 + np.vectorize(math.erf)(u / math.sqrt(2.0)))


BLOCK_NAMES = {  # state-dict prefix of the attention module, norm1, norm2, linear1, linear2
    "linear1.weight": ("self_attn.", "norm1", "norm2", "linear1", "linear2"),
    "ffn.0.weight": ("attn.", "ln1", "ln2", "ffn.0", "ffn.2"),
}


def recompute_block(folder, options, sd):
    """The block's output and attention weights from the files, in float64."""
    names = next(v for k, v in BLOCK_NAMES.items() if k in sd)
    prefix, norm1, norm2, linear1, linear2 = names
    attention = {k[len(prefix):]: v for k, v in sd.items() if k.startswith(prefix)}
    x = np.load(os.path.join(folder, "query.npy")).astype(np.float64)
    norm = lambda y, n: np_layer_norm(y, sd[n + ".weight"], sd[n + ".bias"])
    ffn = lambda y: np_linear(np_gelu(np_linear(y, sd[linear1 + ".weight"], sd[linear1 + ".bias"])),
                              sd[linear2 + ".weight"], sd[linear2 + ".bias"])
    if "--block pre" in options:
        a = norm(x, norm1)
        attended, weights = recompute_attention(folder, options, attention, a, a, a)
        h = x + attended
        return h + ffn(norm(h, norm2)), weights
    attended, weights = recompute_attention(folder, options, attention, x, x, x)
    h = norm(x + attended, norm1)
    return norm(h + ffn(h), norm2), weights


def recompute_from_files(folder, options):
    with np.load(os.path.join(folder, "weights.npz")) as archive:
        sd = {k: archive[k].astype(np.float64) for k in archive.files}
    if "--block" in options:
        return recompute_block(folder, options, sd)
    query = np.load(os.path.join(folder, "query.npy")).astype(np.float64)
    key_path = os.path.join(folder, "key.npy")
    key = np.load(key_path).astype(np.float64) if os.path.exists(key_path) else query
    value_path = os.path.join(folder, "value.npy")
    value = np.load(value_path).astype(np.float64) if os.path.exists(value_path) else query
    return recompute_attention(folder, options, sd, query, key, value)


def recompute_attention(folder, options, sd, query, key, value):
    h = int(options.split("--heads ")[1].split()[0])
    B, N, E = query.shape
    M = key.shape[1]
    d_k = E // h
    w_q, b_q, w_k, b_k, w_v, b_v, w_o, b_o = projections_from_state_dict(sd, E)

    def heads(x):  # (B, L, E) -> (B, h, L, d_k)
        return x.reshape(B, x.shape[1], h, d_k).transpose(0, 2, 1, 3)

    def kv_heads(x):  # (B, M, G·d_k) -> (B, G, M, d_k) -> (B, h, M, d_k), heads repeated
        G = x.shape[2] // d_k
        split = x.reshape(B, x.shape[1], G, d_k).transpose(0, 2, 1, 3)
        return np.repeat(split, h // G, axis=1)

    Q = heads(np_linear(query, w_q, b_q))
    K = kv_heads(np_linear(key, w_k, b_k))
    V = kv_heads(np_linear(value, w_v, b_v))
    scores = Q @ K.transpose(0, 1, 3, 2) / math.sqrt(d_k) + additive_mask(folder, options, B, h, N, M)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    context = (weights @ V).transpose(0, 2, 1, 3).reshape(B, N, E)
    return np_linear(context, w_o, b_o), weights


# ------------------------------------------------------------------ files


def to_numpy(tensor):
    array = tensor.detach().cpu().numpy()
    if array.dtype.kind == "f":
        array = array.astype(np.float32)
    return np.ascontiguousarray(array)


def write_case(name, case):
    folder = os.path.join(PARITY_DIR, name)
    os.makedirs(folder)
    state = {k: to_numpy(v) for k, v in case["module"].state_dict().items()}
    np.savez(os.path.join(folder, "weights.npz"), **state)
    for file_name, tensor in list(case["inputs"].items()) + list(case.get("files", {}).items()):
        np.save(os.path.join(folder, file_name + ".npy"), to_numpy(tensor))
    np.savez(os.path.join(folder, "expected.npz"),
             output=to_numpy(case["output"]), attn_weights=to_numpy(case["attn_weights"]))
    return folder


def check_written(name, folder, case):
    with np.load(os.path.join(folder, "weights.npz")) as archive:
        assert sorted(archive.files) == sorted(case["module"].state_dict()), name
        assert all(archive[k].dtype == np.float32 for k in archive.files), name
        assert all(np.abs(archive[k]).min() > 0 for k in archive.files if k.endswith("bias")), name
    with np.load(os.path.join(folder, "expected.npz")) as expected:
        assert sorted(expected.files) == ["attn_weights", "output"], name
        output, weights = expected["output"], expected["attn_weights"]
    B, N, E = np.load(os.path.join(folder, "query.npy")).shape
    assert output.shape == (B, N, E) and output.dtype == np.float32, name
    assert weights.ndim == 4 and weights.shape[:3] == (B, int(case["options"].split()[1]), N), name
    assert np.isfinite(output).all() and np.isfinite(weights).all(), name
    np_output, np_weights = recompute_from_files(folder, case["options"])
    return max(assert_close(output, np_output, name + ": float64 recomputation, output"),
               assert_close(weights, np_weights, name + ": float64 recomputation, weights"))


def folder_size(folder):
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))


def main():
    torch.set_default_dtype(torch.float32)
    torch.set_num_threads(1)
    if os.path.isdir(PARITY_DIR):
        shutil.rmtree(PARITY_DIR)
    lines = ["# PyTorch parity cases made by make_fixtures.py: <case folder> <extra mha options>.",
             "# The harness adds --weights, --input, --key, --value, --mask and --key-padding-mask",
             "# for whichever of weights.npz, query.npy, key.npy, value.npy, mask.npy and",
             "# key_padding_mask.npy the folder holds."]
    for seed, (name, build) in enumerate(CASES):
        torch.manual_seed(seed)
        case = build()
        folder = write_case(name, case)
        worst = check_written(name, folder, case)
        lines.append(f"{name} {case['options']}")
        files = " ".join(sorted(os.listdir(folder)))
        print(f"{name:<20} {case['options']:<32} {folder_size(folder):>6} B  "
              f"float64 check {worst:.1e}  [{files}]")
    with open(CASES_FILE, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
