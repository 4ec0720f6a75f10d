# Makes the backward-pass fixtures of multi-head latent attention (--form mla): the gradients
# torch.autograd computes for L = sum(output * grad_output) through DeepSeek-V2's MLA layer.
#
# The layer is make_modern_fixtures.py's reference (mla_naive: the naive form in the Hugging
# Face state-dict layout, with step 8's masks, the window and the soft-cap), imported, not
# copied, and differentiated twice: in float64 (the truth) and in float32 (what float32
# PyTorch gets; RoPE's angles are computed in float64 and the rotated parts rounded to float32,
# as make_modern_fixtures.py's float32 module does). The masked layers are that script's own
# masked MLA cases (mla_masked_cases).
#
# Each case is a folder under tests/data/grad_mla/ with
#   weights.npz       the state dict: Hugging Face names (q_proj.weight, kv_a_proj_with_mqa.weight,
#                     kv_a_layernorm.weight, kv_b_proj.weight, o_proj.weight) and num_heads;
#                     the _scratch case holds the same numbers in the from-scratch names (W_q,
#                     W_dkv, W_kr, kv_norm, W_uk, W_uv, W_o), as make_modern_fixtures.py's
#                     PaperLatentAttention.load_hugging_face splits them
#   query.npy         x (B, N, d_model)
#   mask.npy, key_padding_mask.npy   when the case has them
#   grad_output.npy   dO (B, N, d_model), standard normal, float32
#   expected.npz      float32 autograd: output, grad.input and grad.<name> for every array of
#                     weights.npz (the from-scratch names' gradients are the same rows of the
#                     Hugging Face ones, split as the weights were)
#   expected64.npz    the same in float64
# and a line "<case> <mha options>" in tests/data/grad_mla_cases.txt. The test
# (tests/test_backward_torch.cpp) adds --weights, --input, --mask, --key-padding-mask and
# --grad-output for the files the folder holds.
#
# Run from the repository root (PyTorch 1.13, NumPy 1.24); it rewrites tests/data/grad_mla/:
#
#     /usr/bin/python3 tests/data/make_mla_grad_fixtures.py
#
# Before anything is written, each case's float32 gradients are checked against float64 (1e-4
# relative to the largest magnitude) and the float64 output against the forward fixtures' own
# check (the absorbed form, which make_modern_fixtures.py compares with the naive one).

import os
import shutil
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_modern_fixtures as modern  # noqa: E402

OUT_DIR = os.path.join(HERE, "grad_mla")
CASES_FILE = os.path.join(HERE, "grad_mla_cases.txt")
D64 = torch.float64
F32 = torch.float32
RELATIVE = 1e-4  # float32 autograd against float64, relative to the largest magnitude

HF_NAMES = ["q_proj.weight", "kv_a_proj_with_mqa.weight", "kv_a_layernorm.weight",
            "kv_b_proj.weight", "o_proj.weight"]


def rope_in(dtype):
    """make_modern_fixtures.rope (float64 angles) with its result in `dtype`."""
    rope64 = modern.rope

    def rope(x, positions, theta, layout):
        return rope64(x.to(D64), positions, theta, layout).to(dtype)
    return rope


def autograd(sd, x, d_out, d, causal, mods, dtype):
    """output and {grad.name: gradient} of L = sum(mla_naive(...) * d_out), in `dtype`."""
    params = {k: v.to(dtype).clone().requires_grad_(True) for k, v in sd.items()}
    x = x.to(dtype).clone().requires_grad_(True)
    mods = {k: (v.to(dtype) if torch.is_tensor(v) else v) for k, v in mods.items()}
    original = modern.rope
    modern.rope = rope_in(dtype)
    try:
        out, _ = modern.mla_naive(params, x, d, causal, mods)
    finally:
        modern.rope = original
    (out * d_out.to(dtype)).sum().backward()
    grads = {"grad.input": x.grad}
    grads.update({"grad." + k: params[k].grad for k in HF_NAMES})
    return out.detach(), grads


def scratch_names(grads, d):
    """The Hugging Face gradients under the from-scratch names: the same rows, split as
    PaperLatentAttention.load_hugging_face splits the weights."""
    h, d_h, d_R, d_c, d_v = d
    w_b = grads["grad.kv_b_proj.weight"].reshape(h, d_h + d_v, d_c)
    kv_a = grads["grad.kv_a_proj_with_mqa.weight"]
    return {
        "grad.input": grads["grad.input"],
        "grad.W_q.weight": grads["grad.q_proj.weight"],
        "grad.W_dkv.weight": kv_a[:d_c],
        "grad.W_kr.weight": kv_a[d_c:],
        "grad.kv_norm.weight": grads["grad.kv_a_layernorm.weight"],
        "grad.W_uk.weight": w_b[:, :d_h].reshape(h * d_h, d_c),
        "grad.W_uv.weight": w_b[:, d_h:].reshape(h * d_v, d_c),
        "grad.W_o.weight": grads["grad.o_proj.weight"],
    }


def scratch_weights(sd, d):
    """The state dict in the from-scratch names (PaperLatentAttention's)."""
    paper = modern.PaperLatentAttention(sd["q_proj.weight"].shape[1], *d)
    paper.load_hugging_face({k: v.to(F32) for k, v in sd.items()})
    return paper.state_dict()


def largest_relative(single, exact):
    worst = 0.0
    for name, value in exact.items():
        scale = float(value.abs().max())
        diff = float((single[name].to(D64) - value).abs().max())
        assert diff <= RELATIVE * scale, f"{name}: float32 {diff:.3g} from float64 (scale {scale:.3g})"
        worst = max(worst, diff / scale)
    return worst


def write_case(name, options, weights, d, x, files, d_out, single, exact):
    folder = os.path.join(OUT_DIR, name)
    os.makedirs(folder)
    arrays = {k: modern.f32(v) for k, v in weights.items()}
    np.savez(os.path.join(folder, "weights.npz"), num_heads=np.int64(d[0]), **arrays)
    np.save(os.path.join(folder, "query.npy"), modern.f32(x))
    for fname, value in files.items():
        np.save(os.path.join(folder, fname + ".npy"),
                value.numpy() if value.dtype == torch.bool else modern.f32(value))
    np.save(os.path.join(folder, "grad_output.npy"), modern.f32(d_out))
    modern.write_npz(os.path.join(folder, "expected.npz"), single)
    np.savez(os.path.join(folder, "expected64.npz"),
             **{k: torch.as_tensor(v).to(D64).numpy() for k, v in exact.items()})
    return f"{name} {options}"


def cases():
    """(name, mha options, Hugging Face state dict, d, x, files, causal, mods, seed) of each
    layer: the forward fixtures' MLA layers (plain and causal sizes) and the masked ones."""
    out = []
    for name, causal, seed, E, d, N in [("mla_plain", False, 1431, 12, (3, 2, 4, 5, 2), 6),
                                        ("mla_causal", True, 1432, 16, (2, 4, 2, 6, 3), 5)]:
        torch.manual_seed(seed)
        module = modern.LatentAttention(E, *d)
        x = torch.randn(2, N, E)
        out.append((name, "--form mla" + (" --causal" if causal else ""), module.state_dict(),
                    d, x, {}, causal, {}, seed))
    for name, options, module, x, files, _, _, mods in modern.mla_masked_cases():
        # the test passes the folder's mask files itself
        options = " ".join(word for word in options.split() if not word.endswith(".npy") and
                           word not in ("--mask", "--key-padding-mask"))
        out.append((name, "--form mla " + options, module.state_dict(), (2, 4, 2, 6, 3), x, files,
                    True, mods, 1440 + len(out)))
    return out


def main():
    shutil.rmtree(OUT_DIR, ignore_errors=True)
    os.makedirs(OUT_DIR)
    lines = ["# MLA backward cases made by make_mla_grad_fixtures.py: <case folder> <extra mha",
             "# options>. The folders are under tests/data/grad_mla/; the test adds --weights,",
             "# --input, --mask, --key-padding-mask and --grad-output for the files each holds."]
    for name, options, sd, d, x, files, causal, mods, seed in cases():
        torch.manual_seed(seed + 100)
        d_out = torch.randn(x.shape)
        sd64 = {k: v.to(D64) for k, v in sd.items()}
        out64, exact = autograd(sd64, x.to(D64), d_out, d, causal, mods, D64)
        out32, single = autograd(sd64, x, d_out, d, causal, mods, F32)
        forward64, _ = modern.mla_absorbed(sd64, x.to(D64), d, causal, mods)
        modern.check(out64, forward64, f"{name}: naive (differentiated) vs absorbed", 1e-12)
        modern.check(out32, out64, f"{name}: float32 vs float64 output")
        print(f"{name}: float32 gradients within {largest_relative(single, exact):.3g} of float64,"
              " relative to the largest magnitude")
        single["output"], exact["output"] = out32, out64
        lines.append(write_case(name, options, sd, d, x, files, d_out, single, exact))
        if name == "mla_plain":
            scratch_single = scratch_names(single, d)
            scratch_exact = scratch_names(exact, d)
            scratch_single["output"], scratch_exact["output"] = out32, out64
            lines.append(write_case(name + "_scratch", options, scratch_weights(sd, d), d, x,
                                    files, d_out, scratch_single, scratch_exact))
    with open(CASES_FILE, "w") as f:
        f.write("\n".join(lines) + "\n")
    for what, diff in modern.report:
        print(f"{what}: {diff:.3g}")


if __name__ == "__main__":
    main()
