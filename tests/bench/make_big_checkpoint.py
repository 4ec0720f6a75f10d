# Writes a full-size synthetic Hugging Face checkpoint folder for the memory and speed
# measurements of --checkpoint (issue 46): config.json and one model.safetensors whose header
# is real and whose data are zeros left as a hole (the file is extended with truncate, so it
# takes almost no disk space and writes in a second). Never commit the output.
#
#     /usr/bin/python3 tests/bench/make_big_checkpoint.py gpt2-small /tmp/gpt2-small
#     /usr/bin/python3 tests/bench/make_big_checkpoint.py llama-1b /tmp/llama-1b
#     /usr/bin/python3 tests/bench/make_big_checkpoint.py gpt2-small /tmp/gpt2-small --random
#
# --random (for mha bench --checkpoint, issue 47) writes every value instead: the matrices and
# embeddings drawn from N(0, 0.02) (numpy's generator, seed 0), the norms' weights 1, the biases 0,
# GPT-2's causal buffers lower-triangular ones. Real shapes, real arithmetic, nothing learned;
# gpt2-small takes about 10 s and 523 MiB of /tmp.
#
# gpt2-small: GPT-2 small's shapes (124M parameters, F32, 12 layers, n_embd 768, vocab 50257,
#   n_positions 1024), with the h.N.attn.bias causal buffers (1, 1, 1024, 1024) older
#   exports hold; about 523 MiB.
# llama-1b: Llama-3.2-1B's shapes (BF16, 16 layers, hidden 2048, 32 heads, 8 KV heads,
#   head_dim 64, intermediate 8192, vocab 128256, tied embeddings, llama3 RoPE scaling);
#   about 2.3 GiB.
#
# Without --random all weights are zero, so the logits are all equal: the folder measures
# reading, memory and time, not numbers; that uses only the standard library (--random needs
# numpy).

import json
import math
import os
import struct
import sys

BYTES = {"F32": 4, "BF16": 2}


def gpt2_small():
    e, layers, vocab, positions, inner = 768, 12, 50257, 1024, 3072
    config = {
        "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "bos_token_id": 50256,
        "eos_token_id": 50256, "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": positions,
        "n_embd": e, "n_head": 12, "n_inner": None, "n_layer": layers, "n_positions": positions,
        "scale_attn_weights": True, "torch_dtype": "float32", "vocab_size": vocab,
    }
    shapes = {"wte.weight": [vocab, e], "wpe.weight": [positions, e],
              "ln_f.weight": [e], "ln_f.bias": [e]}
    for n in range(layers):
        h = f"h.{n}."
        shapes.update({
            h + "ln_1.weight": [e], h + "ln_1.bias": [e],
            h + "attn.bias": [1, 1, positions, positions],
            h + "attn.c_attn.weight": [e, 3 * e], h + "attn.c_attn.bias": [3 * e],
            h + "attn.c_proj.weight": [e, e], h + "attn.c_proj.bias": [e],
            h + "ln_2.weight": [e], h + "ln_2.bias": [e],
            h + "mlp.c_fc.weight": [e, inner], h + "mlp.c_fc.bias": [inner],
            h + "mlp.c_proj.weight": [inner, e], h + "mlp.c_proj.bias": [e],
        })
    return config, shapes, "F32"


def llama_1b():
    e, layers, vocab, heads, kv_heads, head_dim, inner = 2048, 16, 128256, 32, 8, 64, 8192
    config = {
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "bos_token_id": 128000,
        "eos_token_id": 128001, "head_dim": head_dim, "hidden_act": "silu", "hidden_size": e,
        "intermediate_size": inner, "max_position_embeddings": 131072, "mlp_bias": False,
        "model_type": "llama", "num_attention_heads": heads, "num_hidden_layers": layers,
        "num_key_value_heads": kv_heads, "rms_norm_eps": 1e-05,
        "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "rope_theta": 500000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "vocab_size": vocab,
    }
    shapes = {"model.embed_tokens.weight": [vocab, e], "model.norm.weight": [e]}
    for n in range(layers):
        p = f"model.layers.{n}."
        shapes.update({
            p + "self_attn.q_proj.weight": [heads * head_dim, e],
            p + "self_attn.k_proj.weight": [kv_heads * head_dim, e],
            p + "self_attn.v_proj.weight": [kv_heads * head_dim, e],
            p + "self_attn.o_proj.weight": [e, heads * head_dim],
            p + "mlp.gate_proj.weight": [inner, e], p + "mlp.up_proj.weight": [inner, e],
            p + "mlp.down_proj.weight": [e, inner],
            p + "input_layernorm.weight": [e], p + "post_attention_layernorm.weight": [e],
        })
    return config, shapes, "BF16"


def header_bytes(shapes, dtype):
    """The file's header (its length first, padded to 8 bytes) and the bytes of data after it;
    the tensors in name order."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name in sorted(shapes):
        size = BYTES[dtype] * math.prod(shapes[name])
        header[name] = {"dtype": dtype, "shape": shapes[name], "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return text, offset


def write_sparse_safetensors(path, shapes, dtype):
    text, offset = header_bytes(shapes, dtype)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.truncate(8 + len(text) + offset)
    return 8 + len(text) + offset


def random_values(name, shape, rng, chunk):
    """The values of tensor `name` as float32 arrays of up to `chunk` values, in order."""
    import numpy as np
    count = math.prod(shape)
    if name.endswith(".attn.bias"):  # GPT-2's causal buffer (1, 1, P, P)
        yield np.tril(np.ones(shape[-2:], dtype=np.float32)).reshape(-1)
        return
    if len(shape) == 1:
        norm = "ln" in name or "norm" in name
        yield np.full(count, 1.0 if norm and name.endswith("weight") else 0.0, dtype=np.float32)
        return
    for start in range(0, count, chunk):
        yield (rng.standard_normal(min(chunk, count - start), dtype=np.float32) * 0.02)


def write_random_safetensors(path, shapes, dtype):
    import numpy as np
    rng = np.random.default_rng(0)
    text, offset = header_bytes(shapes, dtype)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name in sorted(shapes):
            for values in random_values(name, shapes[name], rng, 1 << 24):
                if dtype == "BF16":  # the upper 16 bits, rounded to nearest even
                    bits = values.view(np.uint32)
                    values = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2")
                f.write(values.astype("<f4" if dtype == "F32" else "<u2").tobytes())
    return 8 + len(text) + offset


def main():
    shapes_of = {"gpt2-small": gpt2_small, "llama-1b": llama_1b}
    args = sys.argv[1:]
    random = "--random" in args
    args = [a for a in args if a != "--random"]
    if len(args) != 2 or args[0] not in shapes_of:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(shapes_of)} OUTDIR [--random]")
    config, shapes, dtype = shapes_of[args[0]]()
    os.makedirs(args[1], exist_ok=True)
    with open(os.path.join(args[1], "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    write = write_random_safetensors if random else write_sparse_safetensors
    size = write(os.path.join(args[1], "model.safetensors"), shapes, dtype)
    params = sum(math.prod(s) for s in shapes.values())
    print(f"{args[1]}: {params / 1e6:.1f}M values, model.safetensors {size / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
