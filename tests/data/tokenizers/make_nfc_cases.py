#!/usr/bin/python3
"""Writes nfc_cases.txt beside this script: inputs and their NFC by Python's unicodedata, for the
NFC normalizer's test. Each line is "INPUT;EXPECTED", code points in hex separated by spaces.

The inputs: every character with a canonical decomposition, decomposed (NFD) and as it is; each
of them followed by marks out of canonical order; Hangul syllables decomposed into jamo; and mixed
runs. Only code points that Python's Unicode database (14.0 for Debian 12's Python) has assigned,
and that Unicode 15.0 did not change, so the two versions agree.

  /usr/bin/python3 make_nfc_cases.py            (run once; the output is committed)"""

import os
import random
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
MARKS = [0x0301, 0x0323, 0x0308, 0x031B, 0x0327, 0x0345, 0x05B0, 0x0F71, 0x302A, 0x0300]


def assigned(text):
    return all(unicodedata.category(c) != "Cn" for c in text)


def hexes(text):
    return " ".join("%04X" % ord(c) for c in text)


def cases():
    rng = random.Random(15)
    out = []
    for code in range(0x110000):
        c = chr(code)
        if unicodedata.category(c) in ("Cn", "Cs") or unicodedata.decomposition(c) in ("",) \
                or unicodedata.decomposition(c).startswith("<"):
            continue
        out.append(c)
        out.append(unicodedata.normalize("NFD", c))
        marks = "".join(chr(m) for m in rng.sample(MARKS, 3))
        out.append(unicodedata.normalize("NFD", c) + marks)
    for _ in range(300):
        syllable = chr(rng.randrange(0xAC00, 0xAC00 + 11172))
        out.append(unicodedata.normalize("NFD", syllable) + chr(rng.choice(MARKS)))
        out.append(syllable + chr(0x11A8 + rng.randrange(27)))
    for _ in range(300):
        out.append("".join(rng.choice(["a", "e", "o", "\u1100", "\u1161", "\u11a8", "A", " "] +
                                      [chr(m) for m in MARKS]) for _ in range(8)))
    return [text for text in out if assigned(text)]


def main():
    lines = ["%s;%s" % (hexes(text), hexes(unicodedata.normalize("NFC", text))) for text in cases()]
    with open(os.path.join(HERE, "nfc_cases.txt"), "w", encoding="ascii") as f:
        f.write("\n".join(lines) + "\n")
    print("%d cases (Unicode %s)" % (len(lines), unicodedata.unidata_version))


if __name__ == "__main__":
    main()
