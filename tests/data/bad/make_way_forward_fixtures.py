#!/usr/bin/python3
"""Writes the weight files whose errors name a way forward (docs/errors.md, "Ways forward").

Run once, by hand: /usr/bin/python3 tests/data/bad/make_way_forward_fixtures.py (PyTorch 1.13,
numpy 1.24). They start from weights.npz (make_bad_fixtures.py): a packed
nn.MultiheadAttention state dict for d_model 16.
"""
import os

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
state = dict(np.load(os.path.join(HERE, "weights.npz")))
tensors = {k: torch.from_numpy(v) for k, v in state.items()}

# torch.save, as most tutorials save a state dict: the zip format and the legacy pickle
torch.save(tensors, os.path.join(HERE, "state_dict.pt"))
torch.save(tensors, os.path.join(HERE, "legacy.pt"), _use_new_zipfile_serialization=False)

# the same module inside a bigger one: one prefix, and beside it arrays of other modules
np.savez(os.path.join(HERE, "prefixed.npz"),
         **{"attn." + k: v for k, v in state.items()}, **{"ln1.weight": np.ones(16, np.float32)})

# Hugging Face names (Llama-style o_proj), with 8 rows of K and V: G·d_k = 8
w = state["in_proj_weight"]
hf = {"q_proj.weight": w[:16], "k_proj.weight": w[16:24], "v_proj.weight": w[32:40],
      "o_proj.weight": state["out_proj.weight"]}
np.savez(os.path.join(HERE, "hf_names.npz"), **hf)

# two decoder layers of a Hugging Face model: two attention modules to choose from
np.savez(os.path.join(HERE, "layers.npz"),
         **{f"model.layers.{l}.self_attn.{k}": v for l in range(2) for k, v in hf.items()},
         **{f"model.layers.{l}.mlp.up_proj.weight": np.ones((32, 16), np.float32) for l in range(2)})

# GPT-2's names (Conv1D, stored transposed): read transposed, the same module as weights.npz
np.savez(os.path.join(HERE, "gpt2_names.npz"),
         **{"c_attn.weight": w.T.copy(), "c_attn.bias": state["in_proj_bias"],
            "c_proj.weight": state["out_proj.weight"].T.copy(), "c_proj.bias": state["out_proj.bias"]})
