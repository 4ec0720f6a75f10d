# Trains kjv-2x4: a 2-layer, 4-heads-per-layer character-level transformer on the King
# James Bible, measures what each head does, and writes the model, its loss log and
# the parity fixtures the C++ tests read.
#
# Run once from the repository root, on one CPU core (about 7 minutes; the defaults are the
# recipe of kjv-2x4, examples/models/README.md):
#
#     apt-get install bible-kjv-text          # the corpus (pulls in the `bible` reader)
#     /usr/bin/python3 examples/models/train.py
#
# It writes examples/models/kjv-2x4.npz (the weights, float32, plus `vocab` and `heads`),
# examples/models/kjv-2x4.log (the loss and the head-role scores every 250 steps) and
# tests/data/model/*.npz (logits and every layer's attention weights for a few texts).
# Everything is seeded and runs on one thread, so a rerun on the same machine writes the
# same numbers. The corpus is read from the package at training time; it is not kept in
# the repository.

import argparse
import math
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "data", "model")

UNKNOWN = 0          # index of the unknown token: any character outside the corpus
SEGMENT_LETTERS = "abcdefghijklmnopqrstuvwxyz"
INDUCTION_LENGTH = 24  # the random segment the induction score repeats


# ---------------------------------------------------------------- corpus and vocabulary

def read_corpus():
    """Every verse of the KJV as printed by `bible -f`, references stripped, joined by spaces."""
    text = subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], check=True, capture_output=True,
                          text=True).stdout
    verses = [line.split(" ", 1)[1] for line in text.splitlines() if " " in line]
    return " ".join(verses)


def make_vocab(corpus):
    """Index 0 is the unknown token (stored as code point 0); then the corpus's characters."""
    return [0] + sorted({ord(c) for c in corpus})


def encode(text, vocab):
    index = {code: i for i, code in enumerate(vocab)}
    return [index.get(ord(c), UNKNOWN) if ord(c) != 0 else UNKNOWN for c in text]


# ---------------------------------------------------------------- model

class CharTransformer(nn.Module):
    """Learned token and position embeddings, pre-LN blocks (nn.TransformerEncoderLayer's
    modules, exact GELU), a final LayerNorm and a linear head to the vocabulary."""

    def __init__(self, vocab_size, d_model, heads, layers, d_ff, context):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(context, d_model)
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(d_model, heads, d_ff, dropout=0.0, activation="gelu",
                                       batch_first=True, norm_first=True)
            for _ in range(layers)])
        self.norm = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size)
        # Small token embeddings (GPT-2's 0.02, not nn.Embedding's N(0, 1)), so what layer 0
        # writes into the residual stream is not drowned by them when layer 1 reads it; larger
        # position embeddings, so attending by position can be sharp early (see the README).
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.2)

    def forward(self, tokens, need_weights=False):
        """tokens (B, N) -> logits (B, N, vocab), [per layer (B, h, N, N) weights or None]."""
        n = tokens.shape[1]
        x = self.token_embedding(tokens) + self.position_embedding.weight[:n]
        causal = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
        weights = []
        for layer in self.layers:
            y = layer.norm1(x)
            a, w = layer.self_attn(y, y, y, attn_mask=causal, need_weights=need_weights,
                                   average_attn_weights=False)
            x = x + a
            x = x + layer.linear2(F.gelu(layer.linear1(layer.norm2(x))))
            weights.append(w)
        return self.lm_head(self.norm(x)), weights


# ---------------------------------------------------------------- batches

def random_segment(rng, length):
    return [SEGMENT_LETTERS[i] for i in rng.integers(0, len(SEGMENT_LETTERS), length)]


def make_batch(data, rng, batch, context, repeat_fraction, letter_ids, unknown_fraction,
               copies_to_end=False):
    """(B, context) inputs and targets from random windows of `data`; a fraction of rows get a
    random lowercase segment of 8..32 letters written twice at random places (or, with
    copies_to_end, again and again until the row ends), so copying it pays (induction)."""
    starts = rng.integers(0, len(data) - context - 1, batch)
    rows = np.stack([data[s:s + context + 1] for s in starts]).copy()
    for row in rows[: int(round(batch * repeat_fraction))]:
        length = int(rng.integers(8, 33))
        segment = letter_ids[rng.integers(0, len(letter_ids), length)]
        if copies_to_end:
            first = int(rng.integers(0, context + 1 - 2 * length))
            copies = np.resize(segment, context + 1 - first)
            row[first:] = copies
            continue
        first = int(rng.integers(0, context + 1 - 2 * length))
        second = int(rng.integers(first + length, context + 2 - length))
        row[first:first + length] = segment
        row[second:second + length] = segment
    inputs = torch.from_numpy(rows[:, :-1].astype(np.int64))
    targets = torch.from_numpy(rows[:, 1:].astype(np.int64))
    unknown = torch.from_numpy(rng.random(inputs.shape) < unknown_fraction)
    inputs[unknown] = UNKNOWN
    return inputs, targets


# ---------------------------------------------------------------- head roles

def attention(model, text, vocab):
    """Every layer's (h, N, N) weights for one text."""
    with torch.no_grad():
        _, weights = model(torch.tensor([encode(text, vocab)]), need_weights=True)
    return [w[0].numpy() for w in weights]


def prose_samples(held_out, count, length, rng):
    starts = rng.integers(0, len(held_out) - length, count)
    return [held_out[s:s + length] for s in starts]


def role_scores(w, text):
    """w (h, N, N) of one text -> per head (previous, first, same, induction), each the mean over
    the queries it applies to of the weight on the keys it names (the same definitions as mha's
    --summary, src/show/head_roles.cpp):
      previous   queries i >= 1, key i-1
      first      queries i >= 1, key 0
      same       queries whose character occurred before, every earlier key with that character
      induction  queries i whose last two characters occurred before as text[j-1], text[j]
                 (j < i), every such key j+1: the character that followed them then
    """
    n = len(text)
    previous = w[:, np.arange(1, n), np.arange(0, n - 1)].mean(axis=1)
    first = w[:, 1:, 0].mean(axis=1)
    same, induction = [], []
    for i in range(n):
        keys = [j for j in range(i) if text[j] == text[i]]
        if keys:
            same.append(w[:, i, keys].sum(axis=1))
        keys = [j + 1 for j in range(1, i) if text[j] == text[i] and text[j - 1] == text[i - 1]]
        if keys:
            induction.append(w[:, i, keys].sum(axis=1))
    nan = np.full(w.shape[0], np.nan)
    return (previous, first, np.mean(same, axis=0) if same else nan,
            np.mean(induction, axis=0) if induction else nan)


def head_roles(model, vocab, held_out, seed=1, samples=16):
    """Per layer, per head: previous, first and same-character scores averaged over held-out
    prose windows of 96 characters, and the induction score averaged over random 24-letter
    lowercase segments written twice."""
    rng = np.random.default_rng(seed)
    layers = len(model.layers)
    heads = model.layers[0].self_attn.num_heads
    roles = {role: np.zeros((layers, heads)) for role in ("previous", "first", "same", "induction")}
    for text in prose_samples(held_out, samples, 96, rng):
        for l, w in enumerate(attention(model, text, vocab)):
            previous, first, same, _ = role_scores(w, text)
            roles["previous"][l] += previous / samples
            roles["first"][l] += first / samples
            roles["same"][l] += same / samples
    for _ in range(samples):
        segment = "".join(random_segment(rng, INDUCTION_LENGTH))
        for l, w in enumerate(attention(model, segment + segment, vocab)):
            roles["induction"][l] += role_scores(w, segment + segment)[3] / samples
    return roles


def format_roles(roles):
    lines = []
    for l in range(roles["previous"].shape[0]):
        for h in range(roles["previous"].shape[1]):
            lines.append("layer %d head %d: previous %.3f  first %.3f  induction %.3f  same %.3f"
                         % (l, h, roles["previous"][l, h], roles["first"][l, h],
                            roles["induction"][l, h], roles["same"][l, h]))
    return lines


# ---------------------------------------------------------------- files

def save_model(model, vocab, path):
    arrays = {name: t.detach().numpy().astype(np.float32) for name, t in model.state_dict().items()}
    arrays["vocab"] = np.array(vocab, dtype=np.int32)
    arrays["heads"] = np.array([layer.self_attn.num_heads for layer in model.layers],
                               dtype=np.int32)
    np.savez(path, **arrays)


FIXTURE_TEXTS = {
    "prose": "In the beginning God created the heaven and the earth.",
    "induction": "The password is qxvbtmrkalzwpfjh. Again: the password is qxvbtmrkalzwpfjh.",
    "unknown": "Psalm 23, verse 1: The LORD is my shepherd; I shall not want. ~",
}


def load_model(path):
    """The model as save_model (or mha train) wrote it, and its vocabulary; the arrays under
    train.* that mha train adds for --resume (AdamW's moments, the step, ...) are left alone."""
    arrays = {name: a for name, a in np.load(path).items() if not name.startswith("train.")}
    vocab = [int(c) for c in arrays.pop("vocab")]
    heads = arrays.pop("heads")
    vocab_size, d_model = arrays["token_embedding.weight"].shape
    model = CharTransformer(vocab_size, d_model, int(heads[0]), len(heads),
                            arrays["layers.0.linear1.weight"].shape[0],
                            arrays["position_embedding.weight"].shape[0])
    model.load_state_dict({name: torch.from_numpy(a) for name, a in arrays.items()})
    return model.eval(), vocab


def write_fixtures(model, vocab):
    """For each text: its code points, the logits (1, N, vocab) and every layer's attention
    weights (1, h, N, N), from the model as saved (float32)."""
    os.makedirs(FIXTURES, exist_ok=True)
    for name, text in FIXTURE_TEXTS.items():
        with torch.no_grad():
            logits, weights = model(torch.tensor([encode(text, vocab)]), need_weights=True)
        arrays = {"text": np.array([ord(c) for c in text], dtype=np.int32),
                  "logits": logits.numpy().astype(np.float32)}
        for l, w in enumerate(weights):
            arrays["attn_weights.%d" % l] = w.numpy().astype(np.float32)
        np.savez(os.path.join(FIXTURES, name + ".npz"), **arrays)


def check_against_encoder_layer(model):
    """Our forward must be nn.TransformerEncoderLayer's own (pre-LN, causal)."""
    tokens = torch.randint(0, model.lm_head.out_features, (2, 40), generator=torch.Generator()
                           .manual_seed(5))
    with torch.no_grad():
        x = model.token_embedding(tokens) + model.position_embedding.weight[:40]
        mask = torch.triu(torch.full((40, 40), float("-inf")), diagonal=1)
        for layer in model.layers:
            x = layer(x, src_mask=mask)
        theirs = model.lm_head(model.norm(x))
        ours, _ = model(tokens)
    difference = (theirs - ours).abs().max().item()
    assert difference < 1e-4, difference


# ---------------------------------------------------------------- training

def learning_rate(step, steps, peak, warmup):
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def make_optimizer(model, lr):
    """AdamW (β 0.9, 0.95) with weight decay 0.01 on the matrices (2-D, not the embeddings)
    and none on the rest: biases, norms, embeddings."""
    named = list(model.named_parameters())
    decay = [p for n, p in named if p.dim() == 2 and "embedding" not in n]
    rest = [p for n, p in named if not (p.dim() == 2 and "embedding" not in n)]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                              {"params": rest, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.95))


def train_step(model, optimizer, inputs, targets, step, steps, peak, warmup):
    """One step of the recipe on (B, N) inputs and targets: the learning rate of `step`, the
    mean cross-entropy, its gradients clipped to norm 1, AdamW. Returns the loss (before the
    update), the gradient norm before clipping and the learning rate."""
    lr = learning_rate(step, steps, peak, warmup)
    for group in optimizer.param_groups:
        group["lr"] = lr
    logits, _ = model(inputs)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item(), norm.item(), lr


def replay(args, parser):
    """--init and --batches: train the model of the --init file (as `mha train --steps 0
    --out` writes it) on the batches of the --batches file (as `mha train --save-batches`
    writes them), with no corpus; print one line per step and save the model to --out."""
    if args.batches is None or args.init is None or args.out is None:
        parser.error("--init, --batches and --out go together")
    model, vocab = load_model(args.init)
    model.train()
    batches = np.load(args.batches)
    if "inputs" not in batches or "targets" not in batches:
        parser.error("%s: expected arrays inputs and targets" % args.batches)
    inputs, targets = batches["inputs"], batches["targets"]
    if inputs.ndim != 3 or inputs.shape != targets.shape:
        parser.error("%s: inputs %s and targets %s, expected both (steps, batch, context)"
                     % (args.batches, inputs.shape, targets.shape))
    steps = len(inputs) if args.steps is None else args.steps
    context = model.position_embedding.weight.shape[0]
    if steps > len(inputs) or inputs.shape[2] > context:
        parser.error("%s holds %d steps of %d tokens; asked for %d steps, the model's context "
                     "is %d" % (args.batches, len(inputs), inputs.shape[2], steps, context))
    for ids in (inputs, targets):
        if ids.min() < 0 or ids.max() >= len(vocab):
            parser.error("%s: token ids outside 0..%d" % (args.batches, len(vocab) - 1))
    optimizer = make_optimizer(model, args.lr)
    print("# step  loss  grad_norm(before clipping)  lr", flush=True)
    for step in range(steps):
        rows = [torch.from_numpy(ids[step].astype(np.int64)) for ids in (inputs, targets)]
        loss, norm, lr = train_step(model, optimizer, *rows, step, steps, args.lr, args.warmup)
        print("%d %.9g %.9g %.9g" % (step, loss, norm, lr), flush=True)
    save_model(model, vocab, args.out)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, help="default 3000")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--context", type=int, default=128)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--d-ff", type=int, default=256)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--repeat-fraction", type=float, default=0.3)
    parser.add_argument("--unknown-fraction", type=float, default=0.005)
    parser.add_argument("--copies-to-end", action=argparse.BooleanOptionalAction, default=True,
                        help="repeat the random segment until the row ends, not just twice")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default="kjv-2x4")
    parser.add_argument("--no-fixtures", action="store_true")
    parser.add_argument("--measure", action="store_true",
                        help="no training: load <name>.npz, print its head roles, write fixtures")
    parser.add_argument("--init", metavar="FILE.npz",
                        help="start from this model file (mha train --steps 0 --out FILE.npz)")
    parser.add_argument("--batches", metavar="FILE.npz",
                        help="train on these batches (mha train --save-batches FILE.npz: inputs, "
                             "targets (steps, batch, context)) instead of the corpus; needs "
                             "--init and --out, prints each step's loss; --steps defaults to "
                             "the file's")
    parser.add_argument("--out", metavar="FILE.npz",
                        help="where to save the model (default examples/models/<name>.npz)")
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    if args.batches is not None or args.init is not None:
        replay(args, parser)
        return
    if args.steps is None:
        args.steps = 3000
    rng = np.random.default_rng(args.seed)

    corpus = read_corpus()
    if args.measure:
        model, vocab = load_model(os.path.join(HERE, args.name + ".npz"))
        for line in format_roles(head_roles(model, vocab, corpus[int(len(corpus) * 0.97):])):
            print(line)
        if not args.no_fixtures:
            write_fixtures(model, vocab)
        return
    vocab = make_vocab(corpus)
    data = np.array(encode(corpus, vocab), dtype=np.int64)
    split = int(len(data) * 0.97)  # the last 3% (from Hebrews 11:25 on) held out
    train, valid = data[:split], data[split:]
    held_out_text = corpus[split:]
    letter_ids = np.array(encode(SEGMENT_LETTERS, vocab))

    model = CharTransformer(len(vocab), args.d_model, args.heads, args.layers, args.d_ff,
                            args.context)
    check_against_encoder_layer(model)
    optimizer = make_optimizer(model, args.lr)
    parameters = sum(p.numel() for p in model.parameters())

    log_path = os.path.join(HERE, args.name + ".log")
    log = open(log_path, "w")

    def say(line):
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    say("# %s: corpus %d characters (%d train, %d held out), vocab %d, parameters %d"
        % (args.name, len(corpus), len(train), len(valid), len(vocab), parameters))
    say("# " + " ".join("%s=%s" % kv for kv in sorted(vars(args).items())))
    say("# step  lr  train_loss(mean of the last 50 steps)  held_out_loss  seconds")
    valid_rng = np.random.default_rng(12345)
    valid_batch = make_batch(valid, valid_rng, 64, args.context, 0.0, letter_ids, 0.0)
    started = time.time()
    recent = []
    for step in range(args.steps + 1):
        if step % 250 == 0 or step == args.steps:
            model.eval()
            with torch.no_grad():
                logits, _ = model(valid_batch[0])
                held_out = F.cross_entropy(logits.reshape(-1, len(vocab)),
                                           valid_batch[1].reshape(-1)).item()
            train_loss = float(np.mean(recent)) if recent else float("nan")
            say("%5d  %.5f  %.4f  %.4f  %.0f" % (step, learning_rate(step, args.steps, args.lr,
                                                                     args.warmup),
                                                 train_loss, held_out, time.time() - started))
            roles = head_roles(model, vocab, held_out_text, samples=4)
            say("#       best previous %.3f (layer 0), best induction %.3f (layer 1)"
                % (roles["previous"][0].max(), roles["induction"][1:].max()))
            model.train()
        if step == args.steps:
            break
        inputs, targets = make_batch(train, rng, args.batch, args.context, args.repeat_fraction,
                                     letter_ids, args.unknown_fraction, args.copies_to_end)
        loss, _, _ = train_step(model, optimizer, inputs, targets, step, args.steps, args.lr,
                                args.warmup)
        recent = (recent + [loss])[-50:]
    elapsed = time.time() - started
    model.eval()
    say("# trained in %.0f s on one thread of: %s" % (elapsed, cpu_name()))
    say("# head roles (16 held-out prose windows of 96 characters; 16 random %d-letter segments "
        "written twice):" % INDUCTION_LENGTH)
    for line in format_roles(head_roles(model, vocab, held_out_text)):
        say("#   " + line)
    save_model(model, vocab, args.out or os.path.join(HERE, args.name + ".npz"))
    if not args.no_fixtures:
        write_fixtures(model, vocab)


def cpu_name():
    with open("/proc/cpuinfo") as info:
        for line in info:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


if __name__ == "__main__":
    main()
