# Makes the fixtures for the trainer's operations and their gradients (tests/test_train_ops.cpp):
# LayerNorm, GELU, the token and position embeddings and cross-entropy through torch.autograd,
# three steps of torch.optim.AdamW, torch.nn.utils.clip_grad_norm_, the learning-rate
# schedule of examples/models/train.py, and the whole transformer block
# (nn.TransformerEncoderLayer, pre- and post-LN) through autograd.
#
# Run from the repository root (PyTorch 1.13, NumPy 1.24); it rewrites tests/data/train_ops/:
#
#     /usr/bin/python3 tests/data/make_train_op_fixtures.py
#
# Every input is drawn in float32 and written as float32. Each autograd result is written
# twice: `<name>32`, autograd in float32 (what the C++ float32 code is compared with), and
# `<name>64`, autograd in float64 on the same (upcast) inputs, the exact answer float32 is
# rounded from. Integer inputs (tokens, targets) are written as int64; the optimiser's
# scalars (learning rates, max norm, schedule) as float64, as Python holds them.

import copy
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "data", "train_ops")
sys.path.insert(0, os.path.join(ROOT, "examples", "models"))

from train import learning_rate  # noqa: E402  the schedule under test, from the recipe itself


def f32(generator, *shape, scale=1.0):
    return (torch.randn(*shape, generator=generator) * scale).to(torch.float32)


def autograd(function, inputs, cotangent, dtype):
    """The output of function(*inputs) and the gradient of Σ output ∘ cotangent with respect
    to every input, all computed in dtype."""
    leaves = [t.detach().to(dtype).requires_grad_(True) for t in inputs]
    output = function(*leaves)
    (output * cotangent.to(dtype)).sum().backward()
    return [output.detach()] + [leaf.grad for leaf in leaves]


def both(arrays, names, function, inputs, cotangent):
    for dtype, suffix in ((torch.float32, "32"), (torch.float64, "64")):
        for name, value in zip(names, autograd(function, inputs, cotangent, dtype)):
            arrays[name + suffix] = value.numpy()


def layer_norm(generator):
    # rows of 24 values, one row shifted far from 0 and one nearly constant: the
    # mean subtraction and eps both matter there
    x = f32(generator, 2, 5, 24)
    x[0, 1] += 40.0
    x[1, 2] = 0.5 + 1e-3 * x[1, 2]
    gamma = 1.0 + f32(generator, 24, scale=0.3)
    beta = f32(generator, 24, scale=0.3)
    dy = f32(generator, 2, 5, 24)
    arrays = {"x": x.numpy(), "gamma": gamma.numpy(), "beta": beta.numpy(), "dy": dy.numpy()}
    both(arrays, ["y", "dx", "dgamma", "dbeta"],
         lambda a, g, b: F.layer_norm(a, (24,), g, b, eps=1e-5), [x, gamma, beta], dy)
    return arrays


def gelu(generator):
    # the tails (±6, where Φ saturates) and 0 beside ordinary values
    u = torch.cat([torch.tensor([-6.0, -3.0, -1.0, 0.0, 1e-4, 1.0, 3.0, 6.0]),
                   f32(generator, 40, scale=2.0)]).to(torch.float32)
    dy = f32(generator, 48)
    arrays = {"u": u.numpy(), "dy": dy.numpy()}
    both(arrays, ["y", "du"], F.gelu, [u], dy)
    return arrays


def embedding(generator):
    # vocabulary 7, context 6, B = 2 rows of N = 5 tokens: token 3 read four times, token 6
    # never (its gradient stays 0), position 5 past N (its gradient stays 0)
    tokens = torch.tensor([[3, 1, 3, 0, 5], [2, 3, 4, 3, 1]])
    token_weight = f32(generator, 7, 8, scale=0.02)
    position_weight = f32(generator, 6, 8, scale=0.2)
    dx = f32(generator, 2, 5, 8)
    arrays = {"tokens": tokens.numpy(), "token_weight": token_weight.numpy(),
              "position_weight": position_weight.numpy(), "dx": dx.numpy()}
    both(arrays, ["x", "dtoken", "dposition"],
         lambda t, p: F.embedding(tokens, t) + p[:5], [token_weight, position_weight], dx)
    return arrays


def cross_entropy(generator):
    # B = 2, N = 3, V = 11; one row lifted by 80 and one by -80: a naive exp would overflow
    # or underflow there, a stable one does not care
    logits = f32(generator, 2, 3, 11, scale=3.0)
    logits[0, 1] += 80.0
    logits[1, 0] -= 80.0
    targets = torch.tensor([[4, 0, 10], [7, 7, 2]])
    arrays = {"logits": logits.numpy(), "targets": targets.numpy()}
    for dtype, suffix in ((torch.float32, "32"), (torch.float64, "64")):
        z = logits.detach().to(dtype).requires_grad_(True)
        loss = F.cross_entropy(z.reshape(-1, 11), targets.reshape(-1))
        loss.backward()
        arrays["loss" + suffix] = np.array(loss.item(), dtype=np.float64)
        arrays["dlogits" + suffix] = z.grad.numpy()
    return arrays


def adamw(generator):
    # train.py's two groups: a matrix with weight decay 0.01, a vector without; three steps
    # with given gradients and learning rates, every parameter written after each step
    matrix = torch.nn.Parameter(f32(generator, 3, 4, scale=0.5))
    vector = torch.nn.Parameter(f32(generator, 4, scale=0.5))
    arrays = {"matrix": matrix.detach().numpy().copy(), "vector": vector.detach().numpy().copy()}
    optimizer = torch.optim.AdamW([{"params": [matrix], "weight_decay": 0.01},
                                   {"params": [vector], "weight_decay": 0.0}],
                                  lr=3e-3, betas=(0.9, 0.95))
    lrs = [3e-3, 2e-3, 5e-2]
    arrays["lrs"] = np.array(lrs, dtype=np.float64)
    for step, lr in enumerate(lrs):
        for group in optimizer.param_groups:
            group["lr"] = lr
        # the third step's gradients are tiny, so eps shows in the denominator
        scale = 1e-7 if step == 2 else 1.0
        matrix.grad = f32(generator, 3, 4, scale=scale)
        vector.grad = f32(generator, 4, scale=scale)
        arrays["matrix_grad%d" % step] = matrix.grad.numpy().copy()
        arrays["vector_grad%d" % step] = vector.grad.numpy().copy()
        optimizer.step()
        arrays["matrix%d" % step] = matrix.detach().numpy().copy()
        arrays["vector%d" % step] = vector.detach().numpy().copy()
    return arrays


def clip(generator):
    # two gradients of norm well above 1 (clipped to 1) and, scaled down, below 1 (kept)
    arrays = {}
    for case, scale in (("large", 3.0), ("small", 0.05)):
        first = torch.nn.Parameter(torch.zeros(3, 4))
        second = torch.nn.Parameter(torch.zeros(5))
        first.grad = f32(generator, 3, 4, scale=scale)
        second.grad = f32(generator, 5, scale=scale)
        arrays[case + "_first"] = first.grad.numpy().copy()
        arrays[case + "_second"] = second.grad.numpy().copy()
        norm = torch.nn.utils.clip_grad_norm_([first, second], 1.0)
        arrays[case + "_norm"] = np.array(norm.item(), dtype=np.float64)
        arrays[case + "_first_clipped"] = first.grad.numpy().copy()
        arrays[case + "_second_clipped"] = second.grad.numpy().copy()
    return arrays


def schedule():
    # the kjv-2x4 recipe: 3,000 steps, warm-up 100, peak 3e-3
    steps = [0, 1, 50, 98, 99, 100, 101, 1000, 1550, 2999, 3000]
    return {"steps": np.array(steps, dtype=np.int64),
            "lrs": np.array([learning_rate(s, 3000, 3e-3, 100) for s in steps],
                            dtype=np.float64)}


def block(generator, norm_first, causal):
    """nn.TransformerEncoderLayer(d_model 8, 2 heads, d_ff 16, GELU, dropout 0, batch_first)
    on x (2, 5, 8): its state dict (every bias and norm parameter drawn, none left at its
    default 0 or 1) and, in float32 and float64, the output and the gradients of
    Σ output ∘ grad_output with respect to x and every parameter ("grad.<state-dict name>")."""
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu",
                                             batch_first=True, norm_first=norm_first)
    with torch.no_grad():
        for name, parameter in layer.named_parameters():
            if parameter.dim() == 1:
                base = 1.0 if name.startswith("norm") and name.endswith("weight") else 0.0
                parameter.copy_(base + f32(generator, *parameter.shape, scale=0.2))
    x = f32(generator, 2, 5, 8)
    grad_output = f32(generator, 2, 5, 8)
    mask = torch.triu(torch.full((5, 5), float("-inf")), diagonal=1) if causal else None
    weights = {name: t.detach().numpy().copy() for name, t in layer.state_dict().items()}
    arrays = {"x": x.numpy(), "grad_output": grad_output.numpy()}
    for dtype, suffix in ((torch.float32, "32"), (torch.float64, "64")):
        module = copy.deepcopy(layer).to(dtype)
        leaf = x.detach().to(dtype).requires_grad_(True)
        output = module(leaf, src_mask=None if mask is None else mask.to(dtype))
        (output * grad_output.to(dtype)).sum().backward()
        arrays["output" + suffix] = output.detach().numpy()
        arrays["grad.input" + suffix] = leaf.grad.numpy()
        for name, parameter in module.named_parameters():
            arrays["grad." + name + suffix] = parameter.grad.numpy()
    return weights, arrays


def main():
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(28)
    os.makedirs(OUT, exist_ok=True)
    makers = {"layer_norm": layer_norm, "gelu": gelu, "embedding": embedding,
              "cross_entropy": cross_entropy, "adamw": adamw, "clip": clip}
    for name, make in makers.items():
        np.savez(os.path.join(OUT, name + ".npz"), **make(generator))
    np.savez(os.path.join(OUT, "schedule.npz"), **schedule())
    for name, norm_first, causal in (("block_pre", True, True), ("block_post", False, False)):
        weights, arrays = block(generator, norm_first, causal)
        np.savez(os.path.join(OUT, name + "_weights.npz"), **weights)
        np.savez(os.path.join(OUT, name + ".npz"), **arrays)
    # the schedule's own check: warm-up ends at the peak, the cosine ends at a tenth of it
    assert math.isclose(learning_rate(99, 3000, 3e-3, 100), 3e-3)
    assert math.isclose(learning_rate(3000, 3000, 3e-3, 100), 3e-4)


if __name__ == "__main__":
    main()
