# Makes the backward-pass fixtures: the gradients torch.autograd computes for
# L = sum(output * grad_output), for every layout and option the forward pass supports.
#
# Where nn.MultiheadAttention can express a case (masks of every kind, both causal
# alignments as explicit masks, kdim/vdim, add_bias_kv, add_zero_attn, unbatched,
# seq-first, no bias, a fully masked batch) the module itself is differentiated. The rest
# (GQA, RoPE in both layouts, ALiBi, a window with sinks, soft-capping, QK-norm, heads not
# d_model / h wide) is the same maths composed from matmul and softmax: the ModernAttention
# layer of make_modern_fixtures.py, imported, not copied. Further cases save the same
# module's state dict under the other namings mha reads (Hugging Face's q_proj ... o_proj,
# GPT-2's transposed c_attn and c_proj, a fused W_qkv, a --weights-prefix), so that the
# gradients come back under the names and in the orientation the file used.
#
# Each case is a folder under tests/data/grad/ with
#   weights.npz       the state dict
#   query.npy         the input, in the case's layout; key.npy and value.npy for cross-attention
#   mask.npy, key_padding_mask.npy   when the case has them
#   grad_output.npy   dO, in the layout of the output (standard normal; float64 in the
#                     unbatched case, float32 elsewhere)
#   expected.npz      float32 autograd: output and grad.input (grad.key, grad.value) and
#                     grad.<state-dict name> for every array of weights.npz
#   expected64.npz    the same in float64, the truth float32 is measured against
# and a line "<case> <mha options>" in tests/data/grad_cases.txt. The test
# (tests/test_backward_torch.cpp) adds --weights, --input, --key, --value, --mask,
# --key-padding-mask and --grad-output for the files the folder holds.
#
# Run from the repository root (PyTorch 1.13, NumPy 1.24); it rewrites tests/data/grad/:
#
#     /usr/bin/python3 tests/data/make_grad_fixtures.py
#
# Before anything is written each case's float32 gradients are checked against float64
# (1e-4 relative to the largest magnitude, or to 1 if that is smaller) and NaN against NaN;
# the script prints the largest relative difference of each case.

import os
import shutil
import sys

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_modern_fixtures import ModernAttention, allowed  # noqa: E402

OUT_DIR = os.path.join(HERE, "grad")
CASES_FILE = os.path.join(HERE, "grad_cases.txt")
TOLERANCE = 1e-4  # float32 vs float64 autograd, relative to the largest magnitude
D64 = torch.float64

report = []  # (case, worst relative difference)


def as_np(t, dtype=np.float32):
    return np.ascontiguousarray(t.detach().to(D64).numpy().astype(dtype))


def relative_difference(a, b, what):
    a, b = a.detach().to(D64), b.detach().to(D64)
    assert torch.equal(a.isnan(), b.isnan()), f"{what}: NaN in different places"
    finite = ~b.isnan()
    if not finite.any():
        return 0.0
    # at least 1: a gradient that is zero in exact arithmetic (b_k's: softmax ignores a
    # constant added to every score of a row) is float32 rounding noise around zero
    scale = max(float(b[finite].abs().max()), 1.0)
    return float((a[finite] - b[finite]).abs().max()) / scale


# ------------------------------------------------------------------ the two kinds of layer


def mha_module(E, heads, kdim=None, vdim=None, bias=True, bias_kv=False, zero_attn=False, seed=0):
    torch.manual_seed(seed)
    module = nn.MultiheadAttention(E, heads, bias=bias, add_bias_kv=bias_kv,
                                   add_zero_attn=zero_attn, kdim=kdim, vdim=vdim,
                                   batch_first=True)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("bias") and p.dim() == 1:  # PyTorch starts them at zero
                p.uniform_(-0.2, 0.2)
    return module


def run_mha_module(module, dtype, params, x_q, x_k, x_v, mask, padding, seq_first):
    """module's output in dtype, its parameters replaced by the leaves `params`."""
    m = nn.MultiheadAttention(module.embed_dim, module.num_heads, bias=module.in_proj_bias
                              is not None, add_bias_kv=module.bias_k is not None,
                              add_zero_attn=module.add_zero_attn, kdim=module.kdim,
                              vdim=module.vdim, batch_first=not seq_first).to(dtype)
    for name in params:  # the leaves themselves, so that autograd reaches them
        out_proj = name.startswith("out_proj.")
        owner, attr = (m.out_proj, name.split(".")[1]) if out_proj else (m, name)
        delattr(owner, attr)
        setattr(owner, attr, params[name])
    out, _ = m(x_q, x_k, x_v, attn_mask=mask, key_padding_mask=padding, need_weights=True,
               average_attn_weights=False)
    return out


def run_modern(module, dtype, params, x_q, x_k, x_v):
    """ModernAttention's forward, reading the leaves `params` as its state dict."""
    module.state_dict = lambda: params
    out, _ = module(x_q, x_k, x_v, dtype=dtype)
    del module.state_dict
    return out


# ---------------------------------------------------------------------------- one case


class Case:
    def __init__(self, name, options, kind, module, x_q, x_k=None, x_v=None, mask=None,
                 padding=None, seq_first=False, unbatched=False):
        self.name, self.options, self.kind, self.module = name, options, kind, module
        self.x_q, self.x_k, self.x_v = x_q, x_k, x_v
        self.mask, self.padding = mask, padding
        self.seq_first, self.unbatched = seq_first, unbatched
        self.names = None  # another naming (see hugging_face below): module names -> file's
        self.grad_output_dtype = np.float32  # float64 in one case: mha reads both

    def gradients(self, dtype, grad_output):
        params = {k: v.detach().to(dtype).clone().requires_grad_(True)
                  for k, v in self.module.state_dict().items()}
        cross = self.x_k is not None
        x_q = self.x_q.detach().to(dtype).clone().requires_grad_(True)
        x_k = self.x_k.detach().to(dtype).clone().requires_grad_(True) if cross else x_q
        x_v = self.x_v.detach().to(dtype).clone().requires_grad_(True) if cross else x_q
        if self.kind == "module":
            mask = self.mask.to(dtype) if self.mask is not None and self.mask.is_floating_point() \
                else self.mask
            out = run_mha_module(self.module, dtype, params, x_q, x_k, x_v, mask, self.padding,
                                 self.seq_first)
        else:
            out = run_modern(self.module, dtype, params, x_q, x_k, x_v)
        (out * grad_output.to(dtype)).sum().backward()
        grads = {"output": out, "grad.input": x_q.grad}
        if cross:
            grads.update({"grad.key": x_k.grad, "grad.value": x_v.grad})
        for k, v in params.items():
            grads["grad." + k] = v.grad
        return grads


def write_case(case):
    torch.manual_seed(1500 + sum(map(ord, case.name)))
    with torch.no_grad():
        params64 = {k: v.to(D64) for k, v in case.module.state_dict().items()}
        shape = run_output_shape(case, params64)
    grad_output = torch.randn(shape, dtype=D64)
    exact = case.gradients(D64, grad_output)
    single = case.gradients(torch.float32, grad_output)
    worst = max(relative_difference(single[k], exact[k], f"{case.name} {k}") for k in exact)
    assert worst <= TOLERANCE, f"{case.name}: float32 autograd {worst:.3g} from float64"
    report.append((case.name, worst))

    folder = os.path.join(OUT_DIR, case.name)
    os.makedirs(folder)
    state = case.module.state_dict()
    if case.names:
        state = case.names(state)
    np.savez(os.path.join(folder, "weights.npz"), **{k: as_np(v) for k, v in state.items()})
    files = {"query": case.x_q}
    if case.x_k is not None:
        files.update(key=case.x_k, value=case.x_v)
    if case.mask is not None:
        files["mask"] = case.mask
    if case.padding is not None:
        files["key_padding_mask"] = case.padding
    for fname, value in files.items():
        kept = value.numpy() if value.dtype == torch.bool else as_np(value)
        np.save(os.path.join(folder, fname + ".npy"), kept)
    np.save(os.path.join(folder, "grad_output.npy"), as_np(grad_output, case.grad_output_dtype))
    for fname, grads, dtype in (("expected", single, np.float32),
                                ("expected64", exact, np.float64)):
        named = renamed_grads(case, grads)
        np.savez(os.path.join(folder, fname + ".npz"),
                 **{k: as_np(v, dtype) for k, v in named.items()})


def run_output_shape(case, params64):
    x_q = case.x_q.to(D64)
    x_k = case.x_k.to(D64) if case.x_k is not None else x_q
    x_v = case.x_v.to(D64) if case.x_v is not None else x_q
    if case.kind == "module":
        mask = case.mask.to(D64) if case.mask is not None and case.mask.is_floating_point() \
            else case.mask
        return run_mha_module(case.module, D64, params64, x_q, x_k, x_v, mask, case.padding,
                              case.seq_first).shape
    return run_modern(case.module, D64, params64, x_q, x_k, x_v).shape


def renamed_grads(case, grads):
    if not case.names:
        return grads
    weights = {k[len("grad."):]: v for k, v in grads.items() if k.startswith("grad.") and
               k not in ("grad.input", "grad.key", "grad.value")}
    kept = {k: v for k, v in grads.items() if k not in {"grad." + w for w in weights}}
    kept.update({"grad." + k: v for k, v in case.names(weights).items()})
    return kept


# ------------------------------------------------------------------------------ cases


def randn(*shape):
    return torch.randn(*shape)


def module_cases():
    E, h, B, N = 8, 2, 2, 4
    cases = []

    def add(name, options, seed, module_args=None, cross=None, **files):
        torch.manual_seed(seed)
        module = mha_module(E, h, seed=seed, **(module_args or {}))
        x_q = randn(B, N, E)
        x_k = x_v = None
        if cross:
            M, kdim, vdim = cross
            x_k, x_v = randn(B, M, kdim), randn(B, M, vdim)
        cases.append(Case(name, options, "module", module, x_q, x_k, x_v, **files))

    add("self", f"--heads {h}", 1)
    add("no_bias", f"--heads {h}", 2, {"bias": False})
    add("cross", f"--heads {h}", 3, cross=(6, E, E))
    add("kdim_vdim", f"--heads {h}", 4, {"kdim": 5, "vdim": 3}, cross=(6, 5, 3))
    add("bias_kv", f"--heads {h}", 5, {"bias_kv": True})
    add("zero_attn", f"--heads {h} --add-zero-attn", 6, {"zero_attn": True})
    add("bias_kv_zero_attn_cross", f"--heads {h} --add-zero-attn", 7,
        {"bias_kv": True, "zero_attn": True}, cross=(5, E, E))
    torch.manual_seed(8)
    add("bool_mask", f"--heads {h}", 8,
        mask=(torch.rand(N, N) < 0.3) & ~torch.eye(N, dtype=torch.bool))
    add("float_mask", f"--heads {h}", 9, mask=torch.randn(N, N))
    add("mask_per_head", f"--heads {h}", 10,
        mask=(torch.rand(B * h, N, N) < 0.4) & ~torch.eye(N, dtype=torch.bool))
    add("padding", f"--heads {h}", 11,
        padding=torch.tensor([[False] * N, [False, True, False, True]]))
    # both causal alignments: mha's --causal options, the module given the mask they mean
    # (query i sees keys j <= i + M - N bottom-right, j <= i top-left)
    M = 6
    bottom_right = ~allowed(N, M)
    top_left = torch.ones(N, M, dtype=torch.bool).triu(1)
    add("causal_bottom_right", f"--heads {h} --causal", 12, cross=(M, E, E))
    cases[-1].mask_for_torch = bottom_right
    add("causal_top_left", f"--heads {h} --causal=top-left", 13, cross=(M, E, E))
    cases[-1].mask_for_torch = top_left
    # a batch whose keys are all padded: NaN output and NaN gradients, as PyTorch gives them
    add("fully_masked", f"--heads {h}", 14, padding=torch.tensor([[False] * N, [True] * N]))
    # PyTorch's own test case "value range: randn inputs x100": rows of P nearly one-hot,
    # where D = rowsum(dO_h * O_h) cancels and rowsum(dP * P) does not
    add("saturated", f"--heads {h}", 19)
    cases[-1].x_q = cases[-1].x_q * 100

    # layouts: seq-first files (N, B, E) and unbatched (N, E)
    torch.manual_seed(15)
    seq = Case("seq_first", f"--heads {h} --seq-first", "module", mha_module(E, h, seed=15),
               randn(N, B, E), seq_first=True)
    torch.manual_seed(16)
    seq_cross = Case("seq_first_cross", f"--heads {h} --seq-first", "module",
                     mha_module(E, h, kdim=5, vdim=3, seed=16), randn(N, B, E), randn(6, B, 5),
                     randn(6, B, 3), seq_first=True)
    torch.manual_seed(17)
    unbatched = Case("unbatched", f"--heads {h}", "module", mha_module(E, h, seed=17),
                     randn(N, E), padding=torch.tensor([False, False, True, False]),
                     unbatched=True)
    unbatched.grad_output_dtype = np.float64
    torch.manual_seed(18)
    unbatched_cross = Case("unbatched_cross", f"--heads {h} --causal", "module",
                           mha_module(E, h, seed=18), randn(3, E), randn(5, E), randn(5, E),
                           unbatched=True)
    unbatched_cross.mask_for_torch = ~allowed(3, 5)
    return cases + [seq, seq_cross, unbatched, unbatched_cross]


def modern_cases():
    def add(name, options, d_model=8, heads=2, B=2, N=5, M=None, **features):
        torch.manual_seed(1600 + sum(map(ord, name)))
        module = ModernAttention(d_model, heads, **features)
        with torch.no_grad():
            for pname, p in module.named_parameters():
                if pname.endswith("bias"):
                    p.uniform_(-0.2, 0.2)
        x_q = randn(B, N, d_model)
        x_k = randn(B, M, d_model) if M else None
        x_v = randn(B, M, d_model) if M else None
        return Case(name, options, "modern", module, x_q, x_k, x_v)

    return [
        add("gqa", "--heads 4 --kv-heads 2", heads=4, kv_heads=2),
        add("mqa_causal_cross", "--heads 4 --kv-heads 1 --causal", heads=4, N=3, M=6,
            kv_heads=1, causal=True),
        add("rope_half", "--heads 2 --rope half --causal", rope="half", causal=True),
        add("rope_interleaved_cross", "--heads 2 --rope interleaved", N=3, M=5,
            rope="interleaved"),
        add("alibi", "--heads 2 --alibi --causal", alibi=True, causal=True),
        add("window_sinks", "--heads 2 --window 2 --sink-tokens 1", N=6, window=2, sinks=1),
        add("softcap", "--heads 2 --softcap 1.5", cap=1.5),
        add("qk_norm_rope", "--heads 2 --qk-norm --rope half", qk_norm=True, rope="half"),
        add("head_dim_wide", "--heads 2 --head-dim 6", head_dim=6),
        add("gqa_kv_heads", "--heads 4 --kv-heads 2 --head-dim 3 --scale-base 5 --softcap 2",
            heads=4, kv_heads=2, head_dim=3, scale_base=5.0, cap=2.0),
    ]


# Other namings of the same from-scratch layer: each maps arrays by the module's names
# (W_q.weight, ...) to the file's names and layout, for the weights and their gradients
# alike (the gradient of a transposed or stacked weight is the transposed or stacked gradient).
def hugging_face(sd):
    names = {"W_q": "q_proj", "W_k": "k_proj", "W_v": "v_proj", "W_o": "o_proj"}
    return {names[k.split(".")[0]] + "." + k.split(".")[1] if k.split(".")[0] in names else k: v
            for k, v in sd.items()}


def fused_qkv(sd):
    out = {"W_qkv.weight": torch.cat([sd["W_q.weight"], sd["W_k.weight"], sd["W_v.weight"]]),
           "W_qkv.bias": torch.cat([sd["W_q.bias"], sd["W_k.bias"], sd["W_v.bias"]])}
    out.update({k: v for k, v in sd.items() if k.startswith("W_o.")})
    return out


def gpt2(sd):
    """GPT-2's Conv1D stores (in, out): c_attn.weight = [W_q; W_k; W_v].T, c_proj.weight =
    W_o.T; the gradient of a transposed weight is the transposed gradient."""
    return {"c_attn.weight": torch.cat([sd["W_q.weight"], sd["W_k.weight"], sd["W_v.weight"]]).T,
            "c_attn.bias": torch.cat([sd["W_q.bias"], sd["W_k.bias"], sd["W_v.bias"]]),
            "c_proj.weight": sd["W_o.weight"].T, "c_proj.bias": sd["W_o.bias"]}


def prefixed(sd):
    return {"layers.0.self_attn." + k: v for k, v in sd.items()}


def naming_cases():
    cases = []
    for name, options, names in [
            ("names_hugging_face", "--heads 2 --causal", hugging_face),
            ("names_fused_qkv", "--heads 2", fused_qkv),
            ("names_gpt2", "--heads 2 --causal", gpt2),
            ("names_prefix", "--heads 2 --weights-prefix layers.0.self_attn.", prefixed)]:
        torch.manual_seed(1700 + sum(map(ord, name)))
        module = ModernAttention(8, 2, causal=options.find("--causal") >= 0)
        with torch.no_grad():
            for pname, p in module.named_parameters():
                if pname.endswith("bias"):
                    p.uniform_(-0.2, 0.2)
        case = Case(name, options, "modern", module, randn(2, 4, 8))
        case.names = names
        cases.append(case)
    return cases


def main():
    shutil.rmtree(OUT_DIR, ignore_errors=True)
    os.makedirs(OUT_DIR)
    lines = ["# Backward-pass cases made by make_grad_fixtures.py: <case folder> <extra mha",
             "# options>. The folders are under tests/data/grad/; the test adds --weights,",
             "# --input, --key, --value, --mask, --key-padding-mask and --grad-output for the",
             "# files each folder holds."]
    for case in module_cases() + modern_cases() + naming_cases():
        torch_mask = getattr(case, "mask_for_torch", None)
        if torch_mask is not None:  # the module gets the mask; mha gets --causal, no file
            case.mask = torch_mask
            write_case(case)
            os.remove(os.path.join(OUT_DIR, case.name, "mask.npy"))
        else:
            write_case(case)
        lines.append(f"{case.name} {case.options}")
    with open(CASES_FILE, "w") as f:
        f.write("\n".join(lines) + "\n")
    width = max(len(name) for name, _ in report)
    for name, worst in report:
        print(f"{name:<{width}}  float32 vs float64 autograd, relative: {worst:.3g}")


if __name__ == "__main__":
    main()
