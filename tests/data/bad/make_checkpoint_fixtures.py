"""Defective checkpoint folders for docs/errors.md (run from this folder, standard library only).

Each folder under checkpoints/ holds a config.json edited from a good fixture of
../checkpoints/ and a symlink to that fixture's model.safetensors (reading follows symlinks).
"""
import json
import os

GOOD = os.path.join("..", "..", "..", "checkpoints")

# folder: (good fixture, edit of its config.json)
CASES = {
    "falcon": ("llama2", lambda c: c.update(model_type="falcon")),
    "yarn": ("llama2", lambda c: c.update(rope_scaling={"rope_type": "yarn", "factor": 4.0})),
    "wide": ("gpt2", lambda c: c.update(n_inner=80)),
    "no_qk_norm": ("llama2", lambda c: c.update(model_type="qwen3", head_dim=8)),
    "inverse_layer_idx": ("gpt2", lambda c: c.update(scale_attn_by_inverse_layer_idx=True)),
    "relu": ("llama2", lambda c: c.update(hidden_act="relu")),
}

for name, (good, edit) in CASES.items():
    folder = os.path.join("checkpoints", name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join("..", "checkpoints", good, "config.json")) as f:
        config = json.load(f)
    edit(config)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    link = os.path.join(folder, "model.safetensors")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.join(GOOD, good, "model.safetensors"), link)
