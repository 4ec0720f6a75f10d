// Tests for io/npy: numpy-written fixtures, hand-made headers, corrupted bytes, and write round
// trips. Fixtures come from tests/data/npy/make_npy_fixtures.py; their values are quarters or small
// integers, exact in float32 and float64, so values compare exactly.

#include "io/npy.h"

#include "core/error.h"
#include "helpers.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace test_npy {

using Catch::Contains;
using mha::Shape;
using mha::Tensor;
namespace npy = mha::npy;
namespace fs = std::filesystem;

namespace {

const std::string fixtures = "data/npy/";

std::string read_bytes(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    REQUIRE(file);
    return std::string(std::istreambuf_iterator<char>(file), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream file(path, std::ios::binary);
    file << bytes;
    REQUIRE(file);
}

// A fresh, empty directory for files a test writes, unique to this process so runs can overlap.
fs::path scratch_dir() {
    const fs::path dir = test::temp_path("npy");
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

// The names in `dir`, sorted: what a write left behind.
std::vector<std::string> files_in(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) {
        names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::uint32_t load_u32(const std::string& bytes, std::size_t at) {
    std::uint32_t value = 0;
    for (std::size_t i = 4; i-- > 0;) {
        value = (value << 8) | static_cast<unsigned char>(bytes.at(at + i));
    }
    return value;
}

// Offset of the central directory of a zip without an archive comment.
std::size_t central_directory_offset(const std::string& zip) {
    return load_u32(zip, zip.size() - 22 + 16);
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    for (std::size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
    return text;
}

// A version 1.0 .npy file with the given header dict text (not padded) and raw data bytes.
std::string npy_with_header(const std::string& dict, const std::string& data) {
    std::string bytes("\x93NUMPY\x01\x00", 8);
    bytes += static_cast<char>(dict.size() & 0xFF);
    bytes += static_cast<char>(dict.size() >> 8);
    return bytes + dict + data;
}

}  // namespace

TEST_CASE("read_npy reads the arrays numpy.save writes", "[npy]") {
    SECTION("float32, 2-D") {
        const npy::Array array = npy::read_npy(fixtures + "float32.npy");
        CHECK(array.shape == Shape{2, 3});
        CHECK(array.dtype_name() == "float32");
        CHECK(array.values == std::vector<double>{0, 0.25, 0.5, 0.75, 1, 1.25});
    }
    SECTION("float64, 1-D") {
        const npy::Array array = npy::read_npy(fixtures + "float64_1d.npy");
        CHECK(array.shape == Shape{5});
        CHECK(array.dtype_name() == "float64");
        CHECK(array.values == std::vector<double>{-0.5, -0.25, 0, 0.25, 0.5});
    }
    SECTION("float32, 3-D") {
        const npy::Array array = npy::read_npy(fixtures + "float32_3d.npy");
        CHECK(array.shape == Shape{2, 3, 4});
        REQUIRE(array.values.size() == 24);
        for (std::size_t i = 0; i < 24; ++i) {
            INFO("element " << i);
            CHECK(array.values[i] == -3 + 0.25 * static_cast<double>(i));
        }
    }
    SECTION("a 0-d array is a scalar with an empty shape") {
        const npy::Array array = npy::read_npy(fixtures + "scalar.npy");
        CHECK(array.shape.empty());
        CHECK(array.values == std::vector<double>{2.5});
    }
    SECTION("bool causal mask") {
        const npy::Array array = npy::read_npy(fixtures + "bool_mask.npy");
        CHECK(array.shape == Shape{3, 3});
        CHECK(array.dtype_name() == "bool");
        CHECK(array.values == std::vector<double>{1, 0, 0, 1, 1, 0, 1, 1, 1});
    }
    SECTION("uint8 mask") {
        const npy::Array array = npy::read_npy(fixtures + "uint8_mask.npy");
        CHECK(array.shape == Shape{2, 3});
        CHECK(array.dtype_name() == "uint8");
        CHECK(array.values == std::vector<double>{1, 0, 0, 1, 1, 0});
    }
    SECTION("int64") {
        const npy::Array array = npy::read_npy(fixtures + "int64.npy");
        CHECK(array.dtype_name() == "int64");
        CHECK(array.values == std::vector<double>{-3, 0, 7, 1099511627776.0});  // 2**40
    }
    SECTION("int32") {
        const npy::Array array = npy::read_npy(fixtures + "int32.npy");
        CHECK(array.shape == Shape{2, 2});
        CHECK(array.dtype_name() == "int32");
        CHECK(array.values == std::vector<double>{-2, -1, 0, 1});
    }
    SECTION("format versions 2.0 and 3.0") {
        for (const char* name : {"version2.npy", "version3.npy"}) {
            INFO(name);
            CHECK(npy::read_npy(fixtures + name).values == std::vector<double>{0, 0.25, 0.5});
        }
    }
}

TEST_CASE("read_npy reads Fortran order and big-endian files as numpy.load does", "[npy]") {
    SECTION("Fortran order: the values come back in C order") {
        // np.asfortranarray(arange(6).reshape(2, 3) / 4) stores 0, .75, .25, 1, .5, 1.25
        const npy::Array array = npy::read_npy(fixtures + "fortran.npy");
        CHECK(array.shape == Shape{2, 3});
        CHECK(array.values == std::vector<double>{0, 0.25, 0.5, 0.75, 1, 1.25});
    }
    SECTION("Fortran order in three dimensions equals the C-order file") {
        const npy::Array fortran = npy::read_npy("data/bad/fortran.npy");
        const npy::Array c_order = npy::read_npy("data/bad/x.npy");
        CHECK(fortran.shape == c_order.shape);
        CHECK(fortran.values == c_order.values);
    }
    SECTION("big-endian float32") {
        const npy::Array array = npy::read_npy(fixtures + "big_endian.npy");
        CHECK(array.dtype_name() == "float32");
        CHECK(array.values == std::vector<double>{0, 0.25, 0.5, 0.75});
    }
    SECTION("big-endian float32 in three dimensions equals the little-endian file") {
        CHECK(npy::read_npy("data/bad/big_endian.npy").values ==
              npy::read_npy("data/bad/x.npy").values);
    }
    SECTION("big-endian integers, crafted: 0x0102 = 258 and -2") {
        const npy::Array array =
            npy::parse_npy(npy_with_header("{'descr': '>i2', 'fortran_order': True, 'shape': (2,)}",
                                           std::string("\x01\x02\xff\xfe", 4)),
                           "crafted.npy");
        CHECK(array.values == std::vector<double>{258, -2});
    }
}

TEST_CASE("read_npy explains the files it cannot read", "[npy]") {
    SECTION("float16") {
        REQUIRE_THROWS_WITH(npy::read_npy(fixtures + "float16.npy"),
                            Contains("float16.npy: unsupported dtype '<f2'"));
    }
    SECTION("a missing file") {
        REQUIRE_THROWS_WITH(npy::read_npy(fixtures + "missing.npy"),
                            "cannot read data/npy/missing.npy: No such file or directory");
    }
    SECTION("a directory") {
        REQUIRE_THROWS_WITH(npy::read_npy("data/npy"), "cannot read data/npy: Is a directory");
    }
}

TEST_CASE("the .npy header is read like Python reads the dict", "[npy]") {
    const std::string dict =
        GENERATE(as<std::string>{}, "{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }",
                 "{'shape': (2,), 'descr': '|u1', 'fortran_order': False}",
                 "{ \"fortran_order\" :False,'shape':( 2 , ),\"descr\":'<u1' , }  \n",
                 "{'descr':'=u1','fortran_order':False,'shape':(2L,)}",
                 "\t{'descr': '>u1', 'fortran_order': False, 'shape': (2,),}");
    INFO(dict);
    const npy::Array array = npy::parse_npy(npy_with_header(dict, "\x07\xff"), "crafted.npy");
    CHECK(array.shape == Shape{2});
    CHECK(array.values == std::vector<double>{7, 255});
}

TEST_CASE("parse_npy names the source and the problem in every error", "[npy]") {
    struct Case {
        std::string dict;
        std::string data;
        std::string message;
    };
    const Case bad = GENERATE(values<Case>({
        {"{'descr': '<f4', 'shape': (1,)}", "abcd",
         "crafted.npy: .npy header has no 'fortran_order' key"},
        {"{'descr': '<f4', 'fortran_order': False}", "",
         "crafted.npy: .npy header has no 'shape' key"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", "abcd",
         "unexpected key 'x'"},
        {"{'descr': '<f4', 'descr': '<f4'}", "", "repeats the key 'descr'"},
        {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,)}", "abcd",
         "crafted.npy: malformed .npy header: expected True or False at 'Maybe, 'shape': (1,)}'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", "abcd",
         "expected ',' or '}' at the end"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", "",
         "expected a non-negative dimension"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", "abcd",
         "expected the end of the header"},
        {"{'descr: '<f4'}", "", "malformed .npy header"},
        {"['descr', '<f4']", "", "expected '{'"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}", "abcd",
         "structured dtypes"},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (1,)}", "abcdefgh",
         "unsupported dtype '<c8'"},
        {"{'descr': '|O', 'fortran_order': False, 'shape': (1,)}", "abcdefgh",
         "unsupported dtype '|O'"},
        {"{'descr': '<U3', 'fortran_order': False, 'shape': (1,)}", "abcdefghijkl",
         "unsupported dtype '<U3'"},
        {"{'descr': '|f4', 'fortran_order': False, 'shape': (1,)}", "abcd",
         "unsupported dtype '|f4'"},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (99999999999999999999,)}", "",
         "crafted.npy: a dimension in the .npy shape overflows 64 bits"},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (4294967296, 4294967296, 2)}", "",
         "crafted.npy: the element count of shape (4294967296, 4294967296, 2) overflows 64 bits"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,)}", "12345678",
         "crafted.npy: truncated: shape (1099511627776,) of float64 needs 1099511627776"
         " elements of 8 bytes but only 8 bytes of data follow the header"},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (1,)}", "ab",
         "crafted.npy: 2 bytes of data follow the header but shape (1,) of uint8 needs 1;"
         " the file is corrupt"},
    }));
    INFO(bad.dict);
    REQUIRE_THROWS_WITH(npy::parse_npy(npy_with_header(bad.dict, bad.data), "crafted.npy"),
                        Contains(bad.message));
}

TEST_CASE("parse_npy rejects damaged bytes without reading past them", "[npy]") {
    const std::string valid = read_bytes(fixtures + "float32.npy");
    SECTION("truncated data") {
        REQUIRE_THROWS_WITH(
            npy::parse_npy(valid.substr(0, valid.size() - 1), "cut.npy"),
            Contains("cut.npy: truncated: shape (2, 3) of float32 needs 6 elements of 4 bytes") &&
                Contains("only 23 bytes"));
    }
    SECTION("header length past the end of the file") {
        std::string damaged = valid;
        damaged[8] = damaged[9] = '\xff';
        REQUIRE_THROWS_WITH(
            npy::parse_npy(damaged, "long.npy"),
            "long.npy: .npy header length 65535 runs past the end of the file (152 bytes)");
    }
    SECTION("cut inside the header length") {
        REQUIRE_THROWS_WITH(npy::parse_npy(valid.substr(0, 9), "cut.npy"),
                            "cut.npy: truncated .npy header");
    }
    SECTION("not an .npy file") {
        REQUIRE_THROWS_WITH(npy::parse_npy("hello, world", "hello.txt"),
                            Contains("hello.txt: not an .npy file"));
        REQUIRE_THROWS_WITH(npy::parse_npy("", "empty.npy"),
                            Contains("empty.npy: not an .npy file"));
    }
    SECTION("an unknown format version") {
        std::string damaged = valid;
        damaged[6] = '\x04';
        REQUIRE_THROWS_WITH(
            npy::parse_npy(damaged, "v4.npy"),
            "v4.npy: unsupported .npy format version 4.0; expected 1.0, 2.0 or 3.0");
    }
}

TEST_CASE("read_npz reads what numpy.savez writes", "[npy][npz]") {
    SECTION("several arrays, names without .npy") {
        const auto arrays = npy::read_npz(fixtures + "savez.npz");
        REQUIRE(arrays.size() == 3);
        CHECK(arrays.at("x").shape == Shape{2, 3});
        CHECK(arrays.at("x").values == std::vector<double>{0, 0.25, 0.5, 0.75, 1, 1.25});
        CHECK(arrays.at("W_q.weight").dtype_name() == "float64");
        CHECK(arrays.at("W_q.weight").values == std::vector<double>{-1, -0.75, -0.5, -0.25});
        CHECK(arrays.at("mask").dtype_name() == "bool");
        CHECK(arrays.at("mask").values == std::vector<double>{1, 0, 1, 1});
    }
    SECTION("every integer dtype at its limits") {
        const auto arrays = npy::read_npz(fixtures + "integers.npz");
        const std::map<std::string, std::vector<double>> expected = {
            {"i1", {-128, 127}},
            {"u1", {0, 255}},
            {"i2", {-32768, 32767}},
            {"u2", {0, 65535}},
            {"i4", {-2147483648.0, 2147483647.0}},
            {"u4", {0, 4294967295.0}},
            {"i8", {-9223372036854775808.0, 4611686018427387904.0}},  // -2**63, 2**62
            {"u8", {0, 9223372036854775808.0}},                       // 2**63
        };
        REQUIRE(arrays.size() == expected.size());
        for (const auto& [name, values] : expected) {
            INFO(name);
            CHECK(arrays.at(name).values == values);
            CHECK(arrays.at(name).dtype_name() ==
                  (name[0] == 'i' ? "int" : "uint") + std::to_string(8 * (name[1] - '0')));
        }
    }
    SECTION("zip64 records everywhere and an archive comment") {
        const auto arrays = npy::read_npz(fixtures + "zip64.npz");
        REQUIRE(arrays.size() == 2);
        CHECK(arrays.at("a").values == std::vector<double>{0, 0.25});
        CHECK(arrays.at("b").shape == Shape{1, 3});
        CHECK(arrays.at("b").values == std::vector<double>{1, 1.25, 1.5});
    }
}

TEST_CASE("read_npz explains the files it cannot read", "[npy][npz]") {
    const fs::path dir = scratch_dir();
    const std::string valid = read_bytes(fixtures + "savez.npz");
    const std::string damaged_path = (dir / "damaged.npz").string();
    SECTION("savez_compressed") {
        REQUIRE_THROWS_WITH(npy::read_npz(fixtures + "savez_compressed.npz"),
                            Contains("data/npy/savez_compressed.npz: ") &&
                                Contains("the file is compressed") &&
                                Contains("numpy.savez (not numpy.savez_compressed)"));
    }
    SECTION("a flipped byte in a stored CRC-32") {
        std::string damaged = valid;
        damaged[central_directory_offset(valid) + 16] ^= 0x01;
        write_bytes(damaged_path, damaged);
        REQUIRE_THROWS_WITH(npy::read_npz(damaged_path),
                            Contains(damaged_path + ": x: corrupt file: CRC-32 mismatch"));
    }
    SECTION("a flipped data byte") {
        std::string damaged = valid;
        const std::size_t name_length = static_cast<unsigned char>(valid[26]);
        const std::size_t extra_length = static_cast<unsigned char>(valid[28]);
        // a space in the padding of the first entry's .npy header
        damaged[30 + name_length + extra_length + 100] ^= 0x10;
        write_bytes(damaged_path, damaged);
        REQUIRE_THROWS_WITH(npy::read_npz(damaged_path), Contains("corrupt file: CRC-32 mismatch"));
    }
    SECTION("a central directory shorter than its entry count") {
        std::string damaged = valid;
        damaged[damaged.size() - 22 + 8] += 1;   // entries on this disk
        damaged[damaged.size() - 22 + 10] += 1;  // entries in total
        write_bytes(damaged_path, damaged);
        REQUIRE_THROWS_WITH(npy::read_npz(damaged_path),
                            damaged_path + ": truncated central directory");
    }
    SECTION("a central directory past the end of the file") {
        write_bytes(damaged_path, valid.substr(0, central_directory_offset(valid) + 10) +
                                      valid.substr(valid.size() - 22));
        REQUIRE_THROWS_WITH(
            npy::read_npz(damaged_path),
            Contains(damaged_path + ": truncated central directory: it should span"));
    }
    SECTION("a truncated file") {
        write_bytes(damaged_path, valid.substr(0, valid.size() / 2));
        REQUIRE_THROWS_WITH(
            npy::read_npz(damaged_path),
            Contains(damaged_path + ": not an .npz file (no zip end of central directory record)"));
    }
    SECTION("an .npy file") {
        REQUIRE_THROWS_WITH(npy::read_npz(fixtures + "float32.npy"), Contains("not an .npz file"));
    }
    SECTION("an entry that is not .npy") {
        const std::string path = (dir / "a.npz").string();
        npy::write_npz(path, {{"a", Tensor(Shape{1})}});
        write_bytes(damaged_path, replace_all(read_bytes(path), "a.npy", "a.txt"));
        REQUIRE_THROWS_WITH(npy::read_npz(damaged_path),
                            Contains(damaged_path + ": the entry 'a.txt' is not an .npy array"));
    }
    SECTION("a name that appears twice") {
        const std::string path = (dir / "ab.npz").string();
        npy::write_npz(path, {{"a", Tensor(Shape{1})}, {"b", Tensor(Shape{1})}});
        write_bytes(damaged_path, replace_all(read_bytes(path), "b.npy", "a.npy"));
        REQUIRE_THROWS_WITH(
            npy::read_npz(damaged_path),
            damaged_path + ": a: the entry name appears twice; the file is corrupt");
    }
    SECTION("a missing file") {
        REQUIRE_THROWS_WITH(npy::read_npz(fixtures + "missing.npz"),
                            "cannot read data/npy/missing.npz: No such file or directory");
    }
    fs::remove_all(dir);
}

TEST_CASE("to_tensor gives a float32 tensor of the same shape", "[npy]") {
    SECTION("integers") {
        const Tensor tensor = npy::to_tensor(npy::read_npy(fixtures + "int32.npy"));
        CHECK(tensor.shape() == Shape{2, 2});
        CHECK(tensor.to_vector() == std::vector<float>{-2, -1, 0, 1});
    }
    SECTION("a scalar") {
        const Tensor tensor = npy::to_tensor(npy::read_npy(fixtures + "scalar.npy"));
        CHECK(tensor.shape().empty());
        CHECK(tensor.to_vector() == std::vector<float>{2.5f});
    }
}

TEST_CASE("to_npy_bytes writes what numpy writes", "[npy][write]") {
    SECTION("the same bytes as numpy.save for float32 (2, 3)") {
        // numpy 1.24 adds spaces for growing the first axis; both pad to 64 bytes with one '\n'.
        const std::string ours =
            npy::to_npy_bytes(Tensor(Shape{2, 3}, {0, 0.25f, 0.5f, 0.75f, 1, 1.25f}));
        const std::string numpys = read_bytes(fixtures + "float32.npy");
        REQUIRE(ours.size() == numpys.size());
        // magic, version, header length and the 62-byte dict
        CHECK(ours.substr(0, 72) == numpys.substr(0, 72));
        CHECK(ours.substr(127) == numpys.substr(127));  // '\n' and the data
    }
    SECTION("headers end in '\\n' on a 64-byte boundary") {
        const Shape shape = GENERATE(Shape{}, Shape{5}, Shape{2, 8, 256},
                                     Shape{1, 2, 1, 3, 1, 4, 1, 5, 1, 6, 1, 7});
        const std::string bytes = npy::to_npy_bytes(Tensor(shape));
        const std::size_t data_start = bytes.size() - 4 * mha::element_count(shape);
        CHECK(data_start % 64 == 0);
        CHECK(bytes[data_start - 1] == '\n');
        CHECK(npy::parse_npy(bytes, "ours.npy").shape == shape);
    }
    SECTION("a transposed tensor is written in C order") {
        const Tensor tensor = Tensor(Shape{2, 3}, {0, 1, 2, 3, 4, 5}).transpose(0, 1);
        const npy::Array array = npy::parse_npy(npy::to_npy_bytes(tensor), "t.npy");
        CHECK(array.shape == Shape{3, 2});
        CHECK(array.values == std::vector<double>{0, 3, 1, 4, 2, 5});
    }
}

TEST_CASE("write_npz round-trips through read_npz", "[npy][npz][write]") {
    const fs::path dir = scratch_dir();
    const std::string path = (dir / "out.npz").string();
    const std::vector<std::pair<std::string, Tensor>> arrays = {
        {"W_q.weight", Tensor(Shape{2, 3}, {-1, -0.75f, -0.5f, 0.25f, 1e-8f, 3.0e38f})},
        {"scalar", Tensor(Shape{}, {2.5f})},
        {"empty", Tensor(Shape{0, 4})},
        {"x", Tensor(Shape{2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}).transpose(0, 2)},
    };
    write_bytes(path, "an older file that write_npz replaces");
    npy::write_npz(path, arrays);
    CHECK(files_in(dir) == std::vector<std::string>{"out.npz"});
    const auto read = npy::read_npz(path);
    REQUIRE(read.size() == arrays.size());
    for (const auto& [name, tensor] : arrays) {
        INFO(name);
        const Tensor back = npy::to_tensor(read.at(name));
        CHECK(read.at(name).dtype_name() == "float32");
        CHECK(back.shape() == tensor.shape());
        CHECK(back.to_vector() == tensor.to_vector());
    }
    fs::remove_all(dir);
}

TEST_CASE("write_npz reports failures and leaves no partial file", "[npy][npz][write]") {
    const fs::path dir = scratch_dir();
    SECTION("a missing directory") {
        const std::string path = (dir / "missing" / "out.npz").string();
        REQUIRE_THROWS_WITH(npy::write_npz(path, {{"x", Tensor(Shape{1})}}),
                            "cannot write " + path + ": No such file or directory");
    }
    SECTION("a directory in the way") {
        const std::string path = (dir / "taken").string();
        fs::create_directory(path);
        REQUIRE_THROWS_WITH(npy::write_npz(path, {{"x", Tensor(Shape{1})}}),
                            "cannot write " + path + ": it is a directory; give a file name");
        CHECK(files_in(dir) == std::vector<std::string>{"taken"});
    }
    SECTION("a name given twice") {
        const std::string path = (dir / "twice.npz").string();
        REQUIRE_THROWS_WITH(
            npy::write_npz(path, {{"x", Tensor(Shape{1})}, {"x", Tensor(Shape{1})}}),
            "cannot write " + path + ": the array name 'x' repeats");
        CHECK(files_in(dir).empty());
    }
    fs::remove_all(dir);
}

}  // namespace test_npy
