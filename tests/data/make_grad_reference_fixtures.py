# Makes the fixtures for the double-precision reference backward
# (src/core/reference.cpp): float64 torch.autograd gradients of
# L = sum(output * dO) for a handful of attention layers that together cover every variant the
# reference differentiates.
#
# Each case is one file tests/data/grad_reference/<case>.npz holding
#   w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o, q_norm, k_norm, bias_k, bias_v   float32, mha's
#       Weights fields (absent where the case has none); bias_k, bias_v flattened to (G*d_k)
#   x_q (B, N, E), and x_k (B, M, kdim), x_v (B, M, vdim) for cross-attention       float32
#   attn_mask, key_padding   additive float32 (0, a float, or -inf), when the case has them
#   grad_output (B, N, E)    float64
#   output (B, N, E) and grad.<field> (grad.x_q, grad.w_q, ...)                        float64
# The weights and inputs are float32 so that mha reads the very values autograd saw; the
# options of each case (heads, causal, RoPE, ...) are repeated in tests/test_gradcheck.cpp.
#
# The layer is composed from the definitions (F.linear, matmul, softmax; RoPE, ALiBi, the
# window with sinks, the soft-cap and RMSNorm as in make_modern_fixtures.py's header), in
# float64. Where nn.MultiheadAttention can express a case (cases "masked" and "cross_bias_kv"),
# the composed output and gradients are checked against it in float64 first; the script
# prints the largest difference of each check.
#
# Run from the repository root (PyTorch 1.13, NumPy 1.24); it rewrites tests/data/grad_reference/:
#
#     /usr/bin/python3 tests/data/make_grad_reference_fixtures.py

import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "grad_reference")
D64 = torch.float64
RMS_EPS = 1e-6
TOLERANCE = 1e-12


def f32_exact(t):
    """t rounded to float32 and back to float64: the values mha reads."""
    return t.to(torch.float32).to(D64)


def rand(*shape, scale=1.0):
    return f32_exact(torch.randn(*shape, dtype=D64) * scale)


def rope(x, positions, layout, theta):
    """x (..., L, d) rotated pair by pair; pair i at position p by the angle p * theta^(-2i/d)."""
    d = x.shape[-1]
    inv = theta ** (-2.0 * torch.arange(d // 2, dtype=D64) / d)
    angle = positions.to(D64)[:, None] * inv[None, :]  # (L, d/2)
    cos, sin = torch.cos(angle), torch.sin(angle)
    if layout == "half":
        a, b = x[..., : d // 2], x[..., d // 2 :]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


def alibi_slopes(h):
    assert h & (h - 1) == 0, "the fixtures use a power of two"
    return torch.tensor([2.0 ** (-8.0 * (i + 1) / h) for i in range(h)], dtype=D64)


def composed(p, c):
    """mha's packed pass in float64: projections, bias_kv and the zero position, QK-norm, RoPE,
    the scale, the soft-cap, the masks, softmax, the context, W_o."""
    x_q = p["x_q"]
    x_k = p.get("x_k", x_q)
    x_v = p.get("x_v", x_q)
    B, N, _ = x_q.shape
    h, G = c["heads"], c["kv_heads"]
    q = F.linear(x_q, p["w_q"], p.get("b_q"))
    k = F.linear(x_k, p["w_k"], p.get("b_k"))
    v = F.linear(x_v, p["w_v"], p.get("b_v"))
    d_k = q.shape[-1] // h
    if "bias_k" in p:
        k = torch.cat([k, p["bias_k"].expand(B, 1, -1)], dim=1)
        v = torch.cat([v, p["bias_v"].expand(B, 1, -1)], dim=1)
    if c.get("add_zero_attn"):
        k = torch.cat([k, torch.zeros(B, 1, k.shape[-1], dtype=D64)], dim=1)
        v = torch.cat([v, torch.zeros(B, 1, v.shape[-1], dtype=D64)], dim=1)
    M = k.shape[1]
    q = q.view(B, N, h, d_k).transpose(1, 2)
    k = k.view(B, M, G, d_k).transpose(1, 2)
    v = v.view(B, M, G, d_k).transpose(1, 2)
    if "q_norm" in p:
        q = q * torch.rsqrt(q.pow(2).mean(-1, keepdim=True) + RMS_EPS) * p["q_norm"]
        k = k * torch.rsqrt(k.pow(2).mean(-1, keepdim=True) + RMS_EPS) * p["k_norm"]
    if c.get("rope"):
        q = rope(q, torch.arange(M - N, M), c["rope"], c.get("rope_theta", 10000.0))
        k = rope(k, torch.arange(M), c["rope"], c.get("rope_theta", 10000.0))
    k = k.repeat_interleave(h // G, dim=1)  # GQA: query head i reads group i // (h / G)
    v = v.repeat_interleave(h // G, dim=1)
    s = q @ k.transpose(-2, -1)
    if c.get("scale", True):
        s = s / math.sqrt(c.get("scale_base", d_k))
    if c.get("softcap"):
        s = c["softcap"] * torch.tanh(s / c["softcap"])
    extra = M - p["m_in"]
    add = torch.zeros(B, h, N, M, dtype=D64)
    if "attn_mask" in p:
        mask = F.pad(p["attn_mask"], (0, extra))
        add = add + (mask.view(B, h, N, M) if mask.dim() == 3 and mask.shape[0] == B * h
                     else mask if mask.dim() == 2 else mask[:, None])
    if "key_padding" in p:
        add = add + F.pad(p["key_padding"], (0, extra))[:, None, None, :]
    pos_q = torch.arange(M - N, M)[:, None]
    pos_k = torch.arange(M)[None, :]
    if c.get("alibi"):
        add = add - alibi_slopes(h)[None, :, None, None] * (pos_q - pos_k).abs().to(D64)
    blocked = torch.zeros(N, M, dtype=torch.bool)
    if c.get("causal") == "bottom-right":
        blocked |= pos_k > pos_q
    if c.get("causal") == "top-left":
        blocked |= pos_k > torch.arange(N)[:, None]
    if c.get("window"):
        seen = (pos_k <= pos_q) & ((pos_q - c["window"] < pos_k) | (pos_k < c.get("sinks", 0)))
        blocked |= ~seen
    s = (s + add).masked_fill(blocked, float("-inf"))
    weights = torch.softmax(s, dim=-1)
    if c.get("zero_masked_rows"):
        weights = torch.nan_to_num(weights, nan=0.0)
    context = weights @ v
    if c.get("ablate_head") is not None:
        keep = torch.ones(1, h, 1, 1, dtype=D64)
        keep[0, c["ablate_head"]] = 0.0
        context = context * keep
    concat = context.transpose(1, 2).reshape(B, N, h * d_k)
    return F.linear(concat, p["w_o"], p.get("b_o"))


def torch_module(p, c):
    """The same case as nn.MultiheadAttention(batch_first=True) in float64, or None."""
    E = p["w_q"].shape[1]
    x_k, x_v = p.get("x_k", p["x_q"]), p.get("x_v", p["x_q"])
    module = nn.MultiheadAttention(
        E, c["heads"], bias="b_q" in p, add_bias_kv="bias_k" in p,
        add_zero_attn=c.get("add_zero_attn", False), kdim=x_k.shape[-1], vdim=x_v.shape[-1],
        batch_first=True, dtype=D64)
    with torch.no_grad():
        if module._qkv_same_embed_dim:
            module.in_proj_weight.copy_(torch.cat([p["w_q"], p["w_k"], p["w_v"]]))
        else:
            module.q_proj_weight.copy_(p["w_q"])
            module.k_proj_weight.copy_(p["w_k"])
            module.v_proj_weight.copy_(p["w_v"])
        if "b_q" in p:
            module.in_proj_bias.copy_(torch.cat([p["b_q"], p["b_k"], p["b_v"]]))
            module.out_proj.bias.copy_(p["b_o"])
        module.out_proj.weight.copy_(p["w_o"])
        if "bias_k" in p:
            module.bias_k.copy_(p["bias_k"].view(1, 1, -1))
            module.bias_v.copy_(p["bias_v"].view(1, 1, -1))
    x_q = p["x_q"]
    same = "x_k" not in p
    args = (x_q, x_q, x_q) if same else (x_q, x_k, x_v)
    # bool (True = blocked), blocking the same keys: PyTorch 1.13 does not combine a float
    # key padding mask with a float attn_mask by adding them
    padding = p["key_padding"] == float("-inf") if "key_padding" in p else None
    out, _ = module(*args, attn_mask=p.get("attn_mask"), key_padding_mask=padding,
                    need_weights=False)
    return out, module


def gradients(p, c, d_out):
    leaves = {k: v.clone().requires_grad_(True) for k, v in p.items()
              if isinstance(v, torch.Tensor) and k not in ("attn_mask", "key_padding")}
    out = composed({**p, **leaves}, c)
    (out * d_out).sum().backward()
    return out.detach(), {k: t.grad for k, t in leaves.items()}


def check_against_module(p, c, d_out, out, grads, name):
    x_q = p["x_q"].clone().requires_grad_(True)
    q = {**p, "x_q": x_q}
    if "x_k" in p:
        q["x_k"] = p["x_k"].clone().requires_grad_(True)
        q["x_v"] = p["x_v"].clone().requires_grad_(True)
    module_out, module = torch_module(q, c)
    (module_out * d_out).sum().backward()
    diffs = [float((module_out - out).abs().max()), float((x_q.grad - grads["x_q"]).abs().max())]
    if "x_k" in p:
        diffs.append(float((q["x_k"].grad - grads["x_k"]).abs().max()))
        diffs.append(float((q["x_v"].grad - grads["x_v"]).abs().max()))
    w_grads = (module.in_proj_weight.grad.chunk(3) if module._qkv_same_embed_dim
               else [module.q_proj_weight.grad, module.k_proj_weight.grad,
                     module.v_proj_weight.grad])
    for w_grad, field in zip(w_grads, ("w_q", "w_k", "w_v")):
        diffs.append(float((w_grad - grads[field]).abs().max()))
    diffs.append(float((module.out_proj.weight.grad - grads["w_o"]).abs().max()))
    if "b_q" in p:
        diffs.append(float((module.in_proj_bias.grad
                            - torch.cat([grads["b_q"], grads["b_k"], grads["b_v"]])).abs().max()))
    if "bias_k" in p:
        diffs.append(float((module.bias_k.grad.flatten() - grads["bias_k"]).abs().max()))
        diffs.append(float((module.bias_v.grad.flatten() - grads["bias_v"]).abs().max()))
    worst = max(diffs)
    assert worst <= TOLERANCE, f"{name}: composed vs nn.MultiheadAttention differ by {worst}"
    print(f"{name}: composed vs nn.MultiheadAttention, float64: max difference {worst:.3g}")


def projections(E, kdim, vdim, q_width, kv_width, bias):
    p = {"w_q": rand(q_width, E, scale=0.3), "w_k": rand(kv_width, kdim, scale=0.3),
         "w_v": rand(kv_width, vdim, scale=0.3), "w_o": rand(E, q_width, scale=0.3)}
    if bias:
        p.update(b_q=rand(q_width, scale=0.1), b_k=rand(kv_width, scale=0.1),
                 b_v=rand(kv_width, scale=0.1), b_o=rand(E, scale=0.1))
    return p


def case_masked():
    """Self-attention, biases, a float (N, M) mask with -inf entries and key padding."""
    B, N, E, h = 2, 5, 8, 2
    p = projections(E, E, E, E, E, True)
    p["x_q"] = rand(B, N, E)
    mask = rand(N, N, scale=0.5)
    mask[0, 3] = mask[2, 0] = mask[4, 1] = float("-inf")
    p["attn_mask"] = mask
    padding = torch.zeros(B, N, dtype=D64)
    padding[1, 4] = padding[1, 2] = float("-inf")
    p["key_padding"] = padding
    return p, {"heads": h, "kv_heads": h}, True


def case_cross_bias_kv():
    """Cross-attention with kdim, vdim != d_model, bias_k/bias_v and add_zero_attn."""
    B, N, M, E, kdim, vdim, h = 2, 3, 4, 8, 6, 5, 2
    p = projections(E, kdim, vdim, E, E, True)
    p.update(x_q=rand(B, N, E), x_k=rand(B, M, kdim), x_v=rand(B, M, vdim),
             bias_k=rand(E, scale=0.5), bias_v=rand(E, scale=0.5))
    return p, {"heads": h, "kv_heads": h, "add_zero_attn": True}, True


def case_gqa_rope_causal():
    """GQA (h = 4, G = 2), heads wider than d_model / h, RoPE half, causal, no bias."""
    B, N, E, h, G, d_k = 2, 6, 8, 4, 2, 4
    p = projections(E, E, E, h * d_k, G * d_k, False)
    p["x_q"] = rand(B, N, E)
    return p, {"heads": h, "kv_heads": G, "rope": "half", "causal": "bottom-right"}, False


def case_modern():
    """QK-norm, RoPE interleaved, ALiBi, a window with sinks, the soft-cap and scale_base."""
    B, N, E, h = 1, 7, 8, 4
    p = projections(E, E, E, E, E, True)
    p.update(x_q=rand(B, N, E), q_norm=f32_exact(1 + 0.2 * torch.randn(2, dtype=D64)),
             k_norm=f32_exact(1 + 0.2 * torch.randn(2, dtype=D64)))
    c = {"heads": h, "kv_heads": h, "rope": "interleaved", "rope_theta": 100.0, "alibi": True,
         "window": 3, "sinks": 1, "softcap": 2.0, "scale_base": 3.0}
    return p, c, False


def case_top_left_zero_rows():
    """Cross-attention N < M, causal top-left, no scale, a per-head (B*h, N, M) mask that blocks
    one whole row (zeroed: --masked-rows zero), head 1 ablated, multi-query (G = 1)."""
    B, N, M, E, h, G = 2, 3, 5, 8, 2, 1
    p = projections(E, E, E, E, G * E // h, True)
    p.update(x_q=rand(B, N, E), x_k=rand(B, M, E), x_v=rand(B, M, E))
    mask = rand(B * h, N, M, scale=0.5)
    mask[0, 2, :] = float("-inf")  # batch 0, head 0, query 2
    p["attn_mask"] = mask
    c = {"heads": h, "kv_heads": G, "causal": "top-left", "scale": False,
         "zero_masked_rows": True, "ablate_head": 1}
    return p, c, False


CASES = {"masked": case_masked, "cross_bias_kv": case_cross_bias_kv,
         "gqa_rope_causal": case_gqa_rope_causal, "modern": case_modern,
         "top_left_zero_rows": case_top_left_zero_rows}


def main():
    torch.manual_seed(28)
    os.makedirs(OUT_DIR, exist_ok=True)
    for name, make in CASES.items():
        p, c, module_too = make()
        p["m_in"] = p.get("x_k", p["x_q"]).shape[1]
        d_out = torch.randn(p["x_q"].shape, dtype=D64)
        out, grads = gradients(p, c, d_out)
        if module_too:
            check_against_module(p, c, d_out, out, grads, name)
        arrays = {k: v.to(torch.float32).numpy() for k, v in p.items()
                  if isinstance(v, torch.Tensor)}
        arrays["grad_output"] = d_out.numpy()
        arrays["output"] = out.numpy()
        for k, g in grads.items():
            arrays["grad." + k] = g.numpy()
        np.savez(os.path.join(OUT_DIR, name + ".npz"), **arrays)
        print(f"{name}: {len(arrays)} arrays, |output| max {float(out.abs().max()):.3g}")


if __name__ == "__main__":
    main()
