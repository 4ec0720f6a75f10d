// The appended file: open(2) and write(2), so a failure carries its errno.

#include "io/append_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "io/file_errors.h"

namespace mha {

AppendFile::AppendFile(const std::string& path, bool fresh)
    : path_(path),
      fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (fresh ? O_TRUNC : 0),
                 0666)) {
    if (fd_ < 0) fail_to_write(path_, errno);
    std::signal(SIGXFSZ, SIG_IGN);  // a file size limit fails the write (EFBIG), as in the writer
}

AppendFile::~AppendFile() { ::close(fd_); }

void AppendFile::write_line(const std::string& line) {
    const std::string text = line + "\n";
    for (std::size_t done = 0; done < text.size();) {
        const ssize_t written = ::write(fd_, text.data() + done, text.size() - done);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) fail_to_write(path_, written < 0 ? errno : EIO);
        done += std::size_t(written);
    }
}

}  // namespace mha
