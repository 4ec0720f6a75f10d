#!/usr/bin/env python3
"""Learns a small byte-level BPE tokenizer, GPT-2's recipe at toy size, from the King James
text that mha train ships (examples/corpus/kjv.txt), and writes vocab.json and merges.txt
beside this script: 256 byte symbols and MERGES merges (default 300).

The recipe: cut the text into pieces with GPT-2's pattern (the text is ASCII, so \\p{L} is
[A-Za-z] and \\p{N} is [0-9]); write each piece's bytes as GPT-2's byte symbols; then, MERGES
times, count every pair of neighbouring symbols over all pieces (each piece as often as it
occurs), join the most frequent pair everywhere (ties: the pair that sorts first), and record
it as the next merge. mha applies the merges in that order of rank.

Run from the repository root:  python3 examples/exercises/08-tokens/learn_merges.py [MERGES]"""

import collections
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "..", "corpus", "kjv.txt")
PATTERN = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+")


def byte_symbols():
    """GPT-2's map: printable Latin-1 bytes stand for themselves, the others take U+0100 on."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    symbols, shifted = {}, 0
    for b in range(256):
        if b in keep:
            symbols[b] = chr(b)
        else:
            symbols[b] = chr(256 + shifted)
            shifted += 1
    return symbols


def main():
    merges_wanted = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    with open(CORPUS, encoding="ascii") as f:
        text = f.read()
    symbols = byte_symbols()
    words = collections.Counter(PATTERN.findall(text))
    pieces = {tuple(symbols[b] for b in w.encode()): n for w, n in words.items()}
    merges = []
    for _ in range(merges_wanted):
        pairs = collections.Counter()
        for piece, n in pieces.items():
            for pair in zip(piece, piece[1:]):
                pairs[pair] += n
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        joined = {}
        for piece, n in pieces.items():
            out, i = [], 0
            while i < len(piece):
                if i + 1 < len(piece) and (piece[i], piece[i + 1]) == best:
                    out.append(piece[i] + piece[i + 1])
                    i += 2
                else:
                    out.append(piece[i])
                    i += 1
            joined[tuple(out)] = joined.get(tuple(out), 0) + n
        pieces = joined
    vocab = {symbols[b]: b for b in range(256)}
    for left, right in merges:
        vocab.setdefault(left + right, len(vocab))
    with open(os.path.join(HERE, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False, indent=0)
        f.write("\n")
    with open(os.path.join(HERE, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for left, right in merges:
            f.write(left + " " + right + "\n")
    print("%d tokens, %d merges" % (len(vocab), len(merges)))


if __name__ == "__main__":
    main()
