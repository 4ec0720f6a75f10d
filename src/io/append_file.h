#pragma once
// A file written a line at a time as a run goes (mha train --log), each line handed to the
// system at once: a failed write is an mha::Error with the system's reason, at the line that
// failed.

#include <string>

namespace mha {

class AppendFile {
public:
    // Opens `path` for appending, emptied first when `fresh`; throws mha::Error ("cannot write
    // PATH: reason") when it cannot be opened.
    AppendFile(const std::string& path, bool fresh);
    AppendFile(const AppendFile&) = delete;
    AppendFile& operator=(const AppendFile&) = delete;
    ~AppendFile();

    // Writes `line` and a newline; throws mha::Error ("cannot write PATH: reason") when the
    // system takes less (a full disk, a file size limit).
    void write_line(const std::string& line);

private:
    std::string path_;
    int fd_;
};

}  // namespace mha
