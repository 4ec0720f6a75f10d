# Makes the gated-attention fixtures (--gate): attention in plain torch with
# nn.MultiheadAttention's weights (in_proj_weight, in_proj_bias, out_proj.*) plus an output
# gate, as Qwen3-Next and Qwen3.5 apply it right before o_proj:
#
#     attn_output = attn_output * torch.sigmoid(gate)        gate = x_q @ W_g.T + b_g
#
# element-wise (W_g (h·d_k, d_model): one gate per column of the concat) or head-wise
# (W_g (h, d_model): one gate per head, broadcast over its d_k columns), with and without
# the gate's bias, self- and cross-attention, causal. One more case saves Qwen's own layout:
# Hugging Face names with the gate inside q_proj, whose rows per head are [query (d_k); gate
# (d_k)] (q, gate = torch.chunk(q_proj(x).view(B, N, h, 2·d_k), 2, dim=-1)).
#
# Each case is a folder under tests/data/grad_gate/ holding what tests/data/grad/ cases hold
# (weights.npz, query.npy, key.npy and value.npy for cross-attention, grad_output.npy,
# expected.npz in float32 and expected64.npz in float64: output, grad.input (grad.key,
# grad.value) and grad.<state-dict name>, from torch.autograd), and a line
# "<case> <mha options>" in tests/data/grad_gate_cases.txt.
#
# Run from the repository root (PyTorch 1.13, NumPy 1.24); it rewrites tests/data/grad_gate/:
#
#     /usr/bin/python3 tests/data/make_gate_fixtures.py

import os
import shutil

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "grad_gate")
CASES_FILE = os.path.join(HERE, "grad_gate_cases.txt")
D64 = torch.float64
B, N, M, E, H = 2, 5, 6, 8, 2
D_K = E // H


def gated_attention(p, x_q, x_k, x_v, causal, headwise):
    """nn.MultiheadAttention's maths (batch first), the concat gated before out_proj."""
    w_q, w_k, w_v = p["in_proj_weight"].chunk(3)
    b_q, b_k, b_v = p["in_proj_bias"].chunk(3) if "in_proj_bias" in p else (None,) * 3
    lin = torch.nn.functional.linear
    q = lin(x_q, w_q, b_q).view(B, -1, H, D_K).transpose(1, 2)
    k = lin(x_k, w_k, b_k).view(B, -1, H, D_K).transpose(1, 2)
    v = lin(x_v, w_v, b_v).view(B, -1, H, D_K).transpose(1, 2)
    scores = q @ k.transpose(-2, -1) / D_K ** 0.5
    if causal:
        n, m = scores.shape[-2:]
        blocked = torch.ones(n, m, dtype=torch.bool).triu(1 + m - n)
        scores = scores.masked_fill(blocked, float("-inf"))
    context = torch.softmax(scores, dim=-1) @ v                  # (B, h, N, d_k)
    concat = context.transpose(1, 2).contiguous().view(B, -1, E)  # (B, N, h·d_k)
    gate = torch.sigmoid(lin(x_q, p["attn_gate.weight"], p.get("attn_gate.bias")))
    if headwise:  # (B, N, h): each head's d_k columns share one gate
        concat = (concat.view(B, -1, H, D_K) * gate.unsqueeze(-1)).view(B, -1, E)
    else:
        concat = concat * gate
    return lin(concat, p["out_proj.weight"], p.get("out_proj.bias"))


def weights(seed, headwise, bias):
    g = torch.Generator().manual_seed(seed)
    rand = lambda *shape: (torch.rand(*shape, generator=g, dtype=D64) * 2 - 1) * 0.5
    rows = H if headwise else E
    p = {"in_proj_weight": rand(3 * E, E), "out_proj.weight": rand(E, E),
         "attn_gate.weight": rand(rows, E) * 2}
    if bias:
        p.update({"in_proj_bias": rand(3 * E) * 0.4, "out_proj.bias": rand(E) * 0.4,
                  "attn_gate.bias": rand(rows)})
    return p


def qwen_names(p):
    """nn.MultiheadAttention's names -> Hugging Face's, the gate's rows inside q_proj."""
    w_q, w_k, w_v = p["in_proj_weight"].chunk(3)
    q_proj = torch.cat([w_q.view(H, D_K, E), p["attn_gate.weight"].view(H, D_K, E)], dim=1)
    return {"q_proj.weight": q_proj.reshape(2 * H * D_K, E), "k_proj.weight": w_k,
            "v_proj.weight": w_v, "o_proj.weight": p["out_proj.weight"]}


CASES = [  # name, options, headwise, bias, cross, causal, Qwen's names
    ("elementwise", "--gate elementwise", False, True, False, False, False),
    ("headwise", "--gate headwise", True, True, False, False, False),
    ("elementwise_no_bias_causal", "--gate elementwise --causal", False, False, False,
     True, False),
    ("headwise_no_bias_cross", "--gate headwise", True, False, True, False, False),
    ("qwen_q_proj", "--gate elementwise", False, False, False, False, True),
]


def as_np(t, dtype=np.float32):
    return np.ascontiguousarray(t.detach().to(D64).numpy().astype(dtype))


def gradients(p64, xs64, dout64, dtype, causal, headwise):
    p = {k: v.to(dtype).clone().requires_grad_(True) for k, v in p64.items()}
    xs = [x.to(dtype).clone().requires_grad_(True) for x in xs64]
    x_q, x_k, x_v = xs if len(xs) == 3 else xs * 3
    out = gated_attention(p, x_q, x_k, x_v, causal, headwise)
    (out * dout64.to(dtype)).sum().backward()
    grads = {"output": out, "grad.input": xs[0].grad}
    if len(xs) == 3:
        grads.update({"grad.key": xs[1].grad, "grad.value": xs[2].grad})
    return grads, {k: v.grad for k, v in p.items()}


def write_case(index, name, options, headwise, bias, cross, causal, qwen):
    torch.manual_seed(4400 + index)
    p = weights(4400 + index, headwise, bias)
    xs = [torch.randn(B, N, E, dtype=D64)] + ([torch.randn(B, M, E, dtype=D64)] * 1 +
                                              [torch.randn(B, M, E, dtype=D64)] if cross else [])
    dout = torch.randn(B, N, E, dtype=D64)
    folder = os.path.join(OUT_DIR, name)
    os.makedirs(folder)
    rename = qwen_names if qwen else (lambda d: d)
    np.savez(os.path.join(folder, "weights.npz"), **{k: as_np(v) for k, v in rename(p).items()})
    for fname, x in zip(("query", "key", "value"), xs):
        np.save(os.path.join(folder, fname + ".npy"), as_np(x))
    np.save(os.path.join(folder, "grad_output.npy"), as_np(dout))
    for fname, dtype, np_dtype in (("expected", torch.float32, np.float32),
                                   ("expected64", D64, np.float64)):
        grads, params = gradients(p, xs, dout, dtype, causal, headwise)
        grads.update({"grad." + k: v for k, v in rename(params).items()})
        np.savez(os.path.join(folder, fname + ".npz"),
                 **{k: as_np(v, np_dtype) for k, v in grads.items()})
    return f"{name} --heads {H} {options}"


def main():
    shutil.rmtree(OUT_DIR, ignore_errors=True)
    os.makedirs(OUT_DIR)
    lines = [write_case(i, *case) for i, case in enumerate(CASES)]
    with open(CASES_FILE, "w") as f:
        f.write("# Gated-attention cases made by make_gate_fixtures.py: <case folder> <mha options>.\n"
                "# The folders are under tests/data/grad_gate/; the test adds --weights, --input,\n"
                "# --key, --value and --grad-output for the files each folder holds.\n")
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
