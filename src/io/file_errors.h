#pragma once
// The refusal of a failed system call on a file, one line: "cannot read PATH: No such file or
// directory"; shared by the readers and writers of io/.

#include <cstring>
#include <string>

#include "core/error.h"

namespace mha {

// Throws "cannot read PATH: " and the system's words for errno `error`.
[[noreturn]] inline void fail_to_read(const std::string& path, int error) {
    throw Error("cannot read " + path + ": " + std::strerror(error));
}

// Throws "cannot write PATH: " and the system's words for errno `error`.
[[noreturn]] inline void fail_to_write(const std::string& path, int error) {
    throw Error("cannot write " + path + ": " + std::strerror(error));
}

}  // namespace mha
