#pragma once
// NumPy's .npy and .npz files: read any float, bool or integer array in either byte
// order and either memory order (Fortran order is transposed to C order on load);
// write float32 arrays, and int32, int64 or float64 ones beside them. An .npz is a zip of
// .npy files, stored (not compressed), as numpy.savez writes it.

#include "core/tensor/tensor.h"
#include "io/ledger.h"

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mha::npy {

struct Array {
    Shape shape;
    char kind = 'f';             // 'f' float, 'b' bool, 'i' signed integer, 'u' unsigned integer
    std::size_t item_size = 4;   // bytes per element
    std::vector<double> values;  // every element, C order, converted to double

    std::string dtype_name() const;  // "float32", "float64", "bool", "int64", "uint8", ...
};

// `what` names the source in error messages ("mask.npy", "weights.npz: W_q.weight").
Array parse_npy(const std::string& bytes, const std::string& what);
// Reading refuses, before allocating it, memory beyond what the ledger has left: the file's
// bytes plus 12 bytes per element (its double here and its float in a tensor).
Array read_npy(const std::string& path, const Ledger& ledger = Ledger());
// Entries by name without the ".npy" suffix, as numpy.load(path) shows them; the ledger
// covers the archive's bytes and every entry's elements together.
std::map<std::string, Array> parse_npz(const std::string& bytes, const std::string& what,
                                       const Ledger& ledger = Ledger());
std::map<std::string, Array> read_npz(const std::string& path, const Ledger& ledger = Ledger());
// How many values the archive's arrays hold, read from their headers alone (nothing decoded).
std::uint64_t npz_value_count(const std::string& bytes, const std::string& path);

// The array's values as a float32 tensor of the same shape.
Tensor to_tensor(const Array& array);

std::string to_npy_bytes(const Tensor& tensor);  // float32, C order
// Writes through io/atomic_file: a temporary file beside `path`, unique to this run, renamed
// to `path`; on any failure (or SIGINT/SIGTERM) the temporary file is removed.
void write_npz(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& arrays);

// An int32, int64 or float64 array as .npy bytes (values within ±2^53 for the integers);
// throws mha::Error for another kind or a count that does not fit the shape.
std::string to_npy_bytes(const Array& array);

// The same with such arrays after the float32 tensors (vocab, heads, a trainer's state).
void write_npz(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& arrays,
               const std::vector<std::pair<std::string, Array>>& others);

}  // namespace mha::npy
