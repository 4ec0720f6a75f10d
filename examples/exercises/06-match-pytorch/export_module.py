"""Export a PyTorch attention module to the files mha reads, run mha, compare.

Needs PyTorch and NumPy (the test suite does not run this script). Two kinds of
module work:
  * torch.nn.MultiheadAttention (batch_first=True), saved under its own names;
  * a from-scratch module with nn.Linear layers W_q, W_k, W_v, W_o and a
    num_heads attribute, like FromScratch below.

As a script it builds one of them with random weights:
    python3 export_module.py --heads 4 --d-model 32 [--scratch] [--out DIR] [--mha PATH]
Without --out the files go to a temporary folder that is removed afterwards. mha is
found on PATH, or through $MHA or --mha. Missing PyTorch, NumPy or mha is one line on
stderr and exit status 2, and leaves nothing behind.
From Python, call export(module, x, out_dir) and compare(module, x, out_dir).
"""

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    from torch import nn
except ImportError as missing:
    print(f"export_module.py: needs PyTorch and NumPy ({missing})", file=sys.stderr)
    sys.exit(2)


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
    """Runs mha on the exported files; returns the largest differences from PyTorch.
    Raises RuntimeError with mha's own message when mha fails."""
    saved = os.path.join(out_dir, "mha_out.npz")
    run = subprocess.run([mha, "--weights", os.path.join(out_dir, "weights.npz"),
                          "--input", os.path.join(out_dir, "x.npy"), "--save", saved],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:  # h comes from the num_heads entry the export saved
        raise RuntimeError(run.stderr.strip() or f"{mha} exited with {run.returncode}")
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
    parser.add_argument("--out", help="keep the files in this folder (default: a temporary one)")
    parser.add_argument("--mha", default=os.environ.get("MHA", "mha"),
                        help="the mha binary (default: $MHA, else mha on PATH)")
    args = parser.parse_args()
    mha = shutil.which(args.mha)
    if mha is None:
        print(f"export_module.py: cannot find mha ('{args.mha}'): put it on PATH, "
              "set MHA=/path/to/mha or give --mha", file=sys.stderr)
        return 2
    if args.d_model < 1 or args.heads < 1 or args.d_model % args.heads != 0:
        print(f"export_module.py: --d-model {args.d_model} must be a positive multiple of "
              f"--heads {args.heads}", file=sys.stderr)
        return 2

    torch.manual_seed(args.seed)
    if args.scratch:
        module = FromScratch(args.d_model, args.heads)
    else:
        module = nn.MultiheadAttention(args.d_model, args.heads, batch_first=True)
    module.eval()
    x = torch.randn(args.batch, args.seq_len, args.d_model)
    keep = args.out is not None
    existed = keep and os.path.exists(args.out)
    out_dir = args.out if keep else tempfile.mkdtemp(prefix="mha-export-")
    finished = False
    try:
        export(module, x, out_dir)
        output_diff, weights_diff = compare(module, x, out_dir, mha)
        finished = True
    except (OSError, RuntimeError) as failure:
        print(f"export_module.py: {failure}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        if not keep or (not finished and not existed):
            shutil.rmtree(out_dir, ignore_errors=True)
    if args.out:
        print(f"wrote {args.out}/weights.npz, {args.out}/x.npy and {args.out}/mha_out.npz")
    print(f"largest difference from PyTorch: output {output_diff:.2e}, "
          f"attention weights {weights_diff:.2e}")
    return 0 if output_diff < 1e-4 and weights_diff < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
