"""Export a PyTorch attention module to the files mha reads, run mha, compare.

Needs PyTorch and NumPy (the test suite does not run this script). Two kinds of
module work:
  * torch.nn.MultiheadAttention (batch_first=True), saved under its own names;
  * a from-scratch module with nn.Linear layers W_q, W_k, W_v, W_o and a
    num_heads attribute, like FromScratch below.

As a script it builds one of them with random weights:
    python3 export_module.py --heads 4 --d-model 32 [--scratch] [--out DIR] [--mha PATH]
From Python, call export(module, x, out_dir) and compare(module, x, out_dir).
"""

import argparse
import math
import os
import subprocess
import sys

import numpy as np
import torch
from torch import nn


class FromScratch(nn.Module):
    """Multi-head attention written out by hand, with the layer names mha reads."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        assert d_model % num_heads == 0, "d_model must be divisible by num_heads"
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, N, _ = x.shape
        # (B, N, d_model) -> (B, h, N, d_k) for each of Q, K, V
        q, k, v = (w(x).view(B, N, self.num_heads, self.d_k).transpose(1, 2)
                   for w in (self.W_q, self.W_k, self.W_v))
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d_k), dim=-1)
        context = (weights @ v).transpose(1, 2).contiguous().view(B, N, -1)
        return self.W_o(context), weights


def heads_of(module):
    return module.num_heads


def run_module(module, x):
    """The module's output (B, N, d_model) and per-head weights (B, h, N, N) as NumPy arrays."""
    with torch.no_grad():
        if isinstance(module, nn.MultiheadAttention):
            out, weights = module(x, x, x, average_attn_weights=False)
        else:
            out, weights = module(x)
    return out.numpy(), weights.numpy()


def export(module, x, out_dir):
    """Writes out_dir/weights.npz (the state dict, float32, and num_heads, which a state
    dict does not record) and out_dir/x.npy."""
    os.makedirs(out_dir, exist_ok=True)
    state = {name: t.detach().numpy().astype(np.float32)
             for name, t in module.state_dict().items()}
    np.savez(os.path.join(out_dir, "weights.npz"), num_heads=heads_of(module), **state)
    np.save(os.path.join(out_dir, "x.npy"), x.numpy().astype(np.float32))


def compare(module, x, out_dir, mha="mha"):
    """Runs mha on the exported files; returns the largest differences from PyTorch."""
    saved = os.path.join(out_dir, "mha_out.npz")
    subprocess.run([mha, "--weights", os.path.join(out_dir, "weights.npz"),
                    "--input", os.path.join(out_dir, "x.npy"), "--save", saved], check=True,
                   stdout=subprocess.DEVNULL)  # h comes from the num_heads export saved
    ours = np.load(saved)
    out, weights = run_module(module, x)
    return (float(np.abs(ours["output"] - out).max()),
            float(np.abs(ours["attn_weights"] - weights).max()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d-model", type=int, default=16)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=5)
    parser.add_argument("--scratch", action="store_true",
                        help="export the from-scratch module instead of nn.MultiheadAttention")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="mha-export")
    parser.add_argument("--mha", default="mha", help="the mha binary (default: on PATH)")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    if args.scratch:
        module = FromScratch(args.d_model, args.heads)
    else:
        module = nn.MultiheadAttention(args.d_model, args.heads, batch_first=True)
    module.eval()
    x = torch.randn(args.batch, args.seq_len, args.d_model)
    export(module, x, args.out)
    output_diff, weights_diff = compare(module, x, args.out, args.mha)
    print(f"wrote {args.out}/weights.npz and {args.out}/x.npy")
    print(f"largest difference from PyTorch: output {output_diff:.2e}, "
          f"attention weights {weights_diff:.2e}")
    return 0 if output_diff < 1e-4 and weights_diff < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
