"""Export a PyTorch attention module to the files mha reads, run mha, compare.

Needs PyTorch and NumPy. Two kinds of module work:
  * torch.nn.MultiheadAttention in either layout (batch_first=True or PyTorch's default
    False, passed on as --seq-first), with or without bias, add_bias_kv, add_zero_attn
    (passed on as --add-zero-attn), kdim/vdim (give key and value then);
  * a from-scratch module with nn.Linear layers W_q, W_k, W_v, W_o and a
    num_heads attribute, like FromScratch below (batch first).

As a script it builds one of them with random weights:
    python3 export_module.py --heads 4 --d-model 32 [--seq-first] [--scratch] [--out DIR]
Without --out the files go to a temporary folder that is removed afterwards. mha is
--mha PATH, else $MHA, else mha on PATH, else build/mha of the repository this file is in.
Missing PyTorch, NumPy or mha, or a module mha cannot reproduce, is one line on stderr and
exit status 2, and leaves nothing behind.
From Python (after sys.path.insert(0, "examples/exercises/06-match-pytorch")):
    from export_module import export, compare
    export(module, x, out_dir); compare(module, x, out_dir)
with key=..., value=... on both for cross-attention (needed when kdim/vdim differ).
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


REPOSITORY_MHA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                              "build", "mha")


def heads_of(module):
    return module.num_heads


def find_mha(given=None):
    """The mha binary: `given` (or $MHA) when set, else mha on PATH, else the repository's
    build/mha. Raises RuntimeError saying where it looked."""
    wanted = given or os.environ.get("MHA")
    found = shutil.which(wanted) if wanted else (shutil.which("mha") or shutil.which(REPOSITORY_MHA))
    if found is None:
        where = f"'{wanted}'" if wanted else f"mha on PATH or {os.path.normpath(REPOSITORY_MHA)}"
        raise RuntimeError(f"cannot find mha ({where}): build it with make, put it on PATH, "
                           "set MHA=/path/to/mha or give --mha")
    return found


def mha_options(module, key):
    """The mha options that reproduce `module`'s settings the state dict does not record;
    raises ValueError in one line for a setting mha cannot take."""
    if module.training and getattr(module, "dropout", 0):
        raise ValueError(f"the module is in training mode with dropout={module.dropout}; "
                         "call module.eval() first (mha computes the module in eval mode)")
    if not isinstance(module, nn.MultiheadAttention):
        if not getattr(module, "batch_first", True):
            raise ValueError("a from-scratch module with batch_first=False: give it (B, N, d_model)")
        return []
    if not module._qkv_same_embed_dim and key is None:
        raise ValueError(f"kdim={module.kdim}, vdim={module.vdim} differ from "
                         f"embed_dim={module.embed_dim}: give key=... and value=... to "
                         "export() and compare()")
    options = [] if module.batch_first else ["--seq-first"]
    return options + (["--add-zero-attn"] if module.add_zero_attn else [])


def run_module(module, x, key=None, value=None):
    """The module's output (in x's layout) and per-head weights (B, h, N, M) as NumPy arrays."""
    key = x if key is None else key
    value = x if value is None else value
    with torch.no_grad():
        if isinstance(module, nn.MultiheadAttention):
            out, weights = module(x, key, value, average_attn_weights=False)
        else:
            out, weights = module(x)
    return out.numpy(), weights.numpy()


def save_array(out_dir, name, tensor):
    np.save(os.path.join(out_dir, name), tensor.detach().numpy().astype(np.float32))


def export(module, x, out_dir, key=None, value=None):
    """Writes out_dir/weights.npz (the state dict, float32, and num_heads, which a state
    dict does not record), out_dir/x.npy and, when given, key.npy and value.npy."""
    os.makedirs(out_dir, exist_ok=True)
    state = {name: t.detach().numpy().astype(np.float32)
             for name, t in module.state_dict().items()}
    np.savez(os.path.join(out_dir, "weights.npz"), num_heads=heads_of(module), **state)
    save_array(out_dir, "x.npy", x)
    for name, tensor in (("key.npy", key), ("value.npy", value)):
        if tensor is not None:
            save_array(out_dir, name, tensor)


def check_exported(module, x, out_dir, key, value):
    """Raises ValueError in one line when out_dir does not hold what export(module, x, ...)
    writes now: compare() would run mha on other inputs or weights than PyTorch's."""
    saved = {"x.npy": x, "key.npy": key, "value.npy": value}
    for name, tensor in saved.items():
        path = os.path.join(out_dir, name)
        if tensor is None or (name != "x.npy" and not os.path.exists(path)):
            continue
        if not os.path.exists(path) or not np.array_equal(
                np.load(path), tensor.detach().numpy().astype(np.float32)):
            raise ValueError(f"{path} is not the {name[:-4]} given to compare(): call "
                             f"export(module, x, '{out_dir}') with the same tensors first")
    with np.load(os.path.join(out_dir, "weights.npz")) as weights:
        for name, t in module.state_dict().items():
            if name not in weights or not np.array_equal(
                    weights[name], t.detach().numpy().astype(np.float32)):
                raise ValueError(f"{out_dir}/weights.npz does not hold the module's current "
                                 f"{name}: call export(module, x, '{out_dir}') again first")


def compare(module, x, out_dir, mha=None, key=None, value=None):
    """Runs mha on the files export() wrote with the options the module's settings need;
    returns the largest differences from PyTorch (output, attention weights). Raises
    ValueError for a module mha cannot reproduce or files another export wrote, and
    RuntimeError with mha's own message when mha fails."""
    options = mha_options(module, key)
    check_exported(module, x, out_dir, key, value)
    mha = find_mha(mha)
    saved = os.path.join(out_dir, "mha_out.npz")
    inputs = ["--input", os.path.join(out_dir, "x.npy")]
    for option, name, tensor in (("--key", "key.npy", key), ("--value", "value.npy", value)):
        if tensor is not None:
            inputs += [option, os.path.join(out_dir, name)]
    run = subprocess.run([mha, "--weights", os.path.join(out_dir, "weights.npz"), *inputs,
                          *options, "--save", saved],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:  # h comes from the num_heads entry the export saved
        raise RuntimeError(run.stderr.strip() or f"{mha} exited with {run.returncode}")
    ours = np.load(saved)
    out, weights = run_module(module, x, key, value)
    return (float(np.abs(ours["output"] - out).max()),
            float(np.abs(ours["attn_weights"] - weights).max()))


def build_module(args):
    """The module the command line asks for, in eval mode, and its inputs (x, key, value)."""
    torch.manual_seed(args.seed)
    if args.scratch:
        module = FromScratch(args.d_model, args.heads)
    else:
        module = nn.MultiheadAttention(args.d_model, args.heads, bias=not args.no_bias,
                                       add_bias_kv=args.add_bias_kv,
                                       add_zero_attn=args.add_zero_attn, kdim=args.kdim,
                                       vdim=args.kdim, batch_first=not args.seq_first)
    module.eval()
    layout = (args.seq_len, args.batch) if args.seq_first else (args.batch, args.seq_len)
    x = torch.randn(*layout, args.d_model)
    if args.kdim is None:
        return module, x, None, None
    return module, x, torch.randn(*layout, args.kdim), torch.randn(*layout, args.kdim)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d-model", type=int, default=16)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=5)
    parser.add_argument("--scratch", action="store_true",
                        help="export the from-scratch module instead of nn.MultiheadAttention")
    parser.add_argument("--seq-first", action="store_true",
                        help="batch_first=False (PyTorch's default): x is (seq-len, batch, d-model)")
    parser.add_argument("--no-bias", action="store_true", help="bias=False")
    parser.add_argument("--add-bias-kv", action="store_true", help="add_bias_kv=True")
    parser.add_argument("--add-zero-attn", action="store_true", help="add_zero_attn=True")
    parser.add_argument("--kdim", type=int, help="kdim = vdim = KDIM, with a key and a value")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="keep the files in this folder (default: a temporary one)")
    parser.add_argument("--mha", help="the mha binary (default: $MHA, else mha on PATH, "
                                      "else build/mha of this repository)")
    args = parser.parse_args()
    if args.d_model < 1 or args.heads < 1 or args.d_model % args.heads != 0:
        print(f"export_module.py: --d-model {args.d_model} must be a positive multiple of "
              f"--heads {args.heads}", file=sys.stderr)
        return 2
    try:
        mha = find_mha(args.mha)
        module, x, key, value = build_module(args)
        mha_options(module, key)
    except (RuntimeError, ValueError) as refused:
        print(f"export_module.py: {refused}", file=sys.stderr)
        return 2

    keep = args.out is not None
    existed = keep and os.path.exists(args.out)
    out_dir = args.out if keep else tempfile.mkdtemp(prefix="mha-export-")
    finished = False
    try:
        export(module, x, out_dir, key, value)
        output_diff, weights_diff = compare(module, x, out_dir, mha, key, value)
        finished = True
    except (OSError, RuntimeError, ValueError) as failure:
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
