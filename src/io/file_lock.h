#pragma once
// A lock on a file a long run writes, so a second run cannot write it at the same time: an
// flock on "<target>.lock" beside the real target (a lock on the target itself would not
// survive the writer's rename), removed when the lock goes and on SIGINT, SIGTERM or SIGHUP
// (io/signal_cleanup.h). The kernel drops the flock when the process ends in any way, so a lock
// file left by SIGKILL blocks nothing.

#include <string>

namespace mha {

class FileLock {
public:
    // Tries to lock `path` (links followed as the writer follows them). held() tells whether
    // it did; throws mha::Error ("cannot write PATH.lock: reason") when the lock file cannot
    // be made or opened (a symbolic link in its place is refused, never followed).
    explicit FileLock(const std::string& path);
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;
    ~FileLock();  // removes the lock file and drops the lock, when held

    // False when another process holds the lock.
    bool held() const { return fd_ >= 0; }
    // "<target>.lock".
    const std::string& lock_path() const { return lock_path_; }

private:
    std::string lock_path_;
    int fd_ = -1;
    int slot_ = -1;  // in io/signal_cleanup.h
};

}  // namespace mha
