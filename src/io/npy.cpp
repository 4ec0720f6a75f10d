// NumPy .npy/.npz files: header parsing, dtype decoding, float32 writing; the zip layer is io/zip.

#include "io/npy.h"

#include "core/checked.h"
#include "core/error.h"
#include "io/atomic_file.h"
#include "io/bytes.h"
#include "io/read_file.h"
#include "io/zip.h"

#include <cstdint>
#include <limits>
#include <set>
#include <string_view>

namespace mha::npy {

namespace {

using bytes::append_le;
using bytes::bit_cast;
using bytes::field;
using bytes::load_le;
using bytes::printable;
using bytes::slice;

// ---- bytes and files -------------------------------------------------------

const std::string npy_magic("\x93NUMPY", 6);
constexpr std::uint64_t bytes_per_value = sizeof(double) + sizeof(float);
constexpr std::size_t npy_alignment = 64;  // numpy pads headers so data starts on this boundary

// ---- dtypes ----------------------------------------------------------------

using Decoder = double (*)(const unsigned char*);

double decode_float32(const unsigned char* p) {
    return bit_cast<float>(static_cast<std::uint32_t>(load_le(p, 4)));
}

double decode_float64(const unsigned char* p) { return bit_cast<double>(load_le(p, 8)); }

double decode_bool(const unsigned char* p) { return *p != 0 ? 1.0 : 0.0; }

template <std::size_t Width>
double decode_unsigned(const unsigned char* p) {
    return static_cast<double>(load_le(p, Width));
}

template <std::size_t Width>
double decode_signed(const unsigned char* p) {
    const std::uint64_t sign = std::uint64_t{1} << (8 * Width - 1);
    const std::uint64_t extended = (load_le(p, Width) ^ sign) - sign;  // two's complement, 64 bits
    return static_cast<double>(bit_cast<std::int64_t>(extended));
}

struct DType {
    char kind;
    std::size_t item_size;
    Decoder decode;
};

constexpr DType supported_dtypes[] = {
    {'f', 4, decode_float32},     {'f', 8, decode_float64},     {'b', 1, decode_bool},
    {'i', 1, decode_signed<1>},   {'i', 2, decode_signed<2>},   {'i', 4, decode_signed<4>},
    {'i', 8, decode_signed<8>},   {'u', 1, decode_unsigned<1>}, {'u', 2, decode_unsigned<2>},
    {'u', 4, decode_unsigned<4>}, {'u', 8, decode_unsigned<8>},
};

Error unsupported_dtype(const std::string& descr, const std::string& what) {
    return Error(what + ": unsupported dtype '" + printable(descr) +
                 "'; expected float32, float64, bool or (u)int8/16/32/64"
                 " (convert it with arr.astype('<f4') before saving)");
}

const DType* find_dtype(char kind, const std::string& size_digits) {
    for (const DType& dtype : supported_dtypes) {
        if (dtype.kind == kind && size_digits == std::to_string(dtype.item_size)) return &dtype;
    }
    return nullptr;
}

// A dtype and the byte order its items are stored in.
struct StoredDType {
    DType dtype;
    bool big_endian;  // '>': each item's bytes are reversed before decoding
};

// descr is byte order + kind + size, e.g. "<f4", ">i8", "|b1"; byte order is moot for
// 1-byte items. '=' is native, which numpy writes only as '<' or '>' on disk.
StoredDType parse_dtype(const std::string& descr, const std::string& what) {
    const DType* dtype = descr.size() >= 3 ? find_dtype(descr[1], descr.substr(2)) : nullptr;
    const char order = descr.empty() ? '?' : descr[0];
    if (!dtype || std::string_view("<>=|").find(order) == std::string_view::npos) {
        throw unsupported_dtype(descr, what);
    }
    if (dtype->item_size == 1) return {*dtype, false};
    if (order == '|') throw unsupported_dtype(descr, what);
    return {*dtype, order == '>'};
}

double decode_item(const StoredDType& stored, const unsigned char* item) {
    if (!stored.big_endian) return stored.dtype.decode(item);
    unsigned char swapped[8];
    for (std::size_t i = 0; i < stored.dtype.item_size; ++i) {
        swapped[i] = item[stored.dtype.item_size - 1 - i];
    }
    return stored.dtype.decode(swapped);
}

// A Fortran-order buffer into C-order values: the buffer's first index varies fastest, so
// item j goes to the C-order position of the same multi-index.
void decode_fortran_order(const StoredDType& stored, const unsigned char* data, const Shape& shape,
                          std::vector<double>& values) {
    std::vector<std::size_t> c_strides(shape.size(), 1);
    for (std::size_t k = shape.size(); k-- > 1;) c_strides[k - 1] = c_strides[k] * shape[k];
    std::vector<std::size_t> index(shape.size(), 0);
    std::size_t target = 0;  // the C-order offset of `index`
    for (std::size_t j = 0; j < values.size(); ++j) {
        values[target] = decode_item(stored, data + j * stored.dtype.item_size);
        for (std::size_t k = 0; k < shape.size(); ++k) {  // the next index, first one fastest
            target += c_strides[k];
            if (++index[k] < shape[k]) break;
            target -= c_strides[k] * shape[k];
            index[k] = 0;
        }
    }
}

// ---- the .npy header: a Python dict literal --------------------------------

struct Header {
    std::string descr;
    bool fortran_order = false;
    Shape shape;
};

// Reads {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } in any key order,
// with any spacing and optional trailing commas.
class HeaderParser {
public:
    HeaderParser(std::string_view text, const std::string& what) : text_(text), what_(what) {}

    Header parse() {
        Header header;
        std::set<std::string> seen;
        expect('{', "'{'");
        while (!accept('}')) {
            parse_entry(header, seen);
            if (!accept(',')) {
                expect('}', "',' or '}'");
                break;
            }
        }
        skip_spaces();
        if (pos_ != text_.size()) fail("the end of the header after '}'");
        for (const char* key : {"descr", "fortran_order", "shape"}) {
            if (!seen.count(key)) throw Error(what_ + ": .npy header has no '" + key + "' key");
        }
        return header;
    }

private:
    void parse_entry(Header& header, std::set<std::string>& seen) {
        const std::string key = parse_string("a quoted key");
        if (!seen.insert(key).second) {
            throw Error(what_ + ": .npy header repeats the key '" + printable(key) + "'");
        }
        expect(':', "':'");
        if (key == "descr") {
            header.descr = parse_descr();
        } else if (key == "fortran_order") {
            header.fortran_order = parse_bool();
        } else if (key == "shape") {
            header.shape = parse_shape();
        } else {
            throw Error(what_ + ": .npy header has an unexpected key '" + printable(key) +
                        "'; expected only descr, fortran_order and shape");
        }
    }

    std::string parse_descr() {
        skip_spaces();
        if (pos_ < text_.size() && text_[pos_] == '[') {
            throw Error(what_ +
                        ": structured dtypes (records with named fields) are not"
                        " supported; expected a plain float, bool or integer array");
        }
        return parse_string("a quoted dtype such as '<f4'");
    }

    std::string parse_string(const char* expected) {
        skip_spaces();
        const char quote = pos_ < text_.size() ? text_[pos_] : '\0';
        const std::size_t end = text_.find(quote, pos_ + 1);
        if ((quote != '\'' && quote != '"') || end == std::string_view::npos) fail(expected);
        const std::string value(text_.substr(pos_ + 1, end - pos_ - 1));
        pos_ = end + 1;
        return value;
    }

    bool parse_bool() {
        skip_spaces();
        for (const bool value : {true, false}) {
            const std::string_view word = value ? "True" : "False";
            if (text_.substr(pos_, word.size()) == word) {
                pos_ += word.size();
                return value;
            }
        }
        fail("True or False");
    }

    Shape parse_shape() {
        Shape shape;
        expect('(', "a shape tuple such as (2, 3)");
        while (!accept(')')) {
            shape.push_back(parse_dimension());
            if (!accept(',')) {
                expect(')', "',' or ')' in the shape");
                break;
            }
        }
        return shape;
    }

    std::size_t parse_dimension() {
        skip_spaces();
        if (pos_ >= text_.size() || !is_digit(text_[pos_])) fail("a non-negative dimension");
        constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
        std::size_t value = 0;
        for (; pos_ < text_.size() && is_digit(text_[pos_]); ++pos_) {
            const auto digit = static_cast<std::size_t>(text_[pos_] - '0');
            if (value > (max - digit) / 10) {
                throw Error(what_ + ": a dimension in the .npy shape overflows 64 bits");
            }
            value = value * 10 + digit;
        }
        if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 long, as old numpy wrote
        return value;
    }

    static bool is_digit(char c) { return c >= '0' && c <= '9'; }

    void skip_spaces() {
        while (pos_ < text_.size() &&
               std::string_view(" \t\r\n").find(text_[pos_]) != std::string_view::npos) {
            ++pos_;
        }
    }

    bool accept(char c) {
        skip_spaces();
        if (pos_ >= text_.size() || text_[pos_] != c) return false;
        ++pos_;
        return true;
    }

    void expect(char c, const char* expected) {
        if (!accept(c)) fail(expected);
    }

    [[noreturn]] void fail(const std::string& expected) const {
        throw Error(what_ + ": malformed .npy header: expected " + expected + " at " + excerpt());
    }

    // Up to 24 characters from the current position, printable, for the error message.
    std::string excerpt() const {
        if (pos_ >= text_.size()) return "the end of the header";
        return "'" + printable(text_.substr(pos_, 24)) + "'";
    }

    std::string_view text_;
    const std::string& what_;
    std::size_t pos_ = 0;
};

// ---- .npy reading -----------------------------------------------------------

struct NpyLayout {
    std::string_view header;  // the dict text
    std::size_t data_start;   // offset of the first element
};

NpyLayout npy_layout(std::string_view bytes, const std::string& what) {
    if (bytes.size() < 8 || bytes.substr(0, 6) != npy_magic) {
        throw Error(what +
                    ": not an .npy file"
                    " (it does not start with the \\x93NUMPY magic string)");
    }
    const int major = static_cast<unsigned char>(bytes[6]);
    const int minor = static_cast<unsigned char>(bytes[7]);
    if (major < 1 || major > 3 || minor != 0) {
        throw Error(what + ": unsupported .npy format version " + std::to_string(major) + "." +
                    std::to_string(minor) + "; expected 1.0, 2.0 or 3.0");
    }
    const std::size_t length_width = major == 1 ? 2 : 4;
    const std::string_view length = slice(bytes, 8, length_width, what + ": truncated .npy header");
    const std::uint64_t header_length = field(length, 0, length_width);
    const std::size_t header_start = 8 + length_width;
    const std::string_view header =
        slice(bytes, header_start, header_length,
              what + ": .npy header length " + std::to_string(header_length) +
                  " runs past the end of the file (" + std::to_string(bytes.size()) + " bytes)");
    return {header, header_start + header.size()};
}

std::size_t checked_element_count(const Shape& shape, const std::string& what) {
    std::size_t count = 1;
    for (const std::size_t dimension : shape) {
        if (dimension != 0 && count > std::numeric_limits<std::size_t>::max() / dimension) {
            throw Error(what + ": the element count of shape " + to_string(shape) +
                        " overflows 64 bits");
        }
        count *= dimension;
    }
    return count;
}

void check_data_size(const Array& array, std::size_t count, std::size_t available,
                     const std::string& what) {
    const std::string layout = "shape " + to_string(array.shape) + " of " + array.dtype_name();
    if (count > available / array.item_size) {
        throw Error(what + ": truncated: " + layout + " needs " + std::to_string(count) +
                    " elements of " + std::to_string(array.item_size) + " bytes but only " +
                    std::to_string(available) + " bytes of data follow the header");
    }
    if (count * array.item_size != available) {
        throw Error(what + ": " + std::to_string(available) +
                    " bytes of data follow the header but " + layout + " needs " +
                    std::to_string(count * array.item_size) + "; the file is corrupt");
    }
}

// The decoded values must fit in what the ledger has left (it holds the file being decoded):
// each element becomes a double here and a float in the tensor made from it, 12 bytes in all.
Array parse_npy_view(std::string_view bytes, const std::string& what, const Ledger& ledger) {
    const NpyLayout layout = npy_layout(bytes, what);
    const Header header = HeaderParser(layout.header, what).parse();
    const StoredDType stored = parse_dtype(header.descr, what);
    const DType& dtype = stored.dtype;
    Array array;
    array.shape = header.shape;
    array.kind = dtype.kind;
    array.item_size = dtype.item_size;
    const std::size_t count = checked_element_count(header.shape, what);
    check_data_size(array, count, bytes.size() - layout.data_start, what);
    if (count > ledger.left() / bytes_per_value) {
        ledger.refuse(what, "shape " + to_string(array.shape) + " needs " +
                                byte_size(std::uint64_t{count} * bytes_per_value) +
                                " once decoded");
    }
    const auto* data = reinterpret_cast<const unsigned char*>(bytes.data()) + layout.data_start;
    array.values.resize(count);
    if (header.fortran_order) {  // transposed on load, so values are C order like the rest
        decode_fortran_order(stored, data, header.shape, array.values);
        return array;
    }
    for (std::size_t i = 0; i < count; ++i) {
        array.values[i] = decode_item(stored, data + i * dtype.item_size);
    }
    return array;
}

// ---- .npz: a zip of .npy entries -----------------------------------------

using Arrays = std::vector<std::pair<std::string, Tensor>>;

bool ends_with(const std::string& text, std::string_view suffix) {
    return text.size() >= suffix.size() &&
           std::string_view(text).substr(text.size() - suffix.size()) == suffix;
}

// The array an .npz entry holds: the entry's name without ".npy", which it must end in.
std::string array_name(const zip::Entry& entry, const std::string& path) {
    if (!ends_with(entry.name, ".npy")) {
        throw Error(path + ": the entry '" + printable(entry.name) +
                    "' is not an .npy array; expected only the .npy entries"
                    " numpy.savez writes");
    }
    return entry.name.substr(0, entry.name.size() - 4);
}

// A torch.save file: what it is and the one line of Python that saves it as an .npz.
std::string torch_pickle(const std::string& path) {
    const std::size_t dot = path.rfind('.');
    const std::string stem = dot == std::string::npos || path.find('/', dot) != std::string::npos
                                 ? path
                                 : path.substr(0, dot);
    return path +
           ": a PyTorch pickle (torch.save), not an .npz; save it as one with: python3 -c "
           "\"import numpy, torch; numpy.savez('" +
           stem +
           ".npz', **{k: v.float().numpy() "
           "for k, v in torch.load('" +
           path + "').items()})\"";
}

// The archive's entries; a torch.save file, pickle or zip, is refused with the way to convert it.
std::vector<zip::Entry> npz_entries(const std::string& bytes, const std::string& path) {
    // torch.save writes a pickle: protocol 2+ opens with 0x80 and the protocol number
    if (bytes.size() >= 2 && bytes[0] == '\x80' && bytes[1] >= 2 && bytes[1] <= 5)
        throw Error(torch_pickle(path));
    const std::vector<zip::Entry> entries = zip::read_directory(bytes, path);
    for (const zip::Entry& entry : entries) {
        // torch.save's zip (PyTorch 1.6 and later): <name>/data.pkl beside the tensors
        if (ends_with(entry.name, "data.pkl")) throw Error(torch_pickle(path));
    }
    return entries;
}

// ---- writing ---------------------------------------------------------------

// descr: "<f4", "<f8", "<i4" or "<i8".
std::string npy_header(const Shape& shape, const std::string& descr) {
    std::string dict =
        "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + to_string(shape) + ", }";
    // magic, version, header length, the dict and its closing '\n'
    const std::size_t unpadded = npy_magic.size() + 2 + 2 + dict.size() + 1;
    dict.append((npy_alignment - unpadded % npy_alignment) % npy_alignment, ' ');
    dict += '\n';
    if (dict.size() > 0xFFFF) {
        throw Error("cannot write shape " + to_string(shape) +
                    " as .npy: its header exceeds 65535 bytes");
    }
    std::string header = npy_magic;
    header += '\x01';
    header += '\x00';
    append_le(header, dict.size(), 2);
    return header + dict;
}

void check_array_names(const std::string& path, const std::vector<std::string>& arrays) {
    if (arrays.size() >= 0xFFFF) {
        throw Error("cannot write " + path + ": more than 65534 arrays need zip64");
    }
    std::set<std::string> names;
    for (const std::string& name : arrays) {
        if (name.empty() || name.size() > 0xFFFF - 4) {
            throw Error("cannot write " + path + ": array names must have 1 to 65531 characters");
        }
        if (!names.insert(name).second) {
            throw Error("cannot write " + path + ": the array name '" + name + "' repeats");
        }
    }
}

// The zip entries numpy.savez would write: "<name>.npy" and the array's .npy bytes, the
// tensors first.
std::vector<std::pair<std::string, std::string>> npz_files(
    const Arrays& arrays, const std::vector<std::pair<std::string, Array>>& others) {
    std::vector<std::pair<std::string, std::string>> files;
    for (const auto& [name, tensor] : arrays)
        files.emplace_back(name + ".npy", to_npy_bytes(tensor));
    for (const auto& [name, array] : others) files.emplace_back(name + ".npy", to_npy_bytes(array));
    return files;
}

}  // namespace

std::string Array::dtype_name() const {
    const std::string bits = std::to_string(8 * item_size);
    switch (kind) {
        case 'b':
            return "bool";
        case 'i':
            return "int" + bits;
        case 'u':
            return "uint" + bits;
        default:
            return "float" + bits;
    }
}

Array parse_npy(const std::string& bytes, const std::string& what) {
    return parse_npy_view(bytes, what, Ledger());
}

Array read_npy(const std::string& path, const Ledger& ledger) {
    const std::string bytes = read_file(path, ledger);
    Ledger with_file = ledger;  // the file's bytes stay while its values are decoded
    with_file.hold(bytes.size());
    return parse_npy_view(bytes, path, with_file);
}

std::uint64_t npz_value_count(const std::string& bytes, const std::string& path) {
    std::uint64_t count = 0;
    for (const zip::Entry& entry : npz_entries(bytes, path)) {
        const std::string label = path + ": " + printable(array_name(entry, path));
        const std::string_view data = zip::stored_data(bytes, entry, label);
        const Shape shape = HeaderParser(npy_layout(data, label).header, label).parse().shape;
        count = checked_sum({count, checked_element_count(shape, label)}, "the values of " + path);
    }
    return count;
}

std::map<std::string, Array> parse_npz(const std::string& bytes, const std::string& path,
                                       const Ledger& ledger) {
    ledger.check(bytes.size(), path, "the file needs " + byte_size(bytes.size()));
    const std::vector<zip::Entry> entries = npz_entries(bytes, path);
    Ledger held = ledger;  // the file's bytes, then each array decoded so far
    held.hold(bytes.size());
    std::map<std::string, Array> arrays;
    for (const zip::Entry& entry : entries) {
        const std::string name = array_name(entry, path);
        const std::string label = path + ": " + printable(name);
        if (arrays.count(name)) {
            throw Error(label + ": the entry name appears twice; the file is corrupt");
        }
        const Array& array =
            arrays.emplace(name, parse_npy_view(zip::stored_data(bytes, entry, label), label, held))
                .first->second;
        held.hold(array.values.size() * bytes_per_value);
    }
    return arrays;
}

std::map<std::string, Array> read_npz(const std::string& path, const Ledger& ledger) {
    return parse_npz(read_file(path, ledger), path, ledger);
}

Tensor to_tensor(const Array& array) {
    return Tensor(array.shape, std::vector<float>(array.values.begin(), array.values.end()));
}

std::string to_npy_bytes(const Tensor& tensor) {
    if (tensor.empty()) throw Error("cannot write a tensor without storage as .npy");
    std::string bytes = npy_header(tensor.shape(), "<f4");
    bytes.reserve(bytes.size() + 4 * tensor.numel());
    for (const float value : tensor.to_vector())
        append_le(bytes, bit_cast<std::uint32_t>(value), 4);
    return bytes;
}

std::string to_npy_bytes(const Array& array) {
    const bool wide_float = array.kind == 'f' && array.item_size == 8;
    const bool integer = array.kind == 'i' && (array.item_size == 4 || array.item_size == 8);
    if ((!wide_float && !integer) || element_count(array.shape) != array.values.size()) {
        throw Error("cannot write a " + array.dtype_name() + " array of shape " +
                    to_string(array.shape) + " with " + std::to_string(array.values.size()) +
                    " values as .npy");
    }
    std::string bytes =
        npy_header(array.shape, std::string("<") + array.kind + std::to_string(array.item_size));
    for (const double value : array.values) {  // a double's bits, or an integer in two's complement
        append_le(bytes,
                  wide_float ? bit_cast<std::uint64_t>(value) : std::uint64_t(std::int64_t(value)),
                  array.item_size);
    }
    return bytes;
}

void write_npz(const std::string& path, const Arrays& arrays) { write_npz(path, arrays, {}); }

void write_npz(const std::string& path, const Arrays& arrays,
               const std::vector<std::pair<std::string, Array>>& others) {
    std::vector<std::string> names;
    for (const auto& each : arrays) names.push_back(each.first);
    for (const auto& each : others) names.push_back(each.first);
    check_array_names(path, names);
    AtomicFile file(path);
    const std::string archive = zip::stored_archive(npz_files(arrays, others), path);
    file.stream().write(archive.data(), std::streamsize(archive.size()));
    file.commit();
}

}  // namespace mha::npy
