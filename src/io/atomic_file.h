#pragma once
// Files written whole or not at all (--save, --export-svg): a temporary file beside the
// target, renamed over it once complete, removed on any failure and on SIGINT or SIGTERM.

#include <fstream>
#include <string>

namespace mha {

// Throws mha::Error when `path` cannot be written (checked before a long computation):
// a directory, a device, pipe or socket (which the rename would replace), a missing folder.
void check_writable(const std::string& path);

// "<path>.<16 random hex digits>.tmp", created exclusively so no other run shares it.
class AtomicFile {
public:
    explicit AtomicFile(const std::string& path);
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;
    ~AtomicFile();  // removes the temporary file unless commit() succeeded

    std::ostream& stream() { return out_; }
    // Closes the temporary file and renames it to the path; throws mha::Error
    // ("cannot write PATH: ...") when any write failed.
    void commit();

private:
    std::string path_, temporary_;
    std::ofstream out_;
    bool committed_ = false;
};

}  // namespace mha
