// Reads at an offset with pread, retried on EINTR and short reads.

#include "io/file_range.h"

#include "io/file_errors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace mha {

FileRange::FileRange(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fail_to_read(path, errno);
    struct stat status {};
    const int error = ::fstat(fd_, &status) != 0 ? errno : S_ISDIR(status.st_mode) ? EISDIR : 0;
    if (error == 0 && !S_ISREG(status.st_mode)) {
        ::close(fd_);
        throw Error("cannot read " + path + ": not a regular file");
    }
    if (error != 0) {
        ::close(fd_);
        fail_to_read(path, error);
    }
    size_ = std::uint64_t(status.st_size);
}

FileRange::~FileRange() { ::close(fd_); }

void FileRange::read(std::uint64_t offset, std::uint64_t length, char* out,
                     const std::string& what) const {
    std::uint64_t got = 0;
    while (got < length) {
        const ssize_t n = ::pread(fd_, out + got, length - got, off_t(offset + got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail_to_read(path_, errno);
        if (n == 0) {
            throw Error(path_ + ": truncated: " + what + " needs bytes [" + std::to_string(offset) +
                        ", " + std::to_string(offset + length) + "), but the file ends at byte " +
                        std::to_string(offset + got));
        }
        got += std::uint64_t(n);
    }
}

}  // namespace mha
