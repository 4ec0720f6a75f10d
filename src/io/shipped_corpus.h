#pragma once
// The corpus mha train learns from without --corpus (examples/corpus/kjv.txt: 1.5 MiB of the
// King James Bible, public domain), built into the binary.

#include <string_view>

namespace mha {

// The text of examples/corpus/kjv.txt as the build read it.
std::string_view shipped_corpus();

}  // namespace mha
