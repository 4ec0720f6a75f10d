#pragma once
// A file read by byte ranges (pread), not whole: a checkpoint's header, one tensor or some of
// its rows. Opening follows symlinks, as a Hugging Face cache's snapshot files need.

#include <cstdint>
#include <string>

namespace mha {

class FileRange {
public:
    // Throws mha::Error "cannot read PATH: ..." when it cannot be opened or is not a regular
    // file (a directory, a pipe).
    explicit FileRange(const std::string& path);
    ~FileRange();
    FileRange(const FileRange&) = delete;
    FileRange& operator=(const FileRange&) = delete;

    const std::string& path() const { return path_; }
    std::uint64_t size() const { return size_; }  // at open

    // Bytes [offset, offset + length) into `out`. Throws mha::Error "PATH: truncated: ..."
    // when the file ends first (it shrank since its header was read), naming `what` and
    // both byte counts.
    void read(std::uint64_t offset, std::uint64_t length, char* out, const std::string& what) const;

private:
    std::string path_;
    int fd_ = -1;
    std::uint64_t size_ = 0;
};

}  // namespace mha
