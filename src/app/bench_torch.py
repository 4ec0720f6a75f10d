#!/usr/bin/python3
"""PyTorch's side of `mha bench --compare-torch`.

Times nn.MultiheadAttention (batch_first, self-attention, no mask,
need_weights=False, inference mode) on the sizes given as B,N,d_model,h and
prints one line per size: "B N d_model h median_ms". Run by mha bench through
/usr/bin/python3; never needed by the tests or CI.
"""
import argparse
import statistics
import time

import torch


def median_ms(module, x, repeat):
    module(x, x, x, need_weights=False)  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        module(x, x, x, need_weights=False)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("sizes", nargs="+", help="B,N,d_model,h")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    with torch.inference_mode():
        for size in args.sizes:
            b, n, d, h = (int(v) for v in size.split(","))
            module = torch.nn.MultiheadAttention(d, h, batch_first=True).eval()
            x = torch.randn(b, n, d)
            print(b, n, d, h, f"{median_ms(module, x, args.repeat):.4f}", flush=True)


if __name__ == "__main__":
    main()
