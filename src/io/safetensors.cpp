// safetensors headers: the 8-byte length, the JSON header and its checks (dtypes, shapes,
// offsets that tile the data exactly up to the file's end).

#include "io/safetensors.h"

#include "core/checked.h"
#include "io/bytes.h"
#include "io/file_range.h"
#include "io/json.h"

#include <algorithm>
#include <limits>

namespace mha::safetensors {

namespace {

constexpr std::uint64_t length_bytes = 8;              // the header's length, little-endian
constexpr std::uint64_t max_header_bytes = 100000000;  // 100 MB, the format's own bound

constexpr DType read_dtypes[] = {DType::F64, DType::F32, DType::F16, DType::BF16};

// The header's length from the first 8 bytes, checked against the file's size and the bound.
std::uint64_t header_length(const char* first, std::uint64_t size, const std::string& file) {
    if (size < length_bytes) {
        throw Error(file + ": truncated: " + std::to_string(size) +
                    " bytes, fewer than the 8 of a safetensors header's length");
    }
    const std::uint64_t length =
        bytes::load_le(reinterpret_cast<const unsigned char*>(first), length_bytes);
    if (length > max_header_bytes) {
        throw Error(file + ": byte 0: the header's length is " + std::to_string(length) +
                    " bytes, over the 100000000 (100 MB) a safetensors header may have");
    }
    if (length > size - length_bytes) {
        throw Error(file + ": truncated: byte 0 gives the header's length as " +
                    std::to_string(length) + " bytes, but only " +
                    std::to_string(size - length_bytes) + " follow");
    }
    return length;
}

DType dtype_of(const json::Value& value, const json::Where& where) {
    const std::string& name = json::as_string(value, where);
    for (DType dtype : read_dtypes)
        if (name == dtype_name(dtype)) return dtype;
    json::refuse(where, value, "dtype " + name + " is not read; mha reads F32, F16, BF16 and F64");
}

Shape shape_of(const json::Value& value, const json::Where& where) {
    Shape shape;
    const std::vector<json::Value>& dims = json::as_array(value, where);
    for (std::size_t i = 0; i < dims.size(); ++i) {
        shape.push_back(std::size_t(json::as_size(dims[i], where.at(i))));
    }
    return shape;
}

// The bytes a tensor of this shape and dtype holds, refused past 64 bits.
std::uint64_t byte_count(const Shape& shape, DType dtype, const json::Value& value,
                         const json::Where& where) {
    std::uint64_t count = item_size(dtype);
    for (std::size_t dim : shape) {
        if (dim != 0 && count > std::numeric_limits<std::uint64_t>::max() / dim) {
            json::refuse(
                where, value,
                to_string(shape) + " of " + dtype_name(dtype) + " is more than 2^64 bytes");
        }
        count *= dim;
    }
    return count;
}

// A tensor's entry: {"dtype": ..., "shape": [...], "data_offsets": [begin, end]}, with its
// offsets relative to the data (the byte after the header) and within `data_size`.
Entry entry_of(const std::string& name, const json::Value& value, const json::Where& where,
               std::uint64_t data_size) {
    json::as_object(value, where);
    for (const auto& member : value.members) {
        if (member.first != "dtype" && member.first != "shape" && member.first != "data_offsets")
            json::refuse(where.at(member.first), member.second,
                         "not a key of a tensor's entry (dtype, shape, data_offsets)");
    }
    const char* keys[] = {"dtype", "shape", "data_offsets"};
    for (const char* key : keys)
        if (!value.find(key))
            json::refuse(where, value, std::string("the tensor has no \"") + key + "\"");
    Entry entry;
    entry.name = name;
    entry.dtype = dtype_of(*value.find("dtype"), where.at("dtype"));
    entry.shape = shape_of(*value.find("shape"), where.at("shape"));
    const json::Value& offsets = *value.find("data_offsets");
    const json::Where at = where.at("data_offsets");
    const std::uint64_t bytes =
        byte_count(entry.shape, entry.dtype, *value.find("shape"), where.at("shape"));
    const std::vector<json::Value>& pair = json::as_array(offsets, at);
    if (pair.size() != 2)
        json::refuse(at, offsets,
                     "expected [begin, end], found " + std::to_string(pair.size()) +
                         (pair.size() == 1 ? " value" : " values"));
    entry.begin = json::as_size(pair[0], at.at(0));
    entry.end = json::as_size(pair[1], at.at(1));
    const std::string range =
        "[" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) + ")";
    if (entry.begin > entry.end) json::refuse(at, offsets, range + " ends before it begins");
    if (entry.end - entry.begin != bytes) {
        json::refuse(at, offsets,
                     range + " holds " + std::to_string(entry.end - entry.begin) + " bytes, but " +
                         to_string(entry.shape) + " of " + dtype_name(entry.dtype) + " needs " +
                         std::to_string(bytes));
    }
    if (entry.end > data_size) {
        json::refuse(at, offsets,
                     "truncated: " + range + " runs past the " + std::to_string(data_size) +
                         " bytes of data that follow the header");
    }
    return entry;
}

// The tensors' ranges, sorted, must cover [0, data_size) with no gap and no overlap.
void check_tiling(std::vector<Entry>& entries, std::uint64_t data_size, const std::string& file) {
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    std::uint64_t covered = 0;
    const Entry* last = nullptr;
    for (const Entry& entry : entries) {
        const std::string range =
            "[" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) + ")";
        if (entry.begin < covered) {
            throw Error(file + ": tensor " + entry.name + "'s data_offsets " + range +
                        " overlap tensor " + last->name + "'s [" + std::to_string(last->begin) +
                        ", " + std::to_string(last->end) + ")");
        }
        if (entry.begin > covered) {
            throw Error(file + ": tensor " + entry.name + "'s data_offsets " + range +
                        " leave a gap: bytes [" + std::to_string(covered) + ", " +
                        std::to_string(entry.begin) + ") of the data belong to no tensor");
        }
        covered = entry.end;
        last = &entry;
    }
    if (covered < data_size) {
        throw Error(file + ": " + std::to_string(data_size - covered) +
                    " bytes of data after the last tensor's, at data offset " +
                    std::to_string(covered) + ": the tensors do not cover the data");
    }
}

// The entries of a header whose text is `text` (8 spaces, then the header's bytes, so that
// the JSON reader's byte offsets are the file's), in a file of `size` bytes.
std::vector<Entry> entries_from(const std::string& text, std::uint64_t size,
                                const std::string& file, const Ledger& ledger) {
    const std::uint64_t parsing = checked_sum({text.size(), json::parse_bytes(text)}, file);
    ledger.check(parsing, file + ": the header",
                 "parsing its " + std::to_string(text.size() - length_bytes) + " bytes needs " +
                     byte_size(parsing));
    const json::Value root = json::parse(text, file);
    const json::Where where{file, ""};
    json::as_object(root, where);
    const std::uint64_t data_start = text.size();
    const std::uint64_t data_size = size - data_start;
    std::vector<Entry> entries;
    for (const auto& [name, value] : root.members) {
        if (name == "__metadata__") {
            const json::Where at = where.at(name);
            for (const auto& member : json::as_object(value, at).members)
                json::as_string(member.second, at.at(member.first));
            continue;
        }
        entries.push_back(entry_of(name, value, where.at(name), data_size));
    }
    check_tiling(entries, data_size, file);
    for (Entry& entry : entries) {
        entry.file = file;
        entry.begin += data_start;
        entry.end += data_start;
    }
    return entries;
}

}  // namespace

std::vector<Entry> parse_header(const std::string& bytes, std::uint64_t size,
                                const std::string& file, const Ledger& ledger) {
    // fewer than 8 bytes at hand: refused as truncated before the length is read
    const std::uint64_t known = bytes.size() < length_bytes ? bytes.size() : size;
    const std::uint64_t length = header_length(bytes.data(), known, file);
    if (bytes.size() < length_bytes + length) {
        throw Error(file + ": truncated: " + std::to_string(bytes.size()) +
                    " bytes, fewer than the " + std::to_string(length_bytes + length) +
                    " of the length and the header");
    }
    std::string text = std::string(length_bytes, ' ') + bytes.substr(length_bytes, length);
    return entries_from(text, size, file, ledger);
}

std::vector<Entry> read_header(const std::string& file, const Ledger& ledger) {
    const FileRange range(file);
    char first[length_bytes] = {};
    range.read(0, std::min(range.size(), length_bytes), first, "the header's length");
    const std::uint64_t length = header_length(first, range.size(), file);
    ledger.check(
        length_bytes + length, file + ": the header",
        "its " + std::to_string(length) + " bytes need " + byte_size(length_bytes + length));
    std::string text(length_bytes + length, ' ');
    range.read(length_bytes, length, text.data() + length_bytes, "the header");
    return entries_from(text, range.size(), file, ledger);
}

}  // namespace mha::safetensors
