#pragma once
// Reading a whole file within a memory ledger: a regular file is sized with fstat and read
// into one buffer of that size; a pipe or device is read in pieces and joined once. A small
// file (an answers file) is read within a fixed bound instead.

#include "io/ledger.h"

#include <cstdint>
#include <string>

namespace mha {

// The file's bytes. Throws mha::Error ("cannot read PATH: ...") when it cannot be opened,
// is a directory or fails to read, and before allocating when the bytes do not fit in what
// the ledger has left (a pipe or device counts twice: its pieces and the joined copy).
std::string read_file(const std::string& path, const Ledger& ledger);

// The file's bytes when there are at most max_bytes of them, whatever kind of file it is
// (/dev/zero stops after max_bytes + 1). Throws mha::Error as read_file does, and past the
// bound "PATH: more than SIZE, too long for WHAT".
std::string read_small_file(const std::string& path, std::uint64_t max_bytes,
                            const std::string& what);

}  // namespace mha
