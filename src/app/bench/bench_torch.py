#!/usr/bin/python3
"""PyTorch's side of `mha bench --compare-torch`.

mha bench starts one of these per thread setting through /usr/bin/python3 and
keeps it alive, so that PyTorch's runs take turns with mha's own. It answers
every order on stdin with one line on stdout:

  (on start)          "ready"
  size SIZE           builds the model for SIZE, runs each of its forms once
                      (a warm-up) and answers "ready FORM...": the forms
  run FORM            runs FORM once and answers its time in ms

SIZE is B,N,d_model,h, and the one form is "forward": nn.MultiheadAttention
(batch_first, self-attention, no mask, need_weights=False, inference mode).

With --backward (mha bench --backward) the forms are the forward and the
backward of L = sum(output * dO) by autograd, gradients for the input and
every weight, two ways: "module", nn.MultiheadAttention, and "composed", the
same maths from F.linear, matmul and softmax as mha computes it.

With --train (mha bench --train) SIZE is B,N,d_model,h,layers,d_ff,vocab and
the one form, "step", is a training step of examples/models/train.py's
CharTransformer with train.py's own train_step (AdamW, clipping, the
learning-rate schedule) on one random batch.

Never needed by the tests or CI.
"""
import argparse
import math
import os
import sys
import time

import torch
import torch.nn.functional as F


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


def attention_forms(size, backward):
    """The forms to time at size "B,N,d_model,h", by name."""
    b, n, d, h = (int(v) for v in size.split(","))
    module = torch.nn.MultiheadAttention(d, h, batch_first=True).eval()
    x = torch.randn(b, n, d)
    if not backward:
        def run_forward():
            with torch.inference_mode():
                module(x, x, x, need_weights=False)
        return {"forward": run_forward}

    grad_output = torch.randn(b, n, d)
    w_q, w_k, w_v = module.in_proj_weight.detach().split(d)
    b_q, b_k, b_v = module.in_proj_bias.detach().split(d)
    weights = [t.clone().requires_grad_() for t in (w_q, b_q, w_k, b_k, w_v, b_v,
               module.out_proj.weight.detach(), module.out_proj.bias.detach())]
    x = x.clone().requires_grad_()

    def run_module():  # the gradients dropped before each run
        module.zero_grad(set_to_none=True)
        x.grad = None
        module(x, x, x, need_weights=False)[0].backward(grad_output)

    def run_composed():
        for w in weights:
            w.grad = None
        x.grad = None
        composed(x, weights, h).backward(grad_output)

    return {"module": run_module, "composed": run_composed}


def training_forms(size):
    """A training step of CharTransformer at size "B,N,d_model,h,layers,d_ff,vocab"."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                    "examples", "models"))
    from train import CharTransformer, make_optimizer, train_step

    b, n, d, h, layers, d_ff, vocab = (int(v) for v in size.split(","))
    model = CharTransformer(vocab, d, h, layers, d_ff, n)
    optimizer = make_optimizer(model, 3e-3)
    inputs, targets = torch.randint(0, vocab, (2, b, n))
    step = 0

    def run_step():
        nonlocal step
        train_step(model, optimizer, inputs, targets, step, 3000, 3e-3, 100)
        step += 1

    return {"step": run_step}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, required=True, help="torch threads")
    parser.add_argument("--backward", action="store_true",
                        help="forward + backward, nn.MultiheadAttention and composed")
    parser.add_argument("--train", action="store_true", help="training steps")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    forms = {}
    print("ready", flush=True)
    for line in sys.stdin:
        order, _, what = line.strip().partition(" ")
        if order == "size":
            forms = {}  # the last size's tensors go before the next size's are made
            forms = training_forms(what) if args.train else attention_forms(what, args.backward)
            for run in forms.values():
                run()
            print("ready", *forms, flush=True)
        elif order == "run" and what in forms:
            start = time.perf_counter()
            forms[what]()
            print(f"{(time.perf_counter() - start) * 1000:.4f}", flush=True)
        else:
            sys.exit(f"bench_torch.py: unknown order: {line.strip()}")


if __name__ == "__main__":
    main()
