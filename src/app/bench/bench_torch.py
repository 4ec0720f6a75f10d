#!/usr/bin/python3
"""PyTorch's side of `mha bench --compare-torch`.

mha bench starts one of these per thread setting through /usr/bin/python3 and
keeps it alive, so that PyTorch's runs take turns with mha's own. It answers
every order on stdin with one line on stdout:

  (on start)          "ready"
  size SIZE           builds the model for SIZE, runs each of its forms once
                      (a warm-up) and answers "ready FORM...": the forms
  run FORM            runs FORM once and answers its time in ms

Every mode has two forms, whose results are checked to agree (allclose)
before either is timed: "module", PyTorch's modules, and "composed", the same
maths from F.linear, view, transpose, matmul and softmax as mha computes it.

SIZE is B,N,d_model,h: the forward of self-attention, no mask, in inference
mode: nn.MultiheadAttention (batch_first, need_weights=False) or composed.

With --backward (mha bench --backward) the forms are the forward and the
backward of L = sum(output * dO) by autograd, gradients for the input and
every weight.

With --train (mha bench --train) SIZE is B,N,d_model,h,layers,d_ff,vocab and
a run is a training step of examples/models/train.py's CharTransformer with
train.py's own train_step (AdamW, clipping, the learning-rate schedule) on one
random batch; composed: the same model with its attention composed. Each form
trains its own copy.

With --checkpoint DIR (mha bench --checkpoint DIR) SIZE is the prompt's token
ids, "17,4,...", and a run is the whole forward to logits of the GPT-2 folder
DIR in float32, inference mode: its weights read here from the safetensors
files (the header parsed with json, the data with numpy); module: blocks of
nn.LayerNorm, nn.MultiheadAttention (causal mask) and nn.Linear; composed:
F.layer_norm, F.linear and the attention's matmuls and softmax.

With --libraries it prints the files of the BLAS libraries torch loaded, one a
line, and exits: mha bench refuses netlib's reference BLAS before it starts
PyTorch (torch_process.cpp, reference_blas).

Never needed by the tests or CI.
"""
import argparse
import copy
import functools
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

# The module and composed forms must agree this closely before they are timed (float32, sums
# in a different order).
AGREE_RTOL = 1e-4
AGREE_ATOL = 1e-4


def check_agree(what, module_result, composed_result):
    if not torch.allclose(module_result, composed_result, rtol=AGREE_RTOL, atol=AGREE_ATOL):
        worst = (module_result - composed_result).abs().max().item()
        sys.exit(f"bench_torch.py: {what}: the module and composed forms differ by {worst:g}")


def composed(x, weights, h, allowed=None):
    """nn.MultiheadAttention's maths from F.linear, matmul and softmax: mha's steps 1-14;
    `allowed` (N, N) bool: where a query may attend a key (None: everywhere)."""
    w_q, b_q, w_k, b_k, w_v, b_v, w_o, b_o = weights
    b, n, d = x.shape
    heads = (b, n, h, d // h)
    q = F.linear(x, w_q, b_q).view(heads).transpose(1, 2)
    k = F.linear(x, w_k, b_k).view(heads).transpose(1, 2)
    v = F.linear(x, w_v, b_v).view(heads).transpose(1, 2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d // h)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    context = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, n, d)
    return F.linear(context, w_o, b_o)


def module_weights(module):
    """nn.MultiheadAttention's weights in composed's order: q, k, v, out, each weight and bias."""
    d = module.embed_dim
    w_q, w_k, w_v = module.in_proj_weight.split(d)
    b_q, b_k, b_v = module.in_proj_bias.split(d)
    return [w_q, b_q, w_k, b_k, w_v, b_v, module.out_proj.weight, module.out_proj.bias]


def attention_forms(size, backward):
    """The forms to time at size "B,N,d_model,h", by name."""
    b, n, d, h = (int(v) for v in size.split(","))
    module = torch.nn.MultiheadAttention(d, h, batch_first=True).eval()
    x = torch.randn(b, n, d)
    if not backward:
        weights = [t.detach() for t in module_weights(module)]

        def run_module():
            with torch.inference_mode():
                return module(x, x, x, need_weights=False)[0]

        def run_composed():
            with torch.inference_mode():
                return composed(x, weights, h)

        check_agree(f"attention at {size}", run_module(), run_composed())
        return {"module": run_module, "composed": run_composed}

    grad_output = torch.randn(b, n, d)
    weights = [t.detach().clone().requires_grad_() for t in module_weights(module)]
    with torch.no_grad():
        check_agree(f"attention at {size}", module(x, x, x, need_weights=False)[0],
                    composed(x, weights, h))
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

    class ComposedCharTransformer(CharTransformer):
        """CharTransformer with each layer's attention composed from torch ops."""

        def forward(self, tokens, need_weights=False):
            n = tokens.shape[1]
            x = self.token_embedding(tokens) + self.position_embedding.weight[:n]
            allowed = torch.ones(n, n, dtype=torch.bool).tril()
            for layer in self.layers:
                x = x + composed(layer.norm1(x), module_weights(layer.self_attn),
                                 layer.self_attn.num_heads, allowed)
                x = x + layer.linear2(F.gelu(layer.linear1(layer.norm2(x))))
            return self.lm_head(self.norm(x)), []

    b, n, d, h, layers, d_ff, vocab = (int(v) for v in size.split(","))
    module = CharTransformer(vocab, d, h, layers, d_ff, n)
    twin = ComposedCharTransformer(vocab, d, h, layers, d_ff, n)
    twin.load_state_dict(copy.deepcopy(module.state_dict()))
    inputs, targets = torch.randint(0, vocab, (2, b, n))
    with torch.no_grad():
        check_agree(f"the training model at {size}", module(inputs)[0], twin(inputs)[0])

    def stepper(model):
        optimizer = make_optimizer(model, 3e-3)
        step = 0

        def run_step():
            nonlocal step
            train_step(model, optimizer, inputs, targets, step, 3000, 3e-3, 100)
            step += 1

        return run_step

    return {"module": stepper(module), "composed": stepper(twin)}


@functools.lru_cache(maxsize=1)
def read_safetensors_folder(folder):
    """Every tensor of the folder's safetensors files as float32, by name without the
    "transformer." prefix: each header parsed with json, the data read with numpy."""
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    tensors = {}
    for name in files:
        path = os.path.join(folder, name)
        with open(path, "rb") as f:
            (length,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(length))
        data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + length)
        for key, info in header.items():
            if key == "__metadata__":
                continue
            begin, end = info["data_offsets"]
            raw = data[begin:end]
            if info["dtype"] == "F32":
                values = np.frombuffer(raw, dtype="<f4")
            elif info["dtype"] == "F16":
                values = np.frombuffer(raw, dtype="<f2").astype(np.float32)
            elif info["dtype"] == "BF16":
                values = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
            else:
                sys.exit(f"bench_torch.py: {path}: {key} is {info['dtype']}, not F32, F16 or BF16")
            tensors[key.removeprefix("transformer.")] = torch.from_numpy(
                values.astype(np.float32).reshape(info["shape"]))
    return tensors


class Gpt2Block(torch.nn.Module):
    """One GPT-2 layer as PyTorch's modules: pre-LayerNorm, causal self-attention, MLP."""

    def __init__(self, w, p, e, heads, eps):
        super().__init__()
        self.ln_1 = torch.nn.LayerNorm(e, eps=eps)
        self.attn = torch.nn.MultiheadAttention(e, heads, batch_first=True)
        self.ln_2 = torch.nn.LayerNorm(e, eps=eps)
        self.fc = torch.nn.Linear(e, w[p + "mlp.c_fc.weight"].shape[1])
        self.proj = torch.nn.Linear(w[p + "mlp.c_fc.weight"].shape[1], e)
        with torch.no_grad():
            for norm, name in ((self.ln_1, "ln_1"), (self.ln_2, "ln_2")):
                norm.weight.copy_(w[p + name + ".weight"])
                norm.bias.copy_(w[p + name + ".bias"])
            self.attn.in_proj_weight.copy_(w[p + "attn.c_attn.weight"].T)
            self.attn.in_proj_bias.copy_(w[p + "attn.c_attn.bias"])
            self.attn.out_proj.weight.copy_(w[p + "attn.c_proj.weight"].T)
            self.attn.out_proj.bias.copy_(w[p + "attn.c_proj.bias"])
            self.fc.weight.copy_(w[p + "mlp.c_fc.weight"].T)
            self.fc.bias.copy_(w[p + "mlp.c_fc.bias"])
            self.proj.weight.copy_(w[p + "mlp.c_proj.weight"].T)
            self.proj.bias.copy_(w[p + "mlp.c_proj.bias"])

    def forward(self, x, blocked):
        y = self.ln_1(x)
        x = x + self.attn(y, y, y, attn_mask=blocked, need_weights=False)[0]
        return x + self.proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


def gpt2_forms(folder, ids):
    """The forms of the GPT-2 folder's forward to logits on the token ids "17,4,..."."""
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    if config.get("model_type") != "gpt2":
        sys.exit(f"bench_torch.py: {folder} is not a GPT-2 folder")
    if config.get("activation_function", "gelu_new") not in ("gelu_new", "gelu_pytorch_tanh"):
        sys.exit(f"bench_torch.py: {folder}: activation {config['activation_function']} "
                 "is not gelu_new")
    w = read_safetensors_folder(folder)
    e, heads, layers = config["n_embd"], config["n_head"], config["n_layer"]
    eps = config.get("layer_norm_epsilon", 1e-5)
    tokens = torch.tensor([[int(t) for t in ids.split(",")]])
    n = tokens.shape[1]
    wte, positions = w["wte.weight"], w["wpe.weight"][:n]
    allowed = torch.ones(n, n, dtype=torch.bool).tril()
    blocks = [Gpt2Block(w, f"h.{l}.", e, heads, eps).eval() for l in range(layers)]
    final = torch.nn.LayerNorm(e, eps=eps)
    with torch.no_grad():
        final.weight.copy_(w["ln_f.weight"])
        final.bias.copy_(w["ln_f.bias"])
    # composed's weights in F.linear's (out, in) layout, transposed once as mha does at load
    linear = {f"h.{l}.{name}": w[f"h.{l}.{name}.weight"].T.contiguous()
              for l in range(layers) for name in ("attn.c_attn", "attn.c_proj", "mlp.c_fc",
                                                  "mlp.c_proj")}

    def run_module():
        with torch.inference_mode():
            x = F.embedding(tokens, wte) + positions
            for block in blocks:
                x = block(x, ~allowed)
            return F.linear(final(x), wte)

    def run_composed():
        with torch.inference_mode():
            x = F.embedding(tokens, wte) + positions
            for l in range(layers):
                p = f"h.{l}."
                y = F.layer_norm(x, (e,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
                q, k, v = F.linear(y, linear[p + "attn.c_attn"], w[p + "attn.c_attn.bias"]).split(e, 2)
                heads_of = lambda t: t.view(1, n, heads, e // heads).transpose(1, 2)
                scores = heads_of(q) @ heads_of(k).transpose(-2, -1) / math.sqrt(e // heads)
                p_attn = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
                context = (p_attn @ heads_of(v)).transpose(1, 2).reshape(1, n, e)
                x = x + F.linear(context, linear[p + "attn.c_proj"], w[p + "attn.c_proj.bias"])
                y = F.layer_norm(x, (e,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
                hidden = F.gelu(F.linear(y, linear[p + "mlp.c_fc"], w[p + "mlp.c_fc.bias"]),
                                approximate="tanh")
                x = x + F.linear(hidden, linear[p + "mlp.c_proj"], w[p + "mlp.c_proj.bias"])
            x = F.layer_norm(x, (e,), w["ln_f.weight"], w["ln_f.bias"], eps)
            return F.linear(x, wte)

    check_agree(f"{folder} at N = {n}", run_module(), run_composed())
    return {"module": run_module, "composed": run_composed}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, help="torch threads (needed but with --libraries)")
    parser.add_argument("--libraries", action="store_true",
                        help="print the BLAS libraries torch loaded, one a line, and exit")
    parser.add_argument("--backward", action="store_true",
                        help="forward + backward, nn.MultiheadAttention and composed")
    parser.add_argument("--train", action="store_true", help="training steps")
    parser.add_argument("--checkpoint", metavar="DIR", help="a GPT-2 folder's forward to logits")
    args = parser.parse_args()
    if args.libraries:
        with open("/proc/self/maps") as maps:
            files = {line.split()[-1] for line in maps}
        print(*sorted({os.path.realpath(f) for f in files if "blas" in f}), sep="\n")
        return
    if args.threads is None:
        parser.error("--threads is needed")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    forms = {}
    print("ready", flush=True)
    for line in sys.stdin:
        order, _, what = line.strip().partition(" ")
        if order == "size":
            forms = {}  # the last size's tensors go before the next size's are made
            if args.checkpoint:
                forms = gpt2_forms(args.checkpoint, what)
            elif args.train:
                forms = training_forms(what)
            else:
                forms = attention_forms(what, args.backward)
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
