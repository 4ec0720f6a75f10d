"""Check mha's gradients for this folder's layer against PyTorch's autograd.

Reads weights.npz (an nn.MultiheadAttention(8, 2, batch_first=True) state dict
and num_heads), x.npy (1, 4, 8) and dO.npy (1, 4, 8) from this folder, runs
    mha --weights weights.npz --input x.npy --grad-output dO.npy --save OUT.npz
in a temporary folder, computes (out * dO).sum().backward() in PyTorch, and
prints each gradient's largest difference and the first entry of
out_proj.bias's gradient from both. Exit status 0 when every gradient agrees
to 1e-4 of its largest magnitude, 1 when one does not, 2 when PyTorch, NumPy
or mha is missing (one line on stderr). The test suite does not run it.

    python3 torch_check.py [--mha PATH]
    python3 torch_check.py --write      # remake the three files (seed 0)
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as missing:
    print(f"torch_check.py: needs PyTorch and NumPy ({missing})", file=sys.stderr)
    sys.exit(2)

HERE = os.path.dirname(os.path.abspath(__file__))


def write_files():
    """The folder's files: random weights and x, and a dO of small whole numbers, so that
    db_o (the column sums of dO) can be added up by hand from the trace."""
    torch.manual_seed(0)
    layer = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    state = {k: v.detach().numpy().astype(np.float32) for k, v in layer.state_dict().items()}
    np.savez(os.path.join(HERE, "weights.npz"), num_heads=2, **state)
    np.save(os.path.join(HERE, "x.npy"), torch.randn(1, 4, 8).numpy().astype(np.float32))
    d_out = torch.randint(-2, 3, (1, 4, 8)).float()
    np.save(os.path.join(HERE, "dO.npy"), d_out.numpy().astype(np.float32))


def torch_gradients():
    """The module's gradients of L = (out * dO).sum(), named as mha --save names them."""
    weights = np.load(os.path.join(HERE, "weights.npz"))
    layer = torch.nn.MultiheadAttention(8, int(weights["num_heads"]), batch_first=True)
    layer.load_state_dict({k: torch.from_numpy(weights[k]) for k in weights.files
                           if k != "num_heads"})
    x = torch.from_numpy(np.load(os.path.join(HERE, "x.npy"))).requires_grad_(True)
    d_out = torch.from_numpy(np.load(os.path.join(HERE, "dO.npy")))
    out, _ = layer(x, x, x)
    (out * d_out).sum().backward()
    grads = {"grad." + name: p.grad.numpy() for name, p in layer.named_parameters()}
    grads["grad.input"] = x.grad.numpy()
    return grads


def mha_gradients(mha):
    """mha's gradients of the same L, read back from its --save file."""
    scratch = tempfile.mkdtemp(prefix="mha-07-")
    try:
        saved = os.path.join(scratch, "out.npz")
        run = subprocess.run([mha, "--weights", "weights.npz", "--input", "x.npy",
                              "--grad-output", "dO.npy", "--save", saved], cwd=HERE,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if run.returncode != 0:
            raise RuntimeError(run.stderr.strip() or f"{mha} exited with {run.returncode}")
        with np.load(saved) as arrays:
            return {k: arrays[k] for k in arrays.files if k.startswith("grad.")}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mha", default=os.environ.get("MHA", "mha"),
                        help="the mha binary (default: $MHA, else mha on PATH)")
    parser.add_argument("--write", action="store_true",
                        help="remake weights.npz, x.npy and dO.npy instead of checking")
    args = parser.parse_args()
    if args.write:
        write_files()
        return 0
    mha = shutil.which(args.mha)
    if mha is None:
        print(f"torch_check.py: cannot find mha ('{args.mha}'): put it on PATH, "
              "set MHA=/path/to/mha or give --mha", file=sys.stderr)
        return 2
    try:
        ours = mha_gradients(mha)
    except (OSError, RuntimeError) as failure:
        print(f"torch_check.py: {failure}", file=sys.stderr)
        return 2
    theirs = torch_gradients()
    worst = 0.0
    print(f"{'name':<22} {'shape':<10} max |mha - torch| / max |torch|")
    for name, want in theirs.items():
        got = ours[name]
        relative = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
        worst = max(worst, relative)
        print(f"{name:<22} {str(want.shape):<10} {relative:.1e}")
    print(f"grad.out_proj.bias[0]: mha {ours['grad.out_proj.bias'][0]:.6f}, "
          f"torch {theirs['grad.out_proj.bias'][0]:.6f}")
    return 0 if worst <= 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
