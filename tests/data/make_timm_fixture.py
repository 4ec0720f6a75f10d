# Makes tests/data/timm/: a state dict shaped like a timm VisionTransformer's blocks (two of
# them), an input and the attention of block 1 as timm's Attention module computes it.
#
# timm (pytorch-image-models) is not needed: ViTAttention below is written from the layout of
# timm's Attention. One nn.Linear "qkv" (dim -> 3·dim) whose output is reshaped to
# (B, N, 3, h, d_k) and permuted to (3, B, h, N, d_k): its weight rows hold [W_q; W_k; W_v],
# as nn.MultiheadAttention's in_proj_weight does. Scores are q·k^T · d_k^-0.5, softmax,
# weights @ v merged back to (B, N, dim), then the nn.Linear "proj". Each block's other
# arrays (norm1, norm2, mlp.fc1, mlp.fc2) are in the file too, under "blocks.L.", so the test
# reads one attention module with --weights-prefix blocks.1.attn.
#
# The reference is checked against nn.MultiheadAttention given in_proj_weight = qkv.weight and
# out_proj = proj (the reading mha does), within 1e-5.
#
# Run from the repository root (PyTorch 1.13, NumPy 1.24):
#
#     /usr/bin/python3 tests/data/make_timm_fixture.py

import os
import shutil

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "timm")

DIM, HEADS, B, N, BLOCKS, HIDDEN = 16, 4, 2, 5, 2, 32
TOLERANCE = 1e-5


class ViTAttention(nn.Module):
    """Attention with timm's names and arithmetic; keeps its last weights (B, h, N, N)."""

    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        batch, tokens, dim = x.shape
        # (B, N, 3·dim) -> (3, B, h, N, d_k)
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        self.weights = (q @ k.transpose(-2, -1) * self.head_dim ** -0.5).softmax(dim=-1)
        merged = (self.weights @ v).transpose(1, 2).reshape(batch, tokens, dim)
        return self.proj(merged)


class Block(nn.Module):
    """The arrays of a ViT block under timm's names (only attn is run here)."""

    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(DIM)
        self.attn = ViTAttention(DIM, HEADS)
        self.norm2 = nn.LayerNorm(DIM)
        self.mlp = nn.Module()
        self.mlp.fc1 = nn.Linear(DIM, HIDDEN)
        self.mlp.fc2 = nn.Linear(HIDDEN, DIM)


def module_check(x, attn, out, weights):
    """nn.MultiheadAttention with qkv as in_proj and proj as out_proj must agree."""
    mha = nn.MultiheadAttention(DIM, HEADS, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(attn.qkv.weight)
        mha.in_proj_bias.copy_(attn.qkv.bias)
        mha.out_proj.weight.copy_(attn.proj.weight)
        mha.out_proj.bias.copy_(attn.proj.bias)
    mha.eval()
    got, got_weights = mha(x, x, x, need_weights=True, average_attn_weights=False)
    for what, ours, theirs in (("output", out, got), ("weights", weights, got_weights)):
        diff = float((ours - theirs).abs().max())
        assert diff <= TOLERANCE, f"{what}: {diff:.3g}"
        print(f"nn.MultiheadAttention vs timm's Attention, {what}: max difference {diff:.3g}")


def main():
    torch.manual_seed(2021)
    model = nn.Module()
    model.blocks = nn.ModuleList(Block() for _ in range(BLOCKS))
    model.eval()
    x = torch.empty(B, N, DIM).uniform_(-1.0, 1.0)
    attn = model.blocks[1].attn
    with torch.no_grad():
        out = attn(x)
        weights = attn.weights
        module_check(x, attn, out, weights)

    shutil.rmtree(OUT_DIR, ignore_errors=True)
    os.makedirs(OUT_DIR)
    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    np.savez(os.path.join(OUT_DIR, "weights.npz"), **state)
    np.save(os.path.join(OUT_DIR, "query.npy"), x.numpy())
    np.savez(os.path.join(OUT_DIR, "expected.npz"), output=out.numpy(), attn_weights=weights.numpy())
    print(f"wrote {OUT_DIR}")


if __name__ == "__main__":
    main()
