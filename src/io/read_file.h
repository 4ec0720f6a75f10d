#pragma once
// Reading a whole file within a memory ledger: a regular file is sized with fstat and read
// into one buffer of that size; a pipe or device is read in pieces and joined once.

#include "io/ledger.h"

#include <string>

namespace mha {

// The file's bytes. Throws mha::Error ("cannot read PATH: ...") when it cannot be opened,
// is a directory or fails to read, and before allocating when the bytes do not fit in what
// the ledger has left (a pipe or device counts twice: its pieces and the joined copy).
std::string read_file(const std::string& path, const Ledger& ledger);

}  // namespace mha
