// Bounded whole-file reads: no string doubling, no endless /dev/zero, no directory as data.

#include "io/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "io/file_errors.h"

namespace mha {

namespace {

constexpr std::size_t piece_size = std::size_t(1) << 16;

struct Descriptor {
    int fd;
    ~Descriptor() { ::close(fd); }
};

// Reads up to `size` bytes into `data`; returns how many (fewer only at the end of the file).
std::size_t read_some(int fd, char* data, std::size_t size, const std::string& path) {
    std::size_t got = 0;
    while (got < size) {
        const ssize_t n = ::read(fd, data + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail_to_read(path, errno);
        if (n == 0) break;
        got += std::size_t(n);
    }
    return got;
}

// A pipe or device (or a file that grew while read): pieces of 64 KiB, refused as soon as
// the pieces and their joined copy would outgrow what is left.
std::string read_stream(int fd, const std::string& path, const Ledger& ledger, std::string head) {
    std::vector<std::string> pieces;
    std::uint64_t total = head.size();
    pieces.push_back(std::move(head));
    for (;;) {
        std::string piece(piece_size, '\0');
        piece.resize(read_some(fd, piece.data(), piece.size(), path));
        if (piece.empty()) break;
        total += piece.size();
        if (2 * total > ledger.left()) {
            throw Error(path + ": the stream is larger than " + byte_size(ledger.left() / 2) +
                        ", half of " + ledger.describe() +
                        " (a pipe or device takes twice its size to read); raise --max-memory"
                        " or use a smaller file");
        }
        pieces.push_back(std::move(piece));
    }
    std::string bytes;
    bytes.reserve(total);
    for (std::string& piece : pieces) {
        bytes += piece;
        std::string().swap(piece);
    }
    return bytes;
}

// The status of an open file; a directory is refused.
struct stat status_of(const Descriptor& file, const std::string& path) {
    struct stat status {};
    if (::fstat(file.fd, &status) != 0) fail_to_read(path, errno);
    if (S_ISDIR(status.st_mode)) fail_to_read(path, EISDIR);
    return status;
}

}  // namespace

std::string read_file(const std::string& path, const Ledger& ledger) {
    const Descriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (file.fd < 0) fail_to_read(path, errno);
    const struct stat status = status_of(file, path);
    if (!S_ISREG(status.st_mode)) return read_stream(file.fd, path, ledger, std::string());
    const auto size = std::uint64_t(status.st_size);
    ledger.check(size, path, "the file needs " + byte_size(size));
    std::string bytes(size, '\0');
    bytes.resize(read_some(file.fd, bytes.data(), bytes.size(), path));
    char probe;
    if (bytes.size() < size || read_some(file.fd, &probe, 1, path) == 0) return bytes;
    bytes += probe;  // the file grew while it was read: the rest as a stream
    return read_stream(file.fd, path, ledger, std::move(bytes));
}

std::string read_small_file(const std::string& path, std::uint64_t max_bytes,
                            const std::string& what) {
    const Descriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (file.fd < 0) fail_to_read(path, errno);
    status_of(file, path);
    std::string bytes(max_bytes + 1, '\0');
    bytes.resize(read_some(file.fd, bytes.data(), bytes.size(), path));
    if (bytes.size() > max_bytes)
        throw Error(path + ": more than " + byte_size(max_bytes) + ", too long for " + what);
    return bytes;
}

}  // namespace mha
