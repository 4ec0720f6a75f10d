// The lock file: created or opened, flocked without waiting, and checked to be the file its
// name still names (the previous holder may have removed it in between).

#include "io/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/file_errors.h"
#include "io/signal_cleanup.h"

namespace mha {

namespace {

constexpr int max_attempts = 100;

// Whether the open descriptor is the file `path` names now.
bool still_named(int fd, const std::string& path) {
    struct stat opened {};
    struct stat named {};
    return ::fstat(fd, &opened) == 0 && ::stat(path.c_str(), &named) == 0 &&
           opened.st_dev == named.st_dev && opened.st_ino == named.st_ino;
}

}  // namespace

FileLock::FileLock(const std::string& path) : lock_path_(write_target(path) + ".lock") {
    for (int attempt = 0; attempt < max_attempts; ++attempt) {
        const int fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (fd < 0) fail_to_write(lock_path_, errno);
        if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
            const int error = errno;
            ::close(fd);
            if (error == EWOULDBLOCK) return;  // another process holds it
            fail_to_write(lock_path_, error);
        }
        if (still_named(fd, lock_path_)) {
            fd_ = fd;
            slot_ = remove_on_signal(lock_path_);
            return;
        }
        ::close(fd);  // its holder removed it as we opened it: lock the one there now
    }
    throw Error("cannot write " + lock_path_ + ": it keeps being replaced");
}

FileLock::~FileLock() {
    if (fd_ < 0) return;
    keep_on_signal(slot_);
    ::unlink(lock_path_.c_str());
    ::close(fd_);
}

}  // namespace mha
