// Temporary file, rename, and the signal handler that removes a temporary file left open.

#include "io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include "core/error.h"

namespace mha {

namespace {

std::string system_error(const std::string& path, int error) {
    return "cannot write " + path + ": " + std::strerror(error);
}

// The temporary file open now (at most one at a time), for the signal handler: a fixed
// buffer, since a handler may not allocate.
char pending[4096];
volatile std::sig_atomic_t has_pending = 0;

extern "C" void remove_pending_and_die(int signal_number) {
    if (has_pending) ::unlink(pending);
    std::signal(signal_number, SIG_DFL);
    std::raise(signal_number);
}

void remember(const std::string& name) {
    static const bool installed = [] {
        for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
            struct sigaction action {};
            action.sa_handler = remove_pending_and_die;
            sigemptyset(&action.sa_mask);
            struct sigaction previous {};
            sigaction(signal_number, nullptr, &previous);
            if (previous.sa_handler != SIG_IGN) sigaction(signal_number, &action, nullptr);
        }
        return true;
    }();
    (void)installed;
    if (name.size() >= sizeof pending) return;  // too long to keep: removed on failure only
    has_pending = 0;
    std::memcpy(pending, name.c_str(), name.size() + 1);
    has_pending = 1;
}

void forget() { has_pending = 0; }

// Refuses a directory, and a device, pipe or socket, which the rename would replace.
void check_target(const std::string& path) {
    std::error_code ignored;
    const std::filesystem::file_status status = std::filesystem::status(path, ignored);
    if (std::filesystem::is_directory(status)) {
        throw Error("cannot write " + path + ": it is a directory; give a file name");
    }
    if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
        throw Error("cannot write " + path +
                    ": it is not a regular file (a device, pipe or socket); give a file name");
    }
}

// Creates the temporary file exclusively (O_EXCL: another name is drawn when it exists).
std::string create_temporary(const std::string& path) {
    check_target(path);
    std::random_device entropy;
    std::mt19937_64 draw((std::uint64_t{entropy()} << 32) ^ entropy());
    for (int attempt = 0; attempt < 100; ++attempt) {
        char suffix[24];
        std::snprintf(suffix, sizeof suffix, ".%016llx.tmp",
                      static_cast<unsigned long long>(draw()));
        const std::string name = path + suffix;
        const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            remember(name);
            ::close(fd);
            return name;
        }
        if (errno != EEXIST) throw Error(system_error(path, errno));
    }
    throw Error("cannot write " + path + ": no free temporary name beside it");
}

}  // namespace

void check_writable(const std::string& path) {
    const std::string temporary = create_temporary(path);
    std::remove(temporary.c_str());
    forget();
}

AtomicFile::AtomicFile(const std::string& path) : path_(path), temporary_(create_temporary(path)) {
    out_.open(temporary_, std::ios::binary | std::ios::trunc);
    if (!out_) {
        const int error = errno;
        std::remove(temporary_.c_str());
        forget();
        throw Error(system_error(path_, error));
    }
}

AtomicFile::~AtomicFile() {
    if (committed_) return;
    out_.close();
    std::remove(temporary_.c_str());
    forget();
}

void AtomicFile::commit() {
    // a failed write leaves its errno: the stream writes nothing more once it has failed
    if (!out_) throw Error(system_error(path_, errno ? errno : EIO));
    errno = 0;
    out_.close();
    if (!out_) throw Error(system_error(path_, errno ? errno : EIO));
    if (std::rename(temporary_.c_str(), path_.c_str()) != 0) throw Error(system_error(path_, errno));
    committed_ = true;
    forget();
}

}  // namespace mha
