# Writes kjv.txt, the corpus `mha train` learns from when no --corpus is given: the King James
# Bible as examples/models/train.py reads it (every verse as Debian's `bible -f` prints it, the
# reference removed, joined by single spaces), cut at the last whole verse within 1.5 MiB
# (Genesis 1:1 to 1 Chronicles 16:33), with no newline at the end.
#
#     apt-get install bible-kjv-text          # the `bible` reader and the text
#     python3 examples/corpus/make_kjv.py     # from the repository root
import os
import subprocess

LIMIT = 3 * 512 * 1024  # 1.5 MiB of UTF-8

text = subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], check=True, capture_output=True,
                      text=True).stdout
verses = [line.split(" ", 1)[1] for line in text.splitlines() if " " in line]
kept, size = [], 0
for verse in verses:
    grown = size + len(verse.encode("utf-8")) + (1 if kept else 0)
    if grown > LIMIT:
        break
    kept.append(verse)
    size = grown
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "kjv.txt"), "w",
          encoding="utf-8", newline="") as out:
    out.write(" ".join(kept))
print("kjv.txt: %d verses, %d bytes, the last: %s" % (len(kept), size, kept[-1][:60]))
