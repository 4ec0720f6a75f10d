// examples/corpus/kjv.txt built into the binary with the assembler's .incbin, which g++ and
// clang++ both pass on; the path is read from the folder make runs in, the repository root
// (the Makefile states the dependency).

#include "io/shipped_corpus.h"

extern "C" const char mha_shipped_corpus_begin[];
extern "C" const char mha_shipped_corpus_end[];

asm(".pushsection .rodata.mha_shipped_corpus, \"a\", @progbits\n"
    ".global mha_shipped_corpus_begin\n"
    "mha_shipped_corpus_begin:\n"
    ".incbin \"examples/corpus/kjv.txt\"\n"
    ".global mha_shipped_corpus_end\n"
    "mha_shipped_corpus_end:\n"
    ".popsection\n");

namespace mha {

std::string_view shipped_corpus() {
    return {mha_shipped_corpus_begin,
            static_cast<std::size_t>(mha_shipped_corpus_end - mha_shipped_corpus_begin)};
}

}  // namespace mha
