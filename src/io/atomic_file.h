#pragma once
// The one writer for every file the tool writes (--save, --export-svg, --format html
// --output): the target checked first and followed through symbolic links, a temporary file
// beside the real target, renamed over it once complete, removed on any failure and on
// SIGINT, SIGTERM or SIGHUP (those the program does not handle itself: mha train's SIGINT
// only asks the loop to save and stop). SIGXFSZ is ignored, so a file size limit is a failed
// write.

#include <fstream>
#include <string>

namespace mha {

// Throws mha::Error when `path` cannot be written (checked before a long computation):
// a directory, a device, pipe or socket, a standard stream (/dev/stdout, /dev/fd/N), a link
// loop, a missing folder.
void check_writable(const std::string& path);

// The file `path` names once symbolic links are followed (a relative link read from its
// folder); `path` itself when it is no link. Throws mha::Error for a standard stream or a
// link loop, and for a target that is not a regular file (or no file yet).
std::string write_target(const std::string& path);

// "<target>.<16 random hex digits>.tmp" beside the target, created exclusively so no other
// run shares it and writable while it is written, then given the target's mode and renamed
// over the target (a link stays a link and its target is updated): a read-only target that
// its folder lets us replace is replaced by a read-only file.
class AtomicFile {
public:
    explicit AtomicFile(const std::string& path);
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;
    ~AtomicFile();  // removes the temporary file unless commit() succeeded

    std::ostream& stream() { return out_; }
    // Closes the temporary file and renames it to the target; throws mha::Error
    // ("cannot write PATH: ...") when any write failed.
    void commit();

private:
    int slot_ = -1;  // the temporary file's, in io/signal_cleanup.h (set by temporary_'s maker)
    std::string path_, target_, temporary_;
    std::ofstream out_;
    bool committed_ = false;
};

}  // namespace mha
