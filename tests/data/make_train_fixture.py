# Makes tests/data/train/: a tiny model of examples/models/train.py's CharTransformer trained for
# a few steps with train.py's own recipe (AdamW β 0.9/0.95, weight decay 0.01 on the matrices
# only, warm-up plus cosine learning_rate, gradients clipped at norm 1), imported from train.py,
# in float32 and in float64 from the same initial weights on the same batches.
# tests/test_train_torch.cpp runs mha's start_training and train_step on them. Run once from
# the repository root (PyTorch 1.13, NumPy 1.24):
#
#     /usr/bin/python3 tests/data/make_train_fixture.py
#
# It writes
#   train/init.npz      the initial weights as a model file (train.py's save_model, float32)
#   train/expected.npz  tokens, targets (steps, batch, context) int32; the recipe (steps,
#                       warmup, lr, clip as float64); per step in float32 and float64: loss<32|64>,
#                       grad_norm<32|64> (before clipping), lr; and final.<name><32|64>, every
#                       parameter after the last step, stored as float32 (the float64 run's
#                       rounded once: 6e-8 relative, far below what the test tells apart)

import copy
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "train")
sys.path.insert(0, os.path.join(ROOT, "examples", "models"))

from train import CharTransformer, make_optimizer, save_model, train_step  # noqa: E402

VOCAB = [0] + [ord(c) for c in "abcdefghij"]  # V = 11, token 0 the unknown token
D_MODEL, HEADS, LAYERS, D_FF, CONTEXT = 16, 2, 2, 32, 16
BATCH, STEPS, WARMUP, LR, CLIP = 4, 8, 3, 1e-2, 1.0  # CLIP: train_step's


def batches(rng):
    """(steps, batch, context + 1) rows of letters 1..10; in half the rows the second half
    repeats the first (so there is something to learn), and 5% of the inputs are unknown."""
    rows = rng.integers(1, len(VOCAB), (STEPS, BATCH, CONTEXT + 1))
    half = (CONTEXT + 1) // 2
    rows[:, : BATCH // 2, half: 2 * half] = rows[:, : BATCH // 2, :half]
    inputs, targets = rows[:, :, :-1].copy(), rows[:, :, 1:].copy()
    inputs[rng.random(inputs.shape) < 0.05] = 0
    return inputs, targets


def train(model, inputs, targets, dtype):
    """train.py's train_step STEPS times in dtype: per step the loss, the gradient norm before
    clipping and the learning rate, then the final parameters."""
    torch.set_default_dtype(dtype)  # the causal mask the model builds follows it
    m = copy.deepcopy(model).to(dtype)
    optimizer = make_optimizer(m, LR)
    losses, norms, lrs = [], [], []
    for step in range(STEPS):
        loss, norm, lr = train_step(m, optimizer, torch.from_numpy(inputs[step]),
                                    torch.from_numpy(targets[step]), step, STEPS, LR, WARMUP)
        losses.append(loss)
        norms.append(norm)
        lrs.append(lr)
    torch.set_default_dtype(torch.float32)
    final = {name: p.detach().numpy().astype(np.float32) for name, p in m.state_dict().items()}
    return losses, norms, lrs, final


def main():
    torch.manual_seed(24)
    model = CharTransformer(len(VOCAB), D_MODEL, HEADS, LAYERS, D_FF, CONTEXT)
    with torch.no_grad():  # no bias at 0, no norm weight at 1: a bias left out would show
        for name, p in model.named_parameters():
            if p.dim() == 1:
                base = 1.0 if "norm" in name and name.endswith("weight") else 0.0
                p.copy_(base + 0.2 * torch.randn_like(p))
    inputs, targets = batches(np.random.default_rng(24))
    os.makedirs(OUT, exist_ok=True)
    save_model(model, VOCAB, os.path.join(OUT, "init.npz"))
    arrays = {"tokens": inputs.astype(np.int32), "targets": targets.astype(np.int32),
              "steps": np.array([STEPS], dtype=np.float64),
              "warmup": np.array([WARMUP], dtype=np.float64),
              "lr": np.array([LR], dtype=np.float64), "clip": np.array([CLIP], dtype=np.float64)}
    for dtype, suffix in ((torch.float32, "32"), (torch.float64, "64")):
        losses, norms, lrs, final = train(model, inputs, targets, dtype)
        arrays["loss" + suffix] = np.array(losses)
        arrays["grad_norm" + suffix] = np.array(norms)
        arrays["step_lr"] = np.array(lrs)
        for name, value in final.items():
            arrays["final." + name + suffix] = value
        print(suffix, " ".join("%.5f" % l for l in losses), "|",
              " ".join("%.3f" % n for n in norms))
    np.savez(os.path.join(OUT, "expected.npz"), **arrays)


if __name__ == "__main__":
    main()
