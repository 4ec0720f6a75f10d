// The target followed through links and checked, the temporary file (removed on a signal by
// io/signal_cleanup.h), its mode and the rename.

#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <random>

#include "core/error.h"
#include "io/file_errors.h"
#include "io/signal_cleanup.h"

namespace mha {

namespace fs = std::filesystem;

namespace {

constexpr int max_links = 40;  // as the kernel's own limit on a path's links
const char* const expected_target = "expected a regular file or a new file name";

// /dev/stdout, /dev/stderr, /dev/fd/N and /proc/...: a process's open descriptor, which a
// rename would replace (or, through /proc/self/fd, the file behind it, under the reader).
bool names_a_descriptor(const fs::path& path) {
    const std::string text = path.string();
    for (const char* prefix : {"/dev/std", "/dev/fd/", "/proc/"}) {
        if (text.rfind(prefix, 0) == 0) return true;
    }
    return false;
}

// What a file that is not regular is, for the message.
std::string kind_of(const fs::file_status& status) {
    switch (status.type()) {
        case fs::file_type::directory:
            return "a directory";
        case fs::file_type::character:
            return "a character device";
        case fs::file_type::block:
            return "a block device";
        case fs::file_type::fifo:
            return "a named pipe (FIFO)";
        case fs::file_type::socket:
            return "a socket";
        default:
            return "not a regular file";
    }
}

// `path` with its folder's links resolved, so the checks see the real place.
fs::path with_real_folder(const fs::path& path) {
    std::error_code error;
    const fs::path folder = fs::weakly_canonical(path.parent_path(), error);
    return error ? path : folder / path.filename();
}

}  // namespace

std::string write_target(const std::string& path) {
    fs::path current = with_real_folder(fs::absolute(fs::path(path)));
    for (int hop = 0; hop <= max_links; ++hop) {
        const std::string shown = hop == 0 ? path : path + " (a link to " + current.string() + ")";
        if (names_a_descriptor(current)) {
            throw Error("cannot write " + shown +
                        ": it names a standard stream or an open "
                        "descriptor, not a file; " +
                        expected_target);
        }
        std::error_code ignored;
        const fs::file_status status = fs::symlink_status(current, ignored);
        if (fs::is_symlink(status)) {
            const fs::path link = fs::read_symlink(current, ignored);
            current = with_real_folder(link.is_absolute() ? link : current.parent_path() / link);
            continue;
        }
        if (fs::is_directory(status)) {
            throw Error("cannot write " + shown + ": it is a directory; give a file name");
        }
        if (fs::exists(status) && !fs::is_regular_file(status)) {
            throw Error("cannot write " + shown + ": it is " + kind_of(status) + "; " +
                        expected_target);
        }
        return hop == 0 ? path : current.string();
    }
    throw Error("cannot write " + path + ": more than " + std::to_string(max_links) +
                " symbolic links to follow (a loop?); " + expected_target);
}

namespace {

// Creates the temporary file exclusively beside `target` (O_EXCL: another name is drawn
// when it exists), writable by its owner whatever the target's mode: commit gives it the
// target's mode once it is written. Registered for removal on a signal.
std::string create_temporary(const std::string& path, const std::string& target, int& slot) {
    std::random_device entropy;
    std::mt19937_64 draw((std::uint64_t{entropy()} << 32) ^ entropy());
    for (int attempt = 0; attempt < 100; ++attempt) {
        char suffix[24];
        std::snprintf(suffix, sizeof suffix, ".%016llx.tmp",
                      static_cast<unsigned long long>(draw()));
        const std::string name = target + suffix;
        const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            slot = remove_on_signal(name);
            ::close(fd);
            return name;
        }
        if (errno != EEXIST) fail_to_write(path, errno);
    }
    throw Error("cannot write " + path + ": no free temporary name beside it");
}

// The written temporary file given the permissions of the target it replaces, if any.
void take_target_mode(const std::string& temporary, const std::string& target) {
    struct stat existing {};
    if (::stat(target.c_str(), &existing) == 0)
        ::chmod(temporary.c_str(), existing.st_mode & 07777);
}

}  // namespace

void check_writable(const std::string& path) {
    int slot = -1;
    const std::string temporary = create_temporary(path, write_target(path), slot);
    std::remove(temporary.c_str());
    keep_on_signal(slot);
}

AtomicFile::AtomicFile(const std::string& path)
    : path_(path), target_(write_target(path)), temporary_(create_temporary(path, target_, slot_)) {
    out_.open(temporary_, std::ios::binary | std::ios::trunc);
    if (!out_) {
        const int error = errno;
        std::remove(temporary_.c_str());
        keep_on_signal(slot_);
        fail_to_write(path_, error);
    }
}

AtomicFile::~AtomicFile() {
    if (committed_) return;
    out_.close();
    std::remove(temporary_.c_str());
    keep_on_signal(slot_);
}

void AtomicFile::commit() {
    // a failed write leaves its errno: the stream writes nothing more once it has failed
    if (!out_) fail_to_write(path_, errno ? errno : EIO);
    errno = 0;
    out_.close();
    if (!out_) fail_to_write(path_, errno ? errno : EIO);
    take_target_mode(temporary_, target_);
    if (std::rename(temporary_.c_str(), target_.c_str()) != 0) {
        fail_to_write(path_, errno);
    }
    committed_ = true;
    keep_on_signal(slot_);
}

}  // namespace mha
