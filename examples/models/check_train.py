# Checks `mha train` against PyTorch in one command: mha trains the default recipe for 50
# steps, writing its batches (--save-batches) and its log (--log); then train.py trains the same
# initial model on the same batches (--init, --batches) and the two are compared:
#   every step's loss             within 1e-4 relative (mha's from its checkpoint, train.step_losses)
#   every evaluation in the log   its `loss` (the mean since the evaluation before) the same way
#   every array of the model      max |mha - torch| <= 1e-5 * max |torch| over the array
# The key bias (the middle third of each layer's in_proj_bias) is reported apart and not held
# to the limit: its gradient is 0 in exact arithmetic (the softmax ignores q.b_k, the same for
# every key of a row), so in float32 it is rounding noise that AdamW, dividing by the gradient's
# own size, turns into steps; it starts at 0 and changes no output.
#
# Run from the repository root after `make` (PyTorch 1.13 at /usr/bin/python3); it exits 0 when
# everything passes, 1 when something does not:
#
#     /usr/bin/python3 examples/models/check_train.py [--steps 50] [--seed 0] [--threads 2]
#
# The initial model is the checkpoint `mha train --time-limit` writes when its limit has passed
# before the first step (train.step 0): the same seed starts every run from it.

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

LOSS_LIMIT = 1e-4       # relative
PARAMETER_LIMIT = 1e-5  # relative to the array's largest magnitude


def run(command):
    print("$ " + " ".join(command), flush=True)
    done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("check_train: failed (exit %d):\n%s%s" % (done.returncode, done.stdout,
                                                            done.stderr))
    return done.stdout


def model_arrays(path):
    """The model's float arrays of a model file (not vocab, heads or train.*)."""
    return {name: a for name, a in np.load(path).items()
            if not name.startswith("train.") and name not in ("vocab", "heads")}


def verdict(worst, limit):
    return "PASS" if worst <= limit else "FAIL"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mha", default=os.path.join(ROOT, "build", "mha"))
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--eval-every", type=int, default=10)
    parser.add_argument("--keep", metavar="DIR", help="write the files here and keep them")
    args = parser.parse_args()

    folder = args.keep or tempfile.mkdtemp(prefix="check_train.")
    os.makedirs(folder, exist_ok=True)
    init, final, batches, log, torch_final = (os.path.join(folder, name) for name in (
        "init.npz", "mha.npz", "batches.npz", "mha.jsonl", "torch.npz"))
    common = ["--steps", str(args.steps), "--seed", str(args.seed), "--threads",
              str(args.threads)]
    run([args.mha, "train"] + common + ["--time-limit", "1e-9", "--out", init])
    if int(np.load(init)["train.step"][0]) != 0:
        sys.exit("check_train: %s is not the model before the first step" % init)
    run([args.mha, "train"] + common + ["--out", final, "--save-batches", batches, "--log", log,
                                        "--eval-every", str(args.eval_every)])
    printed = run([sys.executable, os.path.join(HERE, "train.py"), "--init", init, "--batches",
                   batches, "--out", torch_final, "--steps", str(args.steps)])

    torch_losses = np.array([float(line.split()[1]) for line in printed.splitlines()
                             if line and not line.startswith("#")])
    mha_losses = np.load(final)["train.step_losses"]
    failed = False

    relative = np.abs(mha_losses - torch_losses) / np.abs(torch_losses)
    step = int(np.argmax(relative))
    print("\nlosses, %d steps: mha %.6f ... %.6f, PyTorch %.6f ... %.6f" % (
        len(mha_losses), mha_losses[0], mha_losses[-1], torch_losses[0], torch_losses[-1]))
    print("  worst relative difference %.2e at step %d (limit %.0e): %s" % (
        relative[step], step, LOSS_LIMIT, verdict(relative[step], LOSS_LIMIT)))
    failed |= relative[step] > LOSS_LIMIT

    worst, at = 0.0, 0
    previous = 0
    with open(log) as lines:
        for line in lines:
            entry = json.loads(line)
            if entry["loss"] is None:
                continue
            theirs = float(np.mean(torch_losses[previous:entry["step"]]))
            difference = abs(entry["loss"] - theirs) / abs(theirs)
            if difference > worst:
                worst, at = difference, entry["step"]
            previous = entry["step"]
    print("  --log's loss (each evaluation's mean since the one before, 6 digits): worst %.2e "
          "at step %d: %s" % (worst, at, verdict(worst, LOSS_LIMIT)))
    failed |= worst > LOSS_LIMIT

    ours, theirs = model_arrays(final), model_arrays(torch_final)
    if sorted(ours) != sorted(theirs):
        sys.exit("check_train: the two files hold different arrays")
    rows, key_bias = [], []
    for name in ours:
        a, b = ours[name].astype(np.float64), theirs[name].astype(np.float64)
        if name.endswith("in_proj_bias"):
            d = len(a) // 3
            key_bias.append((name, a[d:2 * d], b[d:2 * d]))
            a, b = np.concatenate([a[:d], a[2 * d:]]), np.concatenate([b[:d], b[2 * d:]])
        rows.append((np.abs(a - b).max() / np.abs(b).max(), name))
    rows.sort(reverse=True)
    print("\nparameters after %d steps, max |mha - torch| / max |torch| per array (%d arrays; "
          "in_proj_bias without its key third):" % (args.steps, len(rows)))
    for distance, name in rows[:5]:
        print("  %-40s %.2e" % (name, distance))
    print("  worst %.2e (limit %.0e): %s" % (rows[0][0], PARAMETER_LIMIT,
                                            verdict(rows[0][0], PARAMETER_LIMIT)))
    failed |= rows[0][0] > PARAMETER_LIMIT
    print("key bias (started at 0; rounding noise, see above; not held to the limit):")
    for name, a, b in key_bias:
        print("  %-40s max |mha| %.2e, max |torch| %.2e, max |mha - torch| %.2e" % (
            name, np.abs(a).max(), np.abs(b).max(), np.abs(a - b).max()))
    print("\n%s (files in %s)" % ("FAIL" if failed else "PASS", folder))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
