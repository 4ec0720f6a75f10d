#!/usr/bin/python3
"""PyTorch's side of `mha bench --compare-torch`.

Times nn.MultiheadAttention (batch_first, self-attention, no mask,
need_weights=False, inference mode) on the sizes given as B,N,d_model,h and
prints one line per size: "B N d_model h median_ms min_ms max_ms" (the median,
fastest and slowest run). Run by mha bench through /usr/bin/python3; never
needed by the tests or CI.

With --backward (mha bench --backward --compare-torch) it times the forward
and the backward of L = sum(output * dO) by autograd, gradients for the input
and every weight, two ways: nn.MultiheadAttention, and the same maths composed
from F.linear, matmul and softmax as mha computes it. It prints two lines per
size: "B N d_model h median_ms min_ms max_ms module" and the same ending in
"composed".
"""
import argparse
import math
import statistics
import time

import torch
import torch.nn.functional as F


def spread_ms(run, repeat):
    """The median, fastest and slowest of `repeat` runs after a warm-up, as "median min max"."""
    run()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return f"{statistics.median(times):.4f} {min(times):.4f} {max(times):.4f}"


def composed(x, weights, h):
    """nn.MultiheadAttention's maths from F.linear, matmul and softmax: mha's steps 1-14."""
    w_q, b_q, w_k, b_k, w_v, b_v, w_o, b_o = weights
    b, n, d = x.shape
    heads = (b, n, h, d // h)
    q = F.linear(x, w_q, b_q).view(heads).transpose(1, 2)
    k = F.linear(x, w_k, b_k).view(heads).transpose(1, 2)
    v = F.linear(x, w_v, b_v).view(heads).transpose(1, 2)
    p = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // h), dim=-1)
    context = (p @ v).transpose(1, 2).reshape(b, n, d)
    return F.linear(context, w_o, b_o)


def backward_runs(module, x, grad_output, h):
    """One forward + backward of each form, the gradients dropped before each run."""
    d = x.shape[-1]
    w_q, w_k, w_v = module.in_proj_weight.detach().split(d)
    b_q, b_k, b_v = module.in_proj_bias.detach().split(d)
    weights = [t.clone().requires_grad_() for t in (w_q, b_q, w_k, b_k, w_v, b_v,
               module.out_proj.weight.detach(), module.out_proj.bias.detach())]
    x = x.clone().requires_grad_()

    def run_module():
        module.zero_grad(set_to_none=True)
        x.grad = None
        module(x, x, x, need_weights=False)[0].backward(grad_output)

    def run_composed():
        for w in weights:
            w.grad = None
        x.grad = None
        composed(x, weights, h).backward(grad_output)

    return {"module": run_module, "composed": run_composed}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--backward", action="store_true",
                        help="time forward + backward, nn.MultiheadAttention and composed")
    parser.add_argument("sizes", nargs="+", help="B,N,d_model,h")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    for size in args.sizes:
        b, n, d, h = (int(v) for v in size.split(","))
        module = torch.nn.MultiheadAttention(d, h, batch_first=True).eval()
        x = torch.randn(b, n, d)
        if not args.backward:
            with torch.inference_mode():
                ms = spread_ms(lambda: module(x, x, x, need_weights=False), args.repeat)
            print(b, n, d, h, ms, flush=True)
            continue
        grad_output = torch.randn(b, n, d)
        for form, run in backward_runs(module, x, grad_output, h).items():
            print(b, n, d, h, spread_ms(run, args.repeat), form, flush=True)


if __name__ == "__main__":
    main()
