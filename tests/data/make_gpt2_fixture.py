# Makes tests/data/gpt2/: a GPT-2-style state dict of two blocks, written the way Hugging
# Face's GPT2Model names and stores it, an input and the attention of block 1 computed the
# way GPT-2 computes it.
#
# GPT-2's projections are Conv1D modules: the weight is stored (in_features, out_features)
# and the layer computes x @ weight + bias (torch.addmm), the transpose of nn.Linear. Per
# block, "h.L.attn." holds c_attn.weight (E, 3E) and c_attn.bias (3E), one projection to
# [q | k | v], and c_proj.weight (E, E), c_proj.bias (E), the output projection. Hugging
# Face versions before 4.31 also saved two buffers there: "bias", the causal mask
# (1, 1, n_positions, n_positions), and "masked_bias", a scalar; the file keeps both, as
# such an export would. The blocks' other arrays (ln_1, ln_2, mlp.c_fc, mlp.c_proj) are in
# the file too, so the test reads one attention module out with --weights-prefix.
#
# The reference is GPT-2's attention written out (split into heads, q k^T / sqrt(d_k), the
# causal mask from the buffer, softmax, merge, c_proj) in float64, checked against
# nn.MultiheadAttention given in_proj_weight = c_attn.weight.T and out_proj.weight =
# c_proj.weight.T (the reading mha does), within 1e-5.
#
# Run from the repository root (PyTorch 1.13, NumPy 1.24):
#
#     /usr/bin/python3 tests/data/make_gpt2_fixture.py

import os
import shutil

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "gpt2")

E, H, B, N, POSITIONS, LAYERS, D_FF = 16, 4, 2, 5, 8, 2, 32
TOLERANCE = 1e-5


def uniform(*shape, low=-0.5, high=0.5):
    return torch.empty(*shape).uniform_(low, high)


def block_arrays(layer):
    """One block's arrays under Hugging Face's names; Conv1D weights (in, out)."""
    p = f"h.{layer}."
    mask = torch.tril(torch.ones(POSITIONS, POSITIONS, dtype=torch.bool)).view(1, 1, POSITIONS, POSITIONS)
    return {
        p + "ln_1.weight": uniform(E, low=0.5, high=1.5),
        p + "ln_1.bias": uniform(E, low=-0.1, high=0.1),
        p + "attn.bias": mask,
        p + "attn.masked_bias": torch.tensor(-1e4),
        p + "attn.c_attn.weight": uniform(E, 3 * E),
        p + "attn.c_attn.bias": uniform(3 * E, low=-0.1, high=0.1),
        p + "attn.c_proj.weight": uniform(E, E),
        p + "attn.c_proj.bias": uniform(E, low=-0.1, high=0.1),
        p + "ln_2.weight": uniform(E, low=0.5, high=1.5),
        p + "ln_2.bias": uniform(E, low=-0.1, high=0.1),
        p + "mlp.c_fc.weight": uniform(E, D_FF),
        p + "mlp.c_fc.bias": uniform(D_FF, low=-0.1, high=0.1),
        p + "mlp.c_proj.weight": uniform(D_FF, E),
        p + "mlp.c_proj.bias": uniform(E, low=-0.1, high=0.1),
    }


def gpt2_attention(x, a):
    """GPT-2's attention on x (B, N, E) with block arrays a (attn.* names), in float64."""
    d = torch.float64
    x = x.to(d)
    qkv = torch.addmm(a["c_attn.bias"].to(d), x.reshape(-1, E), a["c_attn.weight"].to(d)).view(B, N, 3 * E)
    q, k, v = qkv.split(E, dim=2)
    heads = lambda t: t.view(B, N, H, E // H).permute(0, 2, 1, 3)  # (B, h, N, d_k)
    q, k, v = heads(q), heads(k), heads(v)
    scores = q @ k.transpose(-1, -2) / (E // H) ** 0.5
    keep = a["bias"][:, :, :N, :N]
    scores = torch.where(keep, scores, torch.tensor(torch.finfo(d).min, dtype=d))
    weights = scores.softmax(dim=-1)
    merged = (weights @ v).permute(0, 2, 1, 3).reshape(B * N, E)
    out = torch.addmm(a["c_proj.bias"].to(d), merged, a["c_proj.weight"].to(d)).view(B, N, E)
    return out, weights


def module_check(x, a, out, weights):
    """nn.MultiheadAttention with the transposed weights must agree."""
    mha = nn.MultiheadAttention(E, H, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(a["c_attn.weight"].T)
        mha.in_proj_bias.copy_(a["c_attn.bias"])
        mha.out_proj.weight.copy_(a["c_proj.weight"].T)
        mha.out_proj.bias.copy_(a["c_proj.bias"])
    mha.eval()
    causal = torch.triu(torch.ones(N, N, dtype=torch.bool), diagonal=1)
    got, got_weights = mha(x, x, x, attn_mask=causal, need_weights=True, average_attn_weights=False)
    for what, a64, b32 in (("output", out, got), ("weights", weights, got_weights)):
        diff = float((a64 - b32.double()).abs().max())
        assert diff <= TOLERANCE, f"{what}: {diff:.3g}"
        print(f"nn.MultiheadAttention vs GPT-2's attention, {what}: max difference {diff:.3g}")


def main():
    torch.manual_seed(2019)
    arrays = {}
    for layer in range(LAYERS):
        arrays.update(block_arrays(layer))
    x = uniform(B, N, E, low=-1.0, high=1.0)
    attn = {k[len("h.1.attn."):]: v for k, v in arrays.items() if k.startswith("h.1.attn.")}
    out, weights = gpt2_attention(x, attn)
    module_check(x, attn, out, weights)

    shutil.rmtree(OUT_DIR, ignore_errors=True)
    os.makedirs(OUT_DIR)
    np.savez(os.path.join(OUT_DIR, "weights.npz"), **{k: v.numpy() for k, v in arrays.items()})
    np.save(os.path.join(OUT_DIR, "query.npy"), x.numpy())
    np.savez(os.path.join(OUT_DIR, "expected.npz"), output=out.float().numpy(),
             attn_weights=weights.float().numpy())
    print(f"wrote {OUT_DIR}")


if __name__ == "__main__":
    main()
