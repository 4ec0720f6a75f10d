#pragma once
// Zip archives of stored (uncompressed) entries, as numpy.savez writes them: read and write.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mha::zip {

// One file in an archive, as its central directory entry describes it.
struct Entry {
    std::string name;          // as stored, e.g. "W_q.weight.npy"
    std::uint16_t flags = 0;   // bit 0: encrypted
    std::uint16_t method = 0;  // 0 stored, 8 deflate
    std::uint32_t crc = 0;     // CRC-32 of the data
    std::uint64_t compressed_size = 0;
    std::uint64_t size = 0;
    std::uint64_t local_offset = 0;  // where the entry's local header starts
};

// The entries of the archive `bytes` in directory order; `path` names the archive in errors.
std::vector<Entry> read_directory(std::string_view bytes, const std::string& path);

// The data of a stored, unencrypted entry whose CRC-32 matches; `label` names the entry in
// errors ("weights.npz: W_q.weight").
std::string_view stored_data(std::string_view bytes, const Entry& entry, const std::string& label);

// An archive storing each (name, data) in order, without zip64: the caller keeps names unique,
// 1 to 65535 bytes long, and fewer than 65535 of them. Throws mha::Error naming `path` when the
// archive would reach 4 GiB.
std::string stored_archive(const std::vector<std::pair<std::string, std::string>>& files,
                           const std::string& path);

}  // namespace mha::zip
