# Makes the PyTorch fixtures for "exactly PyTorch" (issue 13): the layouts and mask forms
# nn.MultiheadAttention accepts beyond make_fixtures.py's batch-first cases.
#
# For every case it writes tests/data/exact/<case>/ with the same files as parity/
# (weights.npz, query.npy, key.npy, value.npy, mask.npy, key_padding_mask.npy,
# expected.npz), each in the layout PyTorch takes and returns: seq-first (L, B, E) files
# for batch_first=False, 2-D (L, E) files for unbatched inputs, 4-D masks as tutorials
# and scaled_dot_product_attention write them, Fortran-order and big-endian files as
# NumPy writes them for transposed or byte-swapped arrays. expected.npz holds `output` and
# `attn_weights` exactly as the module returns them (average_attn_weights=False). It also
# writes tests/data/exact_cases.txt: the folder name and the extra mha options.
#
# Run from the repository root (PyTorch 1.13, NumPy 1.24):
#
#     /usr/bin/python3 tests/data/make_exact_fixtures.py
#
# Every case seeds torch on its own; two runs write the same bytes. Each case is checked
# by a float64 NumPy recomputation made only from the files on disk and the options.

import math
import os
import shutil
import sys

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_fixtures as base  # noqa: E402  (the helpers of the batch-first fixtures)

EXACT_DIR = os.path.join(HERE, "exact")
CASES_FILE = os.path.join(HERE, "exact_cases.txt")


def module(E, h, **kwargs):
    mha = nn.MultiheadAttention(E, h, **kwargs)
    base.fill_biases(mha)
    return mha.eval()


def run(mha, query, key, value, attn_mask=None, key_padding_mask=None):
    """The module's documented path, per-head weights, exactly as it returns them."""
    output, weights = mha(query, key, value, attn_mask=attn_mask,
                          key_padding_mask=key_padding_mask, need_weights=True,
                          average_attn_weights=False)
    return output.detach(), weights.detach()


def per_head_mask(mask, B, h):
    """A mask broadcast over (B, h, L, S) -> the (B·h, L, S) nn.MultiheadAttention takes."""
    L, S = mask.shape[-2:]
    return mask.expand(B, h, L, S).reshape(B * h, L, S)


# ------------------------------------------------------------------ cases
#
# Each builder returns: module, inputs ({"query": ...} or query/key/value), files (masks),
# output, attn_weights, options; optionally num_heads (saved in weights.npz) and
# write (name -> how to save that file: "fortran" or "big_endian").


def case_seq_first_self():
    E, h, L, B = 16, 4, 5, 2
    mha = module(E, h)  # batch_first=False, PyTorch's default
    x = torch.randn(L, B, E)
    output, weights = run(mha, x, x, x)
    assert output.shape == (L, B, E) and weights.shape == (B, h, L, L)
    return dict(module=mha, inputs={"query": x}, output=output, attn_weights=weights,
                num_heads=h, options="--seq-first")


def case_seq_first_cross_masks():
    E, h, L, S, B = 16, 2, 4, 6, 3
    mha = module(E, h, kdim=12, vdim=10)
    query, key, value = torch.randn(L, B, E), torch.randn(S, B, 12), torch.randn(S, B, 10)
    mask = torch.rand(L, S) < 0.3
    mask[:, 0] = False  # every query keeps key 0
    padding = torch.zeros(B, S, dtype=torch.bool)
    padding[1, -2:] = True
    padding[2, -1] = True
    output, weights = run(mha, query, key, value, mask, padding)
    return dict(module=mha, inputs={"query": query, "key": key, "value": value},
                files={"mask": mask, "key_padding_mask": padding},
                output=output, attn_weights=weights, options="--heads 2 --seq-first")


def case_unbatched_self():
    E, h, L = 16, 4, 5
    mha = module(E, h, batch_first=True)  # ignored for unbatched inputs
    x = torch.randn(L, E)
    mask = torch.empty(h, L, L).uniform_(-1.0, 1.0)  # (h, L, S): one float mask per head
    output, weights = run(mha, x, x, x, mask)
    assert output.shape == (L, E) and weights.shape == (h, L, L)
    return dict(module=mha, inputs={"query": x}, files={"mask": mask},
                output=output, attn_weights=weights, options="--heads 4")


def case_unbatched_cross_padding():
    E, h, L, S = 16, 2, 4, 6
    mha = module(E, h)
    query, key, value = torch.randn(L, E), torch.randn(S, E), torch.randn(S, E)
    mask = torch.zeros(L, S, dtype=torch.bool)
    mask[0, 1] = mask[2, 3] = True
    padding = torch.tensor([False, False, False, False, True, True])  # (S,)
    output, weights = run(mha, query, key, value, mask, padding)
    return dict(module=mha, inputs={"query": query, "key": key, "value": value},
                files={"mask": mask, "key_padding_mask": padding},
                output=output, attn_weights=weights, num_heads=h, options="")


def case_mask_1_1_keep():
    """A tutorial's causal keep-mask (1, 1, L, S): 1 = take part, broadcast over B and h."""
    E, h, L, B = 16, 4, 5, 2
    mha = module(E, h, batch_first=True)
    x = torch.randn(B, L, E)
    keep = torch.tril(torch.ones(L, L, dtype=torch.int64)).view(1, 1, L, L)
    output, weights = run(mha, x, x, x, per_head_mask(keep == 0, B, h))
    return dict(module=mha, inputs={"query": x}, files={"mask": keep},
                output=output, attn_weights=weights, options="--heads 4 --mask-means keep")


def case_mask_b_1_float():
    """A float mask per batch (B, 1, L, S), shared by the heads."""
    E, h, L, S, B = 16, 2, 3, 5, 2
    mha = module(E, h, batch_first=True)
    query, key, value = torch.randn(B, L, E), torch.randn(B, S, E), torch.randn(B, S, E)
    mask = torch.empty(B, 1, L, S).uniform_(-2.0, 2.0)
    mask[0, 0, 1, 2] = mask[1, 0, 0, 4] = float("-inf")
    output, weights = run(mha, query, key, value, per_head_mask(mask, B, h))
    return dict(module=mha, inputs={"query": query, "key": key, "value": value},
                files={"mask": mask}, output=output, attn_weights=weights, options="--heads 2")


def case_mask_1_h_bool():
    """A bool mask per head (1, h, L, S), the same for every batch: repeated B times."""
    E, h, L, B = 16, 4, 4, 3
    mha = module(E, h, batch_first=True)
    x = torch.randn(B, L, E)
    mask = torch.rand(1, h, L, L) < 0.4
    mask[..., 0] = False
    output, weights = run(mha, x, x, x, per_head_mask(mask, B, h))
    return dict(module=mha, inputs={"query": x}, files={"mask": mask},
                output=output, attn_weights=weights, options="--heads 4")


def case_mask_b_h_bool():
    """A bool mask (B, h, L, S): SDPA's full shape, read as PyTorch's (B·h, L, S)."""
    E, h, L, B = 16, 2, 4, 2
    mha = module(E, h, batch_first=True)
    x = torch.randn(B, L, E)
    mask = torch.rand(B, h, L, L) < 0.4
    mask[..., -1] = False
    output, weights = run(mha, x, x, x, per_head_mask(mask, B, h))
    return dict(module=mha, inputs={"query": x}, files={"mask": mask},
                output=output, attn_weights=weights, options="--heads 2")


def case_fortran_big_endian():
    """Files as NumPy writes transposed and byte-swapped arrays: the mask built as (S, L)
    and saved as mask.T (Fortran order), the query saved Fortran-ordered, the key
    big-endian."""
    E, h, L, S, B = 16, 4, 3, 5, 2
    mha = module(E, h, batch_first=True)
    query, key, value = torch.randn(B, L, E), torch.randn(B, S, E), torch.randn(B, S, E)
    mask_s_l = torch.rand(S, L) < 0.3
    mask_s_l[0, :] = False
    output, weights = run(mha, query, key, value, mask_s_l.T)
    return dict(module=mha, inputs={"query": query, "key": key, "value": value},
                files={"mask": mask_s_l.T}, output=output, attn_weights=weights,
                write={"query": "fortran", "mask": "fortran", "key": "big_endian"},
                options="--heads 4")


def case_gqa_num_heads():
    """A from-scratch grouped-query module whose export saved num_heads: h = 4 from the
    file, G = 2 from W_k's 8 rows."""
    mod = base.GroupedQueryAttention(16, 4, kv_heads=2)
    case = base.scratch_case(mod, E=16, h=4, B=2, N=5)
    return dict(case, num_heads=4, options="")


def case_bias_kv_masks():
    """add_bias_kv: bias_k, bias_v (1, 1, E) appended as key/value position S; PyTorch pads
    attn_mask and key_padding_mask with a column that blocks nothing."""
    E, h, L, B = 16, 4, 4, 2
    mha = module(E, h, add_bias_kv=True, batch_first=True)
    x = torch.randn(B, L, E)
    mask = torch.zeros(L, L, dtype=torch.bool)
    mask[0, 1] = mask[3, 0] = True
    padding = torch.zeros(B, L, dtype=torch.bool)
    padding[1, -1] = True
    output, weights = run(mha, x, x, x, mask, padding)
    assert weights.shape == (B, h, L, L + 1)
    return dict(module=mha, inputs={"query": x}, files={"mask": mask, "key_padding_mask": padding},
                output=output, attn_weights=weights, options="--heads 4")


def case_zero_attn_cross():
    """add_zero_attn: a zero key and value appended after the projections (S -> S+1)."""
    E, h, L, S, B = 16, 2, 3, 5, 2
    mha = module(E, h, add_zero_attn=True, batch_first=True)
    query, key, value = torch.randn(B, L, E), torch.randn(B, S, E), torch.randn(B, S, E)
    padding = torch.zeros(B, S, dtype=torch.bool)
    padding[0, 0] = True
    output, weights = run(mha, query, key, value, None, padding)
    return dict(module=mha, inputs={"query": query, "key": key, "value": value},
                files={"key_padding_mask": padding}, output=output, attn_weights=weights,
                options="--heads 2 --add-zero-attn")


def case_bias_kv_zero_attn_seq_first():
    """Both, seq-first, with a per-head mask: S -> S+1 (bias_k) -> S+2 (zero)."""
    E, h, L, B = 16, 2, 3, 2
    mha = module(E, h, add_bias_kv=True, add_zero_attn=True)
    x = torch.randn(L, B, E)
    mask = torch.rand(B * h, L, L) < 0.3
    output, weights = run(mha, x, x, x, mask)
    assert weights.shape == (B, h, L, L + 2)
    return dict(module=mha, inputs={"query": x}, files={"mask": mask}, output=output,
                attn_weights=weights, num_heads=h, options="--seq-first --add-zero-attn")


def case_bias_kv_unbatched_padding():
    E, h, L, S = 16, 4, 3, 4
    mha = module(E, h, add_bias_kv=True)
    query, key, value = torch.randn(L, E), torch.randn(S, E), torch.randn(S, E)
    padding = torch.tensor([False, True, False, False])
    output, weights = run(mha, query, key, value, None, padding)
    return dict(module=mha, inputs={"query": query, "key": key, "value": value},
                files={"key_padding_mask": padding}, output=output, attn_weights=weights,
                options="--heads 4")


def causal_case(L, S, top_left):
    """SDPA's is_causal=True is top-left: query i sees keys j <= i (torch.tril(ones(L, S)));
    causal_lower_right is bottom-right: j <= i + S - L. 1.13 has no SDPA, so the module
    gets the same mask as a bool attn_mask."""
    E, h, B = 16, 4, 2
    mha = module(E, h, batch_first=True)
    query, key, value = torch.randn(B, L, E), torch.randn(B, S, E), torch.randn(B, S, E)
    offset = 0 if top_left else S - L
    mask = torch.ones(L, S, dtype=torch.bool).triu(diagonal=offset + 1)
    assert not bool(mask.all(dim=-1).any()), "a fully blocked row"
    output, weights = run(mha, query, key, value, mask)
    align = "top-left" if top_left else "bottom-right"
    return dict(module=mha, inputs={"query": query, "key": key, "value": value},
                output=output, attn_weights=weights, options=f"--heads 4 --causal={align}")


def case_causal_top_left_short():
    return causal_case(L=3, S=5, top_left=True)


def case_causal_top_left_long():
    return causal_case(L=5, S=3, top_left=True)  # bottom-right would leave two rows empty


def case_causal_bottom_right():
    return causal_case(L=3, S=5, top_left=False)


def empty_case(B, L, S):
    """Empty batch or sequences, as PyTorch computes them: with S = 0 every output row is
    out_proj.bias (an empty softmax, a zero context)."""
    E, h = 16, 4
    mha = module(E, h, batch_first=True)
    query, key, value = torch.randn(B, L, E), torch.randn(B, S, E), torch.randn(B, S, E)
    output, weights = run(mha, query, key, value)
    if S == 0 and B * L > 0:
        assert torch.equal(output, mha.out_proj.bias.detach().expand(B, L, E))
    return dict(module=mha, inputs={"query": query, "key": key, "value": value},
                output=output, attn_weights=weights, options="--heads 4")


def case_empty_keys():
    return empty_case(B=2, L=3, S=0)


def case_empty_queries():
    return empty_case(B=2, L=0, S=4)


def case_empty_batch():
    return empty_case(B=0, L=3, S=4)


CASES = [
    ("seq_first_self", case_seq_first_self),
    ("seq_first_cross_masks", case_seq_first_cross_masks),
    ("unbatched_self", case_unbatched_self),
    ("unbatched_cross_padding", case_unbatched_cross_padding),
    ("mask_1_1_keep", case_mask_1_1_keep),
    ("mask_b_1_float", case_mask_b_1_float),
    ("mask_1_h_bool", case_mask_1_h_bool),
    ("mask_b_h_bool", case_mask_b_h_bool),
    ("fortran_big_endian", case_fortran_big_endian),
    ("gqa_num_heads", case_gqa_num_heads),
    ("bias_kv_masks", case_bias_kv_masks),
    ("zero_attn_cross", case_zero_attn_cross),
    ("bias_kv_zero_attn_seq_first", case_bias_kv_zero_attn_seq_first),
    ("bias_kv_unbatched_padding", case_bias_kv_unbatched_padding),
    ("causal_top_left_short", case_causal_top_left_short),
    ("causal_top_left_long", case_causal_top_left_long),
    ("causal_bottom_right", case_causal_bottom_right),
    ("empty_keys", case_empty_keys),
    ("empty_queries", case_empty_queries),
    ("empty_batch", case_empty_batch),
]


# -------------------------------------------- independent float64 check


def load(folder, name):
    path = os.path.join(folder, name + ".npy")
    return np.load(path) if os.path.exists(path) else None


def heads_of(options, sd):
    if "--heads" in options:
        return int(options.split("--heads ")[1].split()[0])
    return int(sd["num_heads"])


def recompute(folder, options):
    """output and attn_weights from the files and options alone, in the files' layout."""
    with np.load(os.path.join(folder, "weights.npz")) as archive:
        sd = {k: archive[k].astype(np.float64) for k in archive.files}
    h = heads_of(options, sd)
    query = load(folder, "query").astype(np.float64)
    key = load(folder, "key")
    key = query if key is None else key.astype(np.float64)
    value = load(folder, "value")
    value = query if value is None else value.astype(np.float64)
    unbatched = query.ndim == 2
    if unbatched:  # (L, E) -> (1, L, E)
        query, key, value = query[None], key[None], value[None]
    elif "--seq-first" in options:  # (L, B, E) -> (B, L, E)
        query, key, value = (x.transpose(1, 0, 2) for x in (query, key, value))
    B, N, E = query.shape
    M = key.shape[1]
    d_k = E // h
    w_q, b_q, w_k, b_k, w_v, b_v, w_o, b_o = base.projections_from_state_dict(sd, E)

    def split(x):  # (B, L, G·d_k) -> (B, h, L, d_k), K/V heads repeated h/G times
        G = x.shape[2] // d_k
        heads = x.reshape(B, x.shape[1], G, d_k).transpose(0, 2, 1, 3)
        return np.repeat(heads, h // G, axis=1)

    Q = split(base.np_linear(query, w_q, b_q))
    k, v = base.np_linear(key, w_k, b_k), base.np_linear(value, w_v, b_v)  # (B, M, G·d_k)
    extra = 0  # key/value positions appended after the projections, visible to every query
    if "bias_k" in sd:  # add_bias_kv: position M holds bias_k, bias_v
        k = np.concatenate([k, np.broadcast_to(sd["bias_k"], (B, 1, k.shape[2]))], axis=1)
        v = np.concatenate([v, np.broadcast_to(sd["bias_v"], (B, 1, v.shape[2]))], axis=1)
        extra += 1
    if "--add-zero-attn" in options:  # a zero key and value after that
        k = np.concatenate([k, np.zeros((B, 1, k.shape[2]))], axis=1)
        v = np.concatenate([v, np.zeros((B, 1, v.shape[2]))], axis=1)
        extra += 1
    K, V = split(k), split(v)
    add = np.zeros((B, h, N, M))
    mask = load(folder, "mask")
    if mask is not None:
        if mask.ndim == 3:  # (B·h, N, M), batch-major
            mask = mask.reshape(B, h, N, M)
        if "--mask-means keep" in options:
            mask = np.where(mask == 0, -np.inf, 0.0)
        elif mask.dtype.kind != "f":
            mask = np.where(mask != 0, -np.inf, 0.0)
        add = add + mask  # broadcasts (N, M), (1|B, 1|h, N, M)
    padding = load(folder, "key_padding_mask")
    if padding is not None:
        add = add + np.where(padding.reshape(B, M), -np.inf, 0.0)[:, None, None, :]
    if "--causal" in options:  # top-left: j <= i; bottom-right (the default): j <= i + M - N
        offset = 0 if "--causal=top-left" in options else M - N
        add = add + np.where(np.arange(M)[None, :] > np.arange(N)[:, None] + offset, -np.inf, 0.0)
    add = np.concatenate([add, np.zeros((B, h, N, extra))], axis=-1)
    scores = Q @ K.transpose(0, 1, 3, 2) / math.sqrt(d_k) + add
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True, initial=-np.inf))  # M may be 0
    weights = weights / weights.sum(axis=-1, keepdims=True)
    context = (weights @ V).transpose(0, 2, 1, 3).reshape(B, N, E)
    output = base.np_linear(context, w_o, b_o)
    if unbatched:
        return output[0], weights[0]
    if "--seq-first" in options:
        return output.transpose(1, 0, 2), weights
    return output, weights


# ------------------------------------------------------------------ files


def save_npy(path, array, how):
    if how == "fortran":
        array = np.asfortranarray(array)
        assert array.ndim < 2 or not array.flags.c_contiguous
    elif how == "big_endian":
        array = array.astype(array.dtype.newbyteorder(">"))
    np.save(path, array)


def write_case(name, case):
    folder = os.path.join(EXACT_DIR, name)
    os.makedirs(folder)
    state = {k: base.to_numpy(v) for k, v in case["module"].state_dict().items()}
    if "num_heads" in case:
        state["num_heads"] = np.int64(case["num_heads"])
    np.savez(os.path.join(folder, "weights.npz"), **state)
    how = case.get("write", {})
    for file_name, tensor in list(case["inputs"].items()) + list(case.get("files", {}).items()):
        array = base.to_numpy(tensor)
        save_npy(os.path.join(folder, file_name + ".npy"), array, how.get(file_name))
    np.savez(os.path.join(folder, "expected.npz"), output=base.to_numpy(case["output"]),
             attn_weights=base.to_numpy(case["attn_weights"]))
    return folder


def assert_close(a, b, what):
    """base.assert_close, which also takes the empty arrays of B, N or M = 0."""
    return base.assert_close(a, b, what) if np.size(a) else 0.0


def check_written(name, folder, case):
    with np.load(os.path.join(folder, "expected.npz")) as expected:
        output, weights = expected["output"], expected["attn_weights"]
    assert np.isfinite(output).all() and np.isfinite(weights).all(), name
    np_output, np_weights = recompute(folder, case["options"])
    assert np_output.shape == output.shape and np_weights.shape == weights.shape, name
    return max(assert_close(output, np_output, name + ": float64 recomputation, output"),
               assert_close(weights, np_weights, name + ": float64 recomputation, weights"))


def main():
    torch.set_default_dtype(torch.float32)
    torch.set_num_threads(1)
    if os.path.isdir(EXACT_DIR):
        shutil.rmtree(EXACT_DIR)
    lines = ["# Issue 13 fixtures made by make_exact_fixtures.py: <case folder> <extra mha options>.",
             "# The harness adds --weights, --input, --key, --value, --mask and",
             "# --key-padding-mask for the files the folder holds, as for cases.txt."]
    for seed, (name, build) in enumerate(CASES):
        torch.manual_seed(1000 + seed)
        case = build()
        folder = write_case(name, case)
        worst = check_written(name, folder, case)
        lines.append(f"{name} {case['options']}".rstrip())
        files = " ".join(sorted(os.listdir(folder)))
        print(f"{name:<26} {case['options']:<28} float64 check {worst:.1e}  [{files}]")
    with open(CASES_FILE, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
