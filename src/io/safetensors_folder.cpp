// A Hugging Face model folder's safetensors: the single file or the index and its shards,
// every header checked at open; tensors, rows and row chunks read by offset within the ledger.

#include "io/safetensors.h"

#include "core/checked.h"
#include "io/file_range.h"
#include "io/json.h"
#include "io/read_file.h"

#include <algorithm>
#include <filesystem>

namespace mha::safetensors {

namespace {

namespace fs = std::filesystem;

const std::string single_name = "model.safetensors";
const std::string index_name = "model.safetensors.index.json";
constexpr std::uint64_t chunk_bytes = std::uint64_t(1) << 20;  // file bytes read at once

std::string joined(const std::string& dir, const std::string& name) {
    return !dir.empty() && dir.back() == '/' ? dir + name : dir + "/" + name;
}

// A regular file once symlinks are followed (a dangling link is absent).
bool is_file(const std::string& path) {
    std::error_code error;
    return fs::is_regular_file(path, error);
}

std::string range_of(const Entry& entry) {
    return "bytes [" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) + ")";
}

// A weight_map value: a file name in the folder, not a path out of it.
void check_shard_name(const json::Value& value, const json::Where& where) {
    const std::string& name = json::as_string(value, where);
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
        json::refuse(where, value,
                     "expected a shard's file name in the folder, found \"" + name + "\"");
}

// The index's weight_map: tensor name → (shard file name, its value for errors).
std::map<std::string, const json::Value*> weight_map(const json::Value& root,
                                                     const json::Where& where) {
    json::as_object(root, where);
    const json::Value* map = root.find("weight_map");
    if (!map) json::refuse(where, root, "no \"weight_map\" (tensor name to shard file)");
    std::map<std::string, const json::Value*> result;
    const json::Where at = where.at("weight_map");
    for (const auto& [name, value] : json::as_object(*map, at).members) {
        check_shard_name(value, at.at(name));
        result[name] = &value;
    }
    return result;
}

// Rows of a 2-D tensor: its shape checked.
void require_matrix(const Entry& entry) {
    if (entry.shape.size() != 2) {
        throw Error(entry.file + ": tensor " + entry.name + " is " + to_string(entry.shape) +
                    ", not a matrix: its rows cannot be read");
    }
}

std::size_t chunk_elements(const Entry& entry) {
    return std::size_t(chunk_bytes / item_size(entry.dtype));
}

// Elements [first, first + count) of the tensor, widened into `out`, read a chunk at a time.
void read_span(const FileRange& file, const Entry& entry, std::uint64_t first, std::size_t count,
               float* out) {
    const std::size_t item = item_size(entry.dtype);
    const std::string what = entry.file + ": tensor " + entry.name;
    std::string buffer(std::min(count, chunk_elements(entry)) * item, '\0');
    for (std::size_t done = 0; done < count;) {
        const std::size_t n = std::min(count - done, chunk_elements(entry));
        file.read(entry.begin + (first + done) * item, n * item, buffer.data(),
                  "tensor " + entry.name);
        widen(entry.dtype, buffer.data(), n, out + done, what, first + done);
        done += n;
    }
}

// Refuses, before anything is allocated, a result of this shape in float32 and the buffer
// that reads spans of `span` elements beyond what the ledger has left.
void check_budget(const Ledger& ledger, const Entry& entry, const Shape& shape, std::size_t span,
                  const std::string& which) {
    std::uint64_t elements = 1;
    for (std::size_t dim : shape)
        elements = checked_product({elements, dim}, entry.name + "'s size");
    const std::uint64_t floats = checked_product({elements, 4}, entry.name + "'s size");
    const std::uint64_t buffer =
        std::min<std::uint64_t>(span, chunk_elements(entry)) * item_size(entry.dtype);
    ledger.check(floats + buffer, entry.file + ": tensor " + entry.name,
                 which + " " + to_string(shape) + " in float32 need " + byte_size(floats) +
                     " (and " + byte_size(buffer) + " to read them)",
                 "a smaller checkpoint");
}

// The tensors of the index's shards, each header checked, each name in the index and in the
// shard the index names for it.
std::map<std::string, Entry> sharded_entries(const std::string& dir, const Ledger& ledger) {
    std::map<std::string, Entry> entries;
    const std::string path = joined(dir, index_name);
    const std::string text = read_file(path, ledger);
    const std::uint64_t parsing = checked_sum({text.size(), json::parse_bytes(text)}, path);
    ledger.check(
        parsing, path,
        "parsing its " + std::to_string(text.size()) + " bytes needs " + byte_size(parsing));
    const json::Value root = json::parse(text, path);
    Ledger left = ledger;  // the shards' headers are read while the index's tree is held
    left.hold(parsing);
    const json::Where where{path, ""};
    const std::map<std::string, const json::Value*> map = weight_map(root, where);
    std::map<std::string, std::vector<std::string>> names_in;  // shard → its tensors' names
    for (const auto& [name, value] : map) names_in[value->text].push_back(name);
    for (const auto& [shard, names] : names_in) {
        const std::string shard_path = joined(dir, shard);
        if (!is_file(shard_path)) {
            json::refuse(where.at("weight_map").at(names.front()), *map.at(names.front()),
                         "shard " + shard + " is absent from " + dir);
        }
        for (Entry& entry : read_header(shard_path, left)) {
            const auto listed = map.find(entry.name);
            if (listed == map.end()) {
                throw Error(shard_path + ": tensor " + entry.name + " (" + range_of(entry) +
                            ") is not in " + index_name + "'s weight_map");
            }
            if (listed->second->text != shard) {
                throw Error(shard_path + ": tensor " + entry.name + " (" + range_of(entry) +
                            ") is in " + index_name + "'s weight_map under " +
                            listed->second->text);
            }
            entries[entry.name] = std::move(entry);
        }
        for (const std::string& name : names) {
            if (!entries.count(name))
                json::refuse(where.at("weight_map").at(name), *map.at(name),
                             shard + " has no tensor " + name);
        }
    }
    return entries;
}

}  // namespace

Folder Folder::open(const std::string& dir, const Ledger& ledger) {
    Folder folder;
    folder.dir_ = dir;
    if (is_file(joined(dir, single_name))) {
        folder.source_ = single_name;
        for (Entry& entry : read_header(joined(dir, single_name), ledger))
            folder.entries_[entry.name] = std::move(entry);
        return folder;
    }
    if (!is_file(joined(dir, index_name))) {
        std::error_code error;
        if (!fs::is_directory(dir, error))
            throw Error(dir + ": not a folder (a checkpoint is a Hugging Face model folder)");
        throw Error(dir + ": neither " + single_name + " nor " + index_name +
                    " (a Hugging Face model folder holds one of them)");
    }
    folder.source_ = index_name;
    folder.entries_ = sharded_entries(dir, ledger);
    return folder;
}

bool Folder::has(const std::string& name) const { return entries_.count(name) != 0; }

const Entry& Folder::entry(const std::string& name) const {
    const auto found = entries_.find(name);
    if (found == entries_.end()) throw Error(dir_ + ": no tensor " + name + " (" + source_ + ")");
    return found->second;
}

std::vector<std::string> Folder::names() const {
    std::vector<std::string> result;
    for (const auto& named : entries_) result.push_back(named.first);
    return result;
}

std::uint64_t Folder::float32_bytes(const std::string& name) const {
    return float_bytes(entry(name).shape, "tensor " + name + "'s float32 bytes");
}

Tensor Folder::read(const std::string& name, const Ledger& ledger) const {
    const Entry& e = entry(name);
    check_budget(ledger, e, e.shape, element_count(e.shape), "its values");
    Tensor tensor(e.shape);
    read_span(FileRange(e.file), e, 0, tensor.numel(), tensor.data());
    return tensor;
}

Tensor Folder::read_rows(const std::string& name, const std::vector<std::size_t>& rows,
                         const Ledger& ledger) const {
    const Entry& e = entry(name);
    require_matrix(e);
    const std::size_t cols = e.shape[1];
    for (std::size_t row : rows) {
        if (row >= e.shape[0])
            throw Error(e.file + ": tensor " + name + " has " + std::to_string(e.shape[0]) +
                        " rows; row " + std::to_string(row) + " was asked for");
    }
    check_budget(ledger, e, {rows.size(), cols}, cols, "rows");
    Tensor tensor({rows.size(), cols});
    const FileRange file(e.file);
    for (std::size_t i = 0; i < rows.size(); ++i)
        read_span(file, e, std::uint64_t(rows[i]) * cols, cols, tensor.data() + i * cols);
    return tensor;
}

Tensor Folder::read_row_range(const std::string& name, std::size_t first, std::size_t count,
                              const Ledger& ledger) const {
    const Entry& e = entry(name);
    require_matrix(e);
    if (first > e.shape[0] || count > e.shape[0] - first)
        throw Error(e.file + ": tensor " + name + " has " + std::to_string(e.shape[0]) +
                    " rows; rows [" + std::to_string(first) + ", " + std::to_string(first + count) +
                    ") were asked for");
    const std::size_t cols = e.shape[1];
    check_budget(ledger, e, {count, cols}, count * cols, "rows");
    Tensor tensor({count, cols});
    read_span(FileRange(e.file), e, std::uint64_t(first) * cols, count * cols, tensor.data());
    return tensor;
}

}  // namespace mha::safetensors
