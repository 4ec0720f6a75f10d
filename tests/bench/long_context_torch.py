#!/usr/bin/python3
"""PyTorch's composed form at long contexts (issue 47): where it runs out of memory.

The same rows as `make bench-long-context` (causal self-attention, B = 1, d_model 512, h 8,
forward and forward + backward by autograd) in PyTorch's composed form: F.linear, view,
transpose, matmul, masked_fill and softmax, the (B, h, N, N) scores and weights materialised as
eager PyTorch materialises them. Each row runs in a child process whose address space is
limited to --limit-gib (default 24, this machine's memory), so that a row that needs more fails
with PyTorch's allocation error instead of pushing the machine into swap; the row then says
"out of memory". Prints the time of one run after a warm-up and the child's peak resident
memory.

    /usr/bin/python3 tests/bench/long_context_torch.py [--limit-gib 24] [--threads 2] [N ...]

Never needed by the tests or CI.
"""
import argparse
import math
import os
import resource
import subprocess
import sys
import time

D_MODEL, HEADS = 512, 8


def run_row(n, backward, threads):
    """One row in this process: prints "ms peak-KiB" or "oom peak-KiB"."""
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    d, h = D_MODEL, HEADS
    weights = [torch.randn(d, d) / math.sqrt(d) for _ in range(4)]
    biases = [torch.zeros(d) for _ in range(4)]
    for t in weights + biases:
        t.requires_grad_(backward)
    x = torch.randn(1, n, d, requires_grad=backward)
    blocked = torch.ones(n, n, dtype=torch.bool).triu(1)

    def once():
        heads = (1, n, h, d // h)
        q, k, v = (F.linear(x, w, b).view(heads).transpose(1, 2)
                   for w, b in zip(weights[:3], biases[:3]))
        scores = (q @ k.transpose(-2, -1) / math.sqrt(d // h)).masked_fill(blocked, float("-inf"))
        context = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(1, n, d)
        out = F.linear(context, weights[3], biases[3])
        if backward:
            out.backward(torch.ones_like(out))

    try:
        with torch.set_grad_enabled(backward):
            once()
            start = time.perf_counter()
            once()
            ms = f"{(time.perf_counter() - start) * 1000:.1f}"
    except (RuntimeError, MemoryError):
        ms = "oom"
    print(ms, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("lengths", nargs="*", type=int, default=[1024, 4096, 16384, 65536])
    parser.add_argument("--limit-gib", type=float, default=24.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--row", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.row:
        limit = int(args.limit_gib * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        run_row(int(args.row[0]), args.row[1] == "backward", args.threads)
        return
    print(f"PyTorch composed, causal, B=1 d_model={D_MODEL} h={HEADS}, torch threads "
          f"{args.threads}, address space limited to {args.limit_gib:g} GiB; ms: one run after "
          f"a warm-up; peak: the child's peak resident memory\n")
    print("pass                    N            ms    peak MiB")
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads))
    env.pop("OPENBLAS_CORETYPE", None)
    for backward in (False, True):
        for n in args.lengths:
            answer = subprocess.run(
                [sys.executable, __file__, "--row", str(n), "backward" if backward else "forward",
                 "--limit-gib", str(args.limit_gib), "--threads", str(args.threads)],
                env=env, capture_output=True, text=True).stdout.split()
            ms, peak = answer if len(answer) == 2 else ("failed", "0")
            ms = "out of memory" if ms == "oom" else ms
            print(f"{'forward + backward' if backward else 'forward':<18} {n:6d} {ms:>13} "
                  f"{int(peak) / 1024:11.1f}", flush=True)


if __name__ == "__main__":
    main()
