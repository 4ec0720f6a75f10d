#pragma once
// Files the process removes when SIGINT, SIGTERM or SIGHUP ends it (those it does not handle
// itself): the writer's temporary file, the locks of mha train's outputs. The handler then
// ends the process by the signal, as it would have ended without it.

#include <string>

namespace mha {

// Registers `path` for removal on those signals; returns its slot for keep_on_signal, or -1
// when the path is too long or every slot is taken (the file is then removed on the ordinary
// ways out only). The handler is installed once, for each signal whose action is the default;
// SIGXFSZ is ignored from then on, so a file size limit fails a write (EFBIG) instead of
// ending the process.
int remove_on_signal(const std::string& path);

// Forgets a slot remove_on_signal gave (a -1 is ignored).
void keep_on_signal(int slot);

}  // namespace mha
