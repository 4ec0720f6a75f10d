// Zip records of stored entries: end records (zip64 too), directory, local headers, CRC-32.

#include "io/zip.h"

#include "core/error.h"
#include "io/bytes.h"

#include <array>
#include <cstdio>

namespace mha::zip {

namespace {

using bytes::append_le;
using bytes::field;
using bytes::printable;
using bytes::slice;

// ---- bytes -----------------------------------------------------------------

std::string hex32(std::uint32_t value) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08lx", static_cast<unsigned long>(value));
    return text;
}

// ---- CRC-32 (reflected polynomial 0xEDB88320) --------------------------------

constexpr std::array<std::uint32_t, 256> make_crc_table() {
    std::array<std::uint32_t, 256> table{};
    for (std::uint32_t n = 0; n < 256; ++n) {
        std::uint32_t c = n;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[n] = c;
    }
    return table;
}

constexpr std::array<std::uint32_t, 256> crc_table = make_crc_table();

std::uint32_t crc32(std::string_view bytes) {
    std::uint32_t c = 0xFFFFFFFFu;
    for (const char byte : bytes) {
        c = crc_table[(c ^ static_cast<unsigned char>(byte)) & 0xFF] ^ (c >> 8);
    }
    return c ^ 0xFFFFFFFFu;
}

// ---- records -----------------------------------------------------------------

constexpr std::uint32_t local_signature = 0x04034b50;
constexpr std::uint32_t central_signature = 0x02014b50;
constexpr std::uint32_t end_signature = 0x06054b50;
constexpr std::uint32_t zip64_end_signature = 0x06064b50;
constexpr std::uint32_t zip64_locator_signature = 0x07064b50;
constexpr std::size_t local_size = 30;
constexpr std::size_t central_size = 46;
constexpr std::size_t end_size = 22;
constexpr std::size_t zip64_end_size = 56;
constexpr std::size_t zip64_locator_size = 20;
constexpr std::size_t max_comment = 0xFFFF;
// A saturated 32-bit field means "see the zip64 record"; it is also the limit of plain zip.
constexpr std::uint64_t zip32_saturated = 0xFFFFFFFF;
constexpr std::uint16_t zip64_extra_id = 0x0001;
constexpr std::uint16_t method_stored = 0;
constexpr std::uint16_t method_deflate = 8;

// ---- reading -----------------------------------------------------------------

struct CentralDirectory {
    std::uint64_t entries;
    std::uint64_t offset;
    std::uint64_t size;
};

std::size_t find_end_record(std::string_view bytes, const std::string& path) {
    if (bytes.size() >= end_size) {
        const std::size_t lowest =
            bytes.size() - end_size > max_comment ? bytes.size() - end_size - max_comment : 0;
        for (std::size_t at = bytes.size() - end_size + 1; at-- > lowest;) {
            if (field(bytes, at, 4) == end_signature) return at;
        }
    }
    throw Error(path +
                ": not an .npz file (no zip end of central directory record);"
                " expected a file written by numpy.savez");
}

CentralDirectory zip64_directory(std::string_view bytes, std::size_t end_at,
                                 const std::string& path) {
    const std::string missing =
        path + ": corrupt zip64 file: the zip64 end of central directory is missing";
    if (end_at < zip64_locator_size) throw Error(missing);
    const std::string_view locator = bytes.substr(end_at - zip64_locator_size, zip64_locator_size);
    if (field(locator, 0, 4) != zip64_locator_signature) throw Error(missing);
    const std::string_view record = slice(bytes, field(locator, 8, 8), zip64_end_size, missing);
    if (field(record, 0, 4) != zip64_end_signature) throw Error(missing);
    return {field(record, 32, 8), field(record, 48, 8), field(record, 40, 8)};
}

CentralDirectory central_directory(std::string_view bytes, const std::string& path) {
    const std::size_t end_at = find_end_record(bytes, path);
    const std::string_view end = bytes.substr(end_at, end_size);
    const CentralDirectory directory{field(end, 10, 2), field(end, 16, 4), field(end, 12, 4)};
    if (directory.entries == 0xFFFF || directory.offset == zip32_saturated ||
        directory.size == zip32_saturated) {
        return zip64_directory(bytes, end_at, path);
    }
    return directory;
}

// The zip64 extra field holds 64-bit values for exactly the 32-bit fields that are saturated.
void apply_zip64_values(std::string_view values, Entry& entry, const std::string& path) {
    std::size_t at = 0;
    for (std::uint64_t* value : {&entry.size, &entry.compressed_size, &entry.local_offset}) {
        if (*value != zip32_saturated) continue;
        *value = field(slice(values, at, 8,
                             path + ": " + printable(entry.name) + ": truncated zip64 extra field"),
                       0, 8);
        at += 8;
    }
}

void apply_extra_fields(std::string_view extra, Entry& entry, const std::string& path) {
    for (std::size_t at = 0; at + 4 <= extra.size();) {
        const std::uint64_t length = field(extra, at + 2, 2);
        const std::string_view values = slice(
            extra, at + 4, length, path + ": " + printable(entry.name) + ": truncated extra field");
        if (field(extra, at, 2) == zip64_extra_id) apply_zip64_values(values, entry, path);
        at += 4 + length;
    }
}

// Reads the central directory entry at `at` and moves `at` past it.
Entry read_central_entry(std::string_view directory, std::size_t& at, const std::string& path) {
    const std::string truncated = path + ": truncated central directory";
    const std::string_view fixed = slice(directory, at, central_size, truncated);
    if (field(fixed, 0, 4) != central_signature) {
        throw Error(path + ": corrupt central directory (bad entry signature)");
    }
    const std::size_t name_length = field(fixed, 28, 2);
    const std::size_t extra_length = field(fixed, 30, 2);
    const std::size_t comment_length = field(fixed, 32, 2);
    const std::size_t length = central_size + name_length + extra_length + comment_length;
    slice(directory, at, length, truncated);  // the whole entry must fit
    Entry entry{std::string(directory.substr(at + central_size, name_length)),
                static_cast<std::uint16_t>(field(fixed, 8, 2)),
                static_cast<std::uint16_t>(field(fixed, 10, 2)),
                static_cast<std::uint32_t>(field(fixed, 16, 4)),
                field(fixed, 20, 4),
                field(fixed, 24, 4),
                field(fixed, 42, 4)};
    apply_extra_fields(directory.substr(at + central_size + name_length, extra_length), entry,
                       path);
    at += length;
    return entry;
}

void check_stored(const Entry& entry, const std::string& label) {
    if (entry.flags & 1) {
        throw Error(label + ": the entry is encrypted; expected a plain numpy.savez file");
    }
    if (entry.method == method_deflate) {
        throw Error(label +
                    ": the file is compressed;"
                    " save it with numpy.savez (not numpy.savez_compressed)");
    }
    if (entry.method != method_stored) {
        throw Error(label + ": unsupported zip compression method " + std::to_string(entry.method) +
                    "; save it with numpy.savez");
    }
    if (entry.compressed_size != entry.size) {
        throw Error(label + ": corrupt file: a stored entry of " + std::to_string(entry.size) +
                    " bytes claims " + std::to_string(entry.compressed_size) + " stored bytes");
    }
}

// The entry's bytes after its local header, which must lie inside the archive.
std::string_view entry_bytes(std::string_view bytes, const Entry& entry, const std::string& label) {
    const std::string_view local =
        slice(bytes, entry.local_offset, local_size,
              label + ": truncated file: the local header lies past its end");
    if (field(local, 0, 4) != local_signature) {
        throw Error(label + ": corrupt file (bad local header signature)");
    }
    const std::uint64_t data_start =
        entry.local_offset + local_size + field(local, 26, 2) + field(local, 28, 2);
    return slice(bytes, data_start, entry.size,
                 label + ": truncated file: the entry's " + std::to_string(entry.size) +
                     " bytes run past the end of the file");
}

// ---- writing -----------------------------------------------------------------

using Files = std::vector<std::pair<std::string, std::string>>;

std::uint64_t archive_size(const Files& files) {
    std::uint64_t size = end_size;
    for (const auto& [name, data] : files) {
        size += local_size + central_size + 2 * std::uint64_t{name.size()} + data.size();
    }
    return size;
}

// Fields the local header and the central directory entry share, from "version needed" on.
std::string shared_fields(std::uint32_t crc, std::uint64_t size, std::size_t name_length) {
    constexpr std::uint16_t version_needed = 20;                 // zip 2.0: stored files
    constexpr std::uint16_t dos_date = (0 << 9) | (1 << 5) | 1;  // 1980-01-01: reproducible output
    std::string fields;
    append_le(fields, version_needed, 2);
    append_le(fields, 0, 2);  // flags
    append_le(fields, method_stored, 2);
    append_le(fields, 0, 2);  // time 00:00:00
    append_le(fields, dos_date, 2);
    append_le(fields, crc, 4);
    append_le(fields, size, 4);  // compressed size
    append_le(fields, size, 4);  // uncompressed size
    append_le(fields, name_length, 2);
    append_le(fields, 0, 2);  // extra field length
    return fields;
}

void append_central_entry(std::string& directory, const std::string& fields,
                          const std::string& name, std::uint64_t local_offset) {
    append_le(directory, central_signature, 4);
    append_le(directory, 20, 2);  // version made by: zip 2.0
    directory += fields;
    // comment length, disk number, internal and external attributes
    directory.append(2 + 2 + 2 + 4, '\0');
    append_le(directory, local_offset, 4);
    directory += name;
}

void append_end_record(std::string& archive, std::size_t entries, std::uint64_t directory_size,
                       std::uint64_t directory_offset) {
    append_le(archive, end_signature, 4);
    append_le(archive, 0, 2 + 2);  // this disk, the directory's disk
    append_le(archive, entries, 2);
    append_le(archive, entries, 2);
    append_le(archive, directory_size, 4);
    append_le(archive, directory_offset, 4);
    append_le(archive, 0, 2);  // comment length
}

}  // namespace

std::vector<Entry> read_directory(std::string_view bytes, const std::string& path) {
    const CentralDirectory location = central_directory(bytes, path);
    const std::string_view directory = slice(
        bytes, location.offset, location.size,
        path + ": truncated central directory: it should span " + std::to_string(location.size) +
            " bytes from offset " + std::to_string(location.offset) + " but the file has " +
            std::to_string(bytes.size()) + " bytes");
    std::vector<Entry> entries;
    std::size_t at = 0;
    for (std::uint64_t i = 0; i < location.entries; ++i) {
        entries.push_back(read_central_entry(directory, at, path));
    }
    return entries;
}

std::string_view stored_data(std::string_view bytes, const Entry& entry, const std::string& label) {
    check_stored(entry, label);
    const std::string_view data = entry_bytes(bytes, entry, label);
    const std::uint32_t computed = crc32(data);
    if (computed != entry.crc) {
        throw Error(label + ": corrupt file: CRC-32 mismatch (stored " + hex32(entry.crc) +
                    ", computed " + hex32(computed) + ")");
    }
    return data;
}

std::string stored_archive(const Files& files, const std::string& path) {
    const std::uint64_t size = archive_size(files);
    if (size >= zip32_saturated) {
        throw Error("cannot write " + path +
                    ": the arrays need more than 4 GiB, which this writer does not support");
    }
    std::string archive;
    std::string directory;
    archive.reserve(size);
    for (const auto& [name, data] : files) {
        const std::string fields = shared_fields(crc32(data), data.size(), name.size());
        append_central_entry(directory, fields, name, archive.size());
        append_le(archive, local_signature, 4);
        archive += fields;
        archive += name;
        archive += data;
    }
    const std::uint64_t directory_offset = archive.size();
    archive += directory;
    append_end_record(archive, files.size(), directory.size(), directory_offset);
    return archive;
}

}  // namespace mha::zip
