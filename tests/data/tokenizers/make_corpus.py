#!/usr/bin/env python3
"""Writes corpus.json beside it: the strings the tokenizers are compared on (issue 45).

Hand-written sentences by kind (English, contractions, digits, whitespace, punctuation,
accented Latin, Greek, Cyrillic, CJK, emoji and ZWJ sequences, mixed), then variations of
them (joined by runs of spaces, tabs and newlines; digits of every length). Kept out, where
the references disagree with Unicode 15 (docs/tokenizers.md): U+FEFF and U+0085 (JS's \\s
has the first and not the second) and anything assigned after Unicode 15.0 (node's ICU is
newer). Run once: python3 tests/data/tokenizers/make_corpus.py"""

import json
import os

ENGLISH = [
    "Hello world",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "In the beginning God created the heaven and the earth.",
    "Attention is all you need.",
    "world",
    " world",
    "  world",
    "World",
    "WORLD",
    "tokenization",
    "antidisestablishmentarianism",
    "The cat sat on the mat. The dog sat on the log.",
    "a b c d e f g",
    "I",
    "a",
    "A",
    "The transformer maps a sequence of tokens to a sequence of vectors.",
    "Multi-head attention splits d_model into h heads of d_k each.",
    "Queries, keys and values are linear projections of the input.",
    "She sells sea shells by the sea shore.",
    "To be, or not to be, that is the question.",
    "It was the best of times, it was the worst of times.",
    "Call me Ishmael.",
    "GPT-2 uses byte-level BPE with 50,257 tokens.",
    "camelCaseIdentifier and snake_case_identifier",
    "https://example.com/path?query=1&other=two#anchor",
    "user@example.org",
    "C:\\Users\\name\\file.txt",
    "/usr/local/bin/mha --checkpoint gpt2 --text 'hi'",
    "def forward(self, x):\n    return self.proj(x)\n",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
    '{"key": "value", "list": [1, 2, 3]}',
    "<html><body><p>Hi</p></body></html>",
    "SELECT * FROM tokens WHERE id > 100;",
    "Mr. Smith went to Washington D.C. on Jan. 5th.",
    "e.g. i.e. etc. vs. a.m. p.m.",
    "OK",
    "ok",
    "Ok.",
]

CONTRACTIONS = [
    "It's", "it's", "don't", "I'm", "you're", "we've", "they'll", "she'd", "can't", "won't",
    "IT'S", "DON'T", "I'M", "You'Re", "Let's go", "o'clock", "rock 'n' roll", "'s", "'t",
    "'re", "'ve", "'m", "'ll", "'d", "''", "'", "'x", "the dog's bone", "the dogs' bones",
    "I'd've", "y'all'd've", "'tis", "\u2019s curly apostrophe: it\u2019s", "ma'am",
    "He said 'hello' and left.", "don 't", "don' t", "isn't it?", "we'll see", "'lls",
]

DIGITS = [
    "0", "1", "12", "123", "1234", "12345", "123456", "1234567", "12345678", "123456789",
    "1234567890", "3.14159", "2.718281828", "1,000,000", "1 000 000", "-42", "+7", "1e-5",
    "0x1F600", "2024-01-15", "12:34:56", "$19.99", "100%", "50/50", "v1.2.3", "abc123def",
    "123abc", "a1b2c3", " 42", "  42", "year 1999 and 2000", "phone: +1 (555) 123-4567",
    "\u0661\u0662\u0663",  # Arabic-Indic digits
    "\u0966\u0967\u0968",  # Devanagari digits
    "\u00bd \u00bc \u00be",  # vulgar fractions (No)
    "\u2160 \u2161 \u2162",  # Roman numerals (Nl)
    "\u2460\u2461\u2462",  # circled digits (No)
    "\uff11\uff12\uff13",  # fullwidth digits
    "99 bottles", "7th", "1st 2nd 3rd",
]

WHITESPACE = [
    " ", "  ", "   ", "    ", "        ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n",
    " \n", "\n ", " \t ", "a  b", "a   b", "a    b", "a\tb", "a\t\tb", "a\nb", "a\n\nb",
    "a \n b", "a\n  b", "  leading", "trailing  ", " both ", "\tindented", "line1\nline2\nline3",
    "para one.\n\npara two.", "a\u00a0b", "a\u3000b", "a\u2003b", "a\u2009b", "a\u202fb",
    "a\u205fb", "a\u1680b", "a\u2028b", "a\u2029b", "a\u000bb", "a\u000cb", "a\rb",
    "  \u00a0  x", "x \u00a0", "end with newline\n", "\n\nstart with newlines",
    "    def indented_code():\n        pass", "tabs\tand spaces  mixed \t here",
]

PUNCTUATION = [
    "!", "?", "...", "!!!", "?!", ".,;:", "()", "[]", "{}", "<>", "---", "--", "\u2014",
    "\u2013", "\u2026", "\u00ab quoted \u00bb", "\u201cquoted\u201d", "\u2018single\u2019",
    "#hashtag", "@mention", "a+b=c", "x*y", "~tilde", "`code`", "|pipe|", "\\backslash",
    "^caret", "&amp;", "***bold***", "__init__", "a_b", "a-b", "a.b", "a/b", "a,b", " !", " ?",
    " ...", "Wait... what?!", "\u00bfQu\u00e9?", "\u00a1Hola!", "\u00a7 3", "\u00a9 2024",
    "\u00ae \u2122", "\u00b0C", "\u00b1 5", "\u00d7 \u00f7", "\u2190 \u2192 \u2191 \u2193",
    "\u2200x \u2203y", "\u221e", "\u2211 \u220f \u222b", "\u00b7", "\u2022 bullet",
    "\u00ad", "a\u00adb",
]

ACCENTED = [
    "caf\u00e9", "na\u00efve", "r\u00e9sum\u00e9", "\u00c9t\u00e9", "Stra\u00dfe",
    "\u00fcber", "Z\u00fcrich", "S\u00e3o Paulo", "Ma\u00f1ana", "cr\u00e8me br\u00fbl\u00e9e",
    "fa\u00e7ade", "\u00c5ngstr\u00f6m", "K\u00f8benhavn", "\u0141\u00f3d\u017a",
    "\u010cesk\u00fd Krumlov", "\u0218tefan", "Dvo\u0159\u00e1k", "Erd\u0151s",
    "\u00eele-de-France", "garon\u00ae",
    "cafe\u0301",  # e + combining acute (not NFC)
    "n\u0303",  # n + combining tilde
    "a\u0308o\u0308u\u0308",  # combining diaeresis
    "\u1ea0\u1eb1\u1ec7 Vi\u1ec7t Nam",
    "Nguy\u1ec5n",
    "Tr\u01b0\u1eddng",
    "\u00d8resund",
    "\u0130stanbul",
    "\u0131",
    "\u00c6sir",
]

GREEK = [
    "\u03b1\u03b2\u03b3", "\u0391\u03b8\u03ae\u03bd\u03b1", "\u039a\u03b1\u03bb\u03b7\u03bc\u03ad\u03c1\u03b1",
    "\u03ba\u03cc\u03c3\u03bc\u03b5", "\u0395\u03bb\u03bb\u03ac\u03b4\u03b1",
    "\u03c0 \u2248 3.14", "\u03a3\u03c9\u03ba\u03c1\u03ac\u03c4\u03b7\u03c2",
    "\u1f08\u03c1\u03c7\u03ae", "\u03bb\u03cc\u03b3\u03bf\u03c2 \u03ba\u03b1\u1f76",
    "\u0394x = 0.5",
]

CYRILLIC = [
    "\u041f\u0440\u0438\u0432\u0435\u0442", "\u043f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440",
    "\u041c\u043e\u0441\u043a\u0432\u0430", "\u0417\u0434\u0440\u0430\u0432\u0441\u0442\u0432\u0443\u0439\u0442\u0435!",
    "\u0423\u043a\u0440\u0430\u0457\u043d\u0430", "\u0411\u044a\u043b\u0433\u0430\u0440\u0438\u044f",
    "\u0421\u0440\u0431\u0438\u0458\u0430", "\u0451\u0436", "\u0419\u043e\u0433\u0443\u0440\u0442 2024",
    "\u0432\u043d\u0438\u043c\u0430\u043d\u0438\u0435 \u2014 \u044d\u0442\u043e \u0432\u0441\u0451",
]

CJK = [
    "\u4e2d\u6587", "\u4f60\u597d\uff0c\u4e16\u754c\uff01", "\u65e5\u672c\u8a9e",
    "\u3053\u3093\u306b\u3061\u306f", "\u30ab\u30bf\u30ab\u30ca", "\ud55c\uad6d\uc5b4",
    "\uc548\ub155\ud558\uc138\uc694", "\u6ce8\u610f\u529b\u673a\u5236",
    "\u6771\u4eac\u30bf\u30ef\u30fc", "\u6f22\u5b57\u3068\u304b\u306a", "\u3002", "\u3001",
    "\u300c\u5f15\u7528\u300d", "\u4e00\u4e8c\u4e09", "\u5927\u898f\u6a21\u8a00\u8a9e\u30e2\u30c7\u30eb",
    "\U0002030e",  # U+2030E, CJK Extension B
    "\u4e2d\u6587 English \u6df7\u5408", "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35",  # Thai
    "\u0928\u092e\u0938\u094d\u0924\u0947",  # Devanagari with virama and signs (marks)
    "\u0645\u0631\u062d\u0628\u0627",  # Arabic
    "\u05e9\u05dc\u05d5\u05dd",  # Hebrew
]

EMOJI = [
    "\U0001f600", "\U0001f600\U0001f600", " \U0001f600", "Hi \U0001f44b",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467",  # family: ZWJ sequence
    "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466",
    "\U0001f469\u200d\U0001f4bb",  # woman technologist
    "\U0001f3f3\ufe0f\u200d\U0001f308",  # rainbow flag
    "\U0001f44d\U0001f3fd",  # thumbs up, skin tone
    "\U0001f1fa\U0001f1f8",  # flag: regional indicators
    "\u2764\ufe0f", "\u2764", "\u263a", "\u2705 done", "\U0001f680 launch",
    "\U0001f389\U0001f389\U0001f389", "\U0001f914?", "emoji\U0001f525fire",
    "1\ufe0f\u20e3",  # keycap
    "\U0001f9d1\u200d\U0001f91d\u200d\U0001f9d1",
    "a\u200db", "a\u200cb", "\u200b",  # zero-width joiner, non-joiner, space (Cf)
]

MIXED = [
    "The word \u201ccaf\u00e9\u201d has 4 letters and 5 bytes.",
    "GPT-2 \u2260 GPT-3, but \u2248 similar \U0001f914",
    "\u041f\u0440\u0438\u0432\u0435\u0442, world! \u4f60\u597d 123",
    "Temperature: 23\u00b0C (73\u00b0F) \u2600\ufe0f",
    "Price: \u20ac12.50 / \u00a310 / \u00a51000",
    "Ich hei\u00dfe J\u00fcrgen und wohne in M\u00fcnchen.",
    "\u03a4\u03bf \u03b1\u03bb\u03c6\u03ac\u03b2\u03b7\u03c4\u03bf: \u03b1, \u03b2, \u03b3",
    "Tokyo (\u6771\u4eac) has 14 million people \U0001f3d9\ufe0f.",
    "It's 5 o'clock somewhere\u2026 \U0001f37a",
    "Dear \u00c9lodie,\n\nThanks for the r\u00e9sum\u00e9!\n\n\u2014 Bj\u00f6rn",
    "x\u00b2 + y\u00b2 = z\u00b2",
    "H\u2082O and CO\u2082",
    "\u00bd cup of caf\u00e9 au lait",
    "Mixed\tTABS\tand  spaces\n\tand newlines \U0001f600\n",
    "I'll pay $1,234.56 for 7 \U0001f355s.",
    "\u0928\u092e\u0938\u094d\u0924\u0947 world \u0645\u0631\u062d\u0628\u0627",
    "\u2018Hello,\u2019 she said. \u201cHi!\u201d he replied.",
    "A\u0301 B\u0302 C\u0327",
    "1\u00a0000 \u20ac",
    "emoji at end \U0001f468\u200d\U0001f469\u200d\U0001f467",
]


def variations(base):
    """More strings from the hand-written ones: joined by whitespace runs, digits of each
    length, and words in other cases."""
    out = []
    joiners = [" ", "  ", "   ", "\t", "\n", " \n ", "\n\n", " \t", "\t\t ", "    "]
    words = ["hello", "world", "caf\u00e9", "\u041c\u0438\u0440", "\u4e16\u754c", "\U0001f600", "42", "don't", "!"]
    for i, joiner in enumerate(joiners):
        out.append(joiner.join(words[i % len(words):] + words[: i % len(words)]))
    for n in range(1, 21):
        out.append("".join(str((i * 7 + n) % 10) for i in range(n)))
    for n in range(1, 13):
        out.append("x" + " " * n + "y")
        out.append("x" + "\n" * n + "y")
    for s in base[:40]:
        out.append(s.upper())
        out.append(" " + s)
    return out


def main():
    base = (ENGLISH + CONTRACTIONS + DIGITS + WHITESPACE + PUNCTUATION + ACCENTED + GREEK +
            CYRILLIC + CJK + EMOJI + MIXED)
    corpus = []
    for s in base + variations(base):
        if s not in corpus:
            corpus.append(s)
    for s in corpus:
        assert "\ufeff" not in s and "\u0085" not in s, s
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(corpus, f, ensure_ascii=False, indent=0)
        f.write("\n")
    print("%s: %d strings" % (path, len(corpus)))


if __name__ == "__main__":
    main()
