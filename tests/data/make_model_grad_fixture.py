# Makes tests/data/model_grad/: a tiny character model (examples/models/train.py's
# CharTransformer and save_model, imported), two rows of tokens with their next-character
# targets, and torch.autograd's cross-entropy loss and the gradient of every array of the model
# file, in float32 and in float64, for both rows and for row 0 alone. Run once from the repository root:
#
#     /usr/bin/python3 tests/data/make_model_grad_fixture.py

import copy
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "model_grad")
sys.path.insert(0, os.path.join(ROOT, "examples", "models"))

from train import CharTransformer, save_model  # noqa: E402

VOCAB = [0] + [ord(c) for c in "abcdef"]  # V = 7, token 0 the unknown token
D_MODEL, HEADS, LAYERS, D_FF, CONTEXT = 8, 2, 2, 16, 6


def autograd(model, tokens, targets, dtype):
    """The loss, the logits and every parameter's gradient, computed in dtype."""
    torch.set_default_dtype(dtype)  # the causal mask the model builds follows it
    m = copy.deepcopy(model).to(dtype)
    logits, _ = m(tokens)
    loss = F.cross_entropy(logits.reshape(-1, len(VOCAB)), targets.reshape(-1))
    loss.backward()
    torch.set_default_dtype(torch.float32)
    grads = {"grad." + name: p.grad.numpy() for name, p in m.named_parameters()}
    return loss.item(), logits.detach().numpy(), grads


def main():
    torch.manual_seed(28)
    model = CharTransformer(len(VOCAB), D_MODEL, HEADS, LAYERS, D_FF, CONTEXT)
    with torch.no_grad():  # every array of a useful size, so each gradient is far from zero
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    rows = torch.randint(0, len(VOCAB), (2, CONTEXT + 1))
    tokens, targets = rows[:, :-1], rows[:, 1:]
    os.makedirs(OUT, exist_ok=True)
    save_model(model, VOCAB, os.path.join(OUT, "model.npz"))
    arrays = {"tokens": tokens.numpy().astype(np.int32),
              "targets": targets.numpy().astype(np.int32)}
    # both rows (the core's batch), then row 0 alone under "row0." (mha --model --text)
    for prefix, rows in (("", slice(0, 2)), ("row0.", slice(0, 1))):
        for dtype, suffix in ((torch.float32, "32"), (torch.float64, "64")):
            loss, logits, grads = autograd(model, tokens[rows], targets[rows], dtype)
            arrays[prefix + "loss" + suffix] = np.array([loss])
            arrays[prefix + "logits" + suffix] = logits
            for name, grad in grads.items():
                arrays[prefix + name + suffix] = grad
    np.savez(os.path.join(OUT, "expected.npz"), **arrays)


if __name__ == "__main__":
    main()
