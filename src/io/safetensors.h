#pragma once
// Hugging Face safetensors files, read with the standard library: the headers of a model
// folder (model.safetensors, or model.safetensors.index.json and its shards) validated at
// open, then one tensor, some rows or a chunk of rows at a time, read by offset and widened
// to float32 (F32, F16, BF16 exactly; F64 rounded to nearest).

#include "core/tensor/tensor.h"
#include "io/ledger.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mha::safetensors {

// The dtypes read; any other ("I8", "BOOL", "F8_E4M3", ...) is refused by name at open.
enum class DType { F64, F32, F16, BF16 };

const char* dtype_name(DType dtype);  // "F64", "F32", "F16", "BF16", as files write them
std::size_t item_size(DType dtype);   // bytes per element in the file: 8, 4, 2, 2

// One tensor as a header describes it.
struct Entry {
    std::string name;
    DType dtype = DType::F32;
    Shape shape;              // the tensor's shape; () for a scalar
    std::string file;         // the .safetensors file holding it (symlinks are followed on reading)
    std::uint64_t begin = 0;  // byte range [begin, end) of its data in that file: absolute,
    std::uint64_t end = 0;    //   the 8 length bytes and the header included
};

// The file's tensors from its first bytes: reads the 8-byte length and the header only.
// Throws mha::Error naming the file, the tensor or key and the byte offset when the file is
// truncated, the header is over 100 MB, not JSON or not a safetensors header, a dtype is not
// read, a shape's byte count disagrees with its offsets, or the offsets do not tile the data
// exactly up to the file's end. The header's parse is charged to the ledger first.
std::vector<Entry> read_header(const std::string& file, const Ledger& ledger);

// The same from a file's bytes in memory (the fuzz target's entry): `file` names it in errors
// and entries, `size` is the whole file's size (bytes may hold only its first part).
std::vector<Entry> parse_header(const std::string& bytes, std::uint64_t size,
                                const std::string& file, const Ledger& ledger);

// Little-endian element bytes widened to float32 as torch's .float() widens them: exact for
// F32, F16, BF16, subnormals and infinities included, NaN payloads kept (an F16 signalling
// NaN made quiet, as torch does); F64 rounded to nearest even. `count` elements from `bytes`
// into `out`. An F64 value that is finite but beyond float32's range is refused, naming
// `what` and the element's index (first_index + its position).
float f16_to_f32(std::uint16_t bits);
float bf16_to_f32(std::uint16_t bits);
void widen(DType dtype, const char* bytes, std::size_t count, float* out, const std::string& what,
           std::uint64_t first_index);

// A Hugging Face model folder's tensors: model.safetensors, or model.safetensors.index.json
// and the shards its weight_map names (the single file when both are there, as transformers
// chooses). Every header is read and checked at open; no tensor data is read until asked
// for. Each read asks the ledger, before allocating, for its float32 result and a read
// buffer of at most 1 MiB, and holds nothing: the caller holds what it keeps.
class Folder {
public:
    // Reads the headers only. Throws mha::Error when DIR holds neither file, a shard named by
    // the index is absent (named), a name in a shard is not in the index or one in the index
    // is not in the shard it names, or any header fails read_header's checks.
    static Folder open(const std::string& dir, const Ledger& ledger);

    const std::string& dir() const { return dir_; }
    bool has(const std::string& name) const;
    // Throws mha::Error "DIR: no tensor NAME (model.safetensors)" (the file, or the index).
    const Entry& entry(const std::string& name) const;
    std::vector<std::string> names() const;  // sorted
    // The tensor's size once widened: 4 bytes per element.
    std::uint64_t float32_bytes(const std::string& name) const;

    // The whole tensor, widened to float32, in its shape, read 1 MiB of the file at a time.
    Tensor read(const std::string& name, const Ledger& ledger) const;
    // A 2-D tensor's rows, in the given order (repeats allowed): (rows.size(), cols). Each row
    // is read by its own offset; a row index past the tensor's rows, or a tensor that is not
    // 2-D, is refused.
    Tensor read_rows(const std::string& name, const std::vector<std::size_t>& rows,
                     const Ledger& ledger) const;
    // A 2-D tensor's rows [first, first + count): (count, cols), one span of the file.
    Tensor read_row_range(const std::string& name, std::size_t first, std::size_t count,
                          const Ledger& ledger) const;

private:
    std::string dir_;
    std::string source_;  // "model.safetensors" or "model.safetensors.index.json"
    std::map<std::string, Entry> entries_;
};

}  // namespace mha::safetensors
