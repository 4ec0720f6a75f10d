// The safetensors reader: headers checked byte by byte, folders (single file, index and shards,
// the HF cache's symlinks), reads by offset within the ledger, and the widening of F16, BF16
// and F64 checked bit for bit against torch's .float() (tests/data/safetensors).

#include "io/safetensors.h"

#include "core/error.h"
#include "io/bytes.h"
#include "io/npy.h"
#include "io/read_file.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "helpers.h"

namespace test_safetensors {

using namespace mha;
using namespace mha::safetensors;
namespace fs = std::filesystem;

namespace {

// ---- a tiny safetensors writer --------------------------------------------------------

struct Raw {
    std::string name, dtype;
    Shape shape;
    std::string data;  // little-endian element bytes
};

std::string le64(std::uint64_t n) {
    std::string out;
    bytes::append_le(out, n, 8);
    return out;
}

// The 8 length bytes, the header as given, then the data.
std::string with_header(const std::string& header, const std::string& data = "") {
    return le64(header.size()) + header + data;
}

std::string shape_json(const Shape& shape) {
    std::string out = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
    return out + "]";
}

// A well-formed file: the tensors' data one after another, in the given order.
std::string safetensors_file(const std::vector<Raw>& tensors) {
    std::string header = "{\"__metadata__\":{\"format\":\"pt\"}", data;
    for (const Raw& t : tensors) {
        header += ",\"" + t.name + "\":{\"dtype\":\"" + t.dtype +
                  "\",\"shape\":" + shape_json(t.shape) + ",\"data_offsets\":[" +
                  std::to_string(data.size()) + "," + std::to_string(data.size() + t.data.size()) +
                  "]}";
        data += t.data;
    }
    return with_header(header + "}", data);
}

// The values' little-endian bytes, each read as the unsigned integer Bits of its size.
template <class Bits, class Value>
std::string le_bytes(const std::vector<Value>& values) {
    static_assert(sizeof(Bits) == sizeof(Value));
    std::string out;
    for (Value v : values) {
        Bits bits;
        std::memcpy(&bits, &v, sizeof bits);
        bytes::append_le(out, bits, sizeof bits);
    }
    return out;
}

std::string f32_bytes(const std::vector<float>& values) { return le_bytes<std::uint32_t>(values); }
std::string f64_bytes(const std::vector<double>& values) { return le_bytes<std::uint64_t>(values); }
std::string u16_bytes(const std::vector<std::uint16_t>& values) {
    return le_bytes<std::uint16_t>(values);
}

std::uint32_t bits_of(float v) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return bits;
}

void write(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
}

// The folders the tests made, removed when the test process ends.
struct MadeFolders {
    std::vector<std::string> paths;
    ~MadeFolders() {
        for (const std::string& path : paths) fs::remove_all(path);
    }
};

// An empty folder of its own for one test.
std::string folder(const std::string& name) {
    static MadeFolders made;
    const std::string dir = test::temp_path("st-" + name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    made.paths.push_back(dir);
    return dir;
}

std::vector<Entry> parse(const std::string& bytes) {
    return parse_header(bytes, bytes.size(), "t.safetensors", Ledger());
}

// A header of one F32 tensor "x" with these offsets over `data_size` bytes of data.
std::string one_tensor(const std::string& shape, const std::string& offsets,
                       std::size_t data_size) {
    return with_header(
        "{\"x\":{\"dtype\":\"F32\",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}}",
        std::string(data_size, '\0'));
}

}  // namespace

// ---- widening ---------------------------------------------------------------------------

TEST_CASE("safetensors: F16 and BF16 widen exactly, subnormals, infinities and NaN included",
          "[safetensors]") {
    CHECK(f16_to_f32(0x3C00) == 1.0f);
    CHECK(f16_to_f32(0x7BFF) == 65504.0f);
    CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24));  // the smallest subnormal
    CHECK(f16_to_f32(0x03FF) == std::ldexp(1023.0f, -24));
    CHECK(f16_to_f32(0x0400) == std::ldexp(1.0f, -14));  // the smallest normal
    CHECK(bits_of(f16_to_f32(0x8000)) == 0x80000000u);   // -0
    CHECK(f16_to_f32(0x7C00) == INFINITY);
    CHECK(f16_to_f32(0xFC00) == -INFINITY);
    CHECK(bits_of(f16_to_f32(0x7E00)) == 0x7FC00000u);  // quiet NaN
    CHECK(bits_of(f16_to_f32(0x7D00)) == 0x7FE00000u);  // signalling NaN made quiet, as torch
    CHECK(bits_of(f16_to_f32(0xFE01)) == 0xFFC02000u);  // sign and payload kept
    CHECK(bf16_to_f32(0x3F80) == 1.0f);
    CHECK(bits_of(bf16_to_f32(0x0001)) == 0x00010000u);  // a float32 subnormal
    CHECK(bits_of(bf16_to_f32(0x7F81)) == 0x7F810000u);  // signalling NaN kept, as torch
    CHECK(bf16_to_f32(0xFF80) == -INFINITY);
}

TEST_CASE("safetensors: F64 rounds to nearest even; a finite value beyond float32 is refused",
          "[safetensors]") {
    const std::string bytes =
        f64_bytes({0.1, 1.0000000596046448, 3.40282356e38, 1e-46, INFINITY, 3.5e38});
    float out[6];
    widen(DType::F64, bytes.data(), 5, out, "w", 0);
    CHECK(out[0] == 0.1f);
    CHECK(out[1] == 1.0f);  // halfway between 1 and the next float: to even
    CHECK(out[2] == 3.4028234663852886e38f);
    CHECK(bits_of(out[3]) == 0u);
    CHECK(out[4] == INFINITY);  // infinity stays infinity
    REQUIRE_THROWS_WITH(widen(DType::F64, bytes.data(), 6, out, "f.safetensors: tensor w", 10),
                        "f.safetensors: tensor w: element 15 is 3.5e+38, beyond "
                        "float32's range (largest 3.4028235e+38); mha computes in float32");
}

TEST_CASE("safetensors: a file written by torch widens as torch's .float() does, bit for bit",
          "[safetensors]") {
    const std::string dir = folder("torch");
    fs::copy_file("data/safetensors/widen.safetensors", dir + "/model.safetensors");
    const Folder model = Folder::open(dir, Ledger());
    CHECK(model.names() ==
          std::vector<std::string>{"bf16", "f16", "f32", "f64", "rows.bf16", "rows.f16", "scalar"});
    for (const std::string& name : model.names()) {
        INFO(name);
        const npy::Array expected = npy::read_npy("data/safetensors/expected_" + name + ".npy");
        const Tensor got = model.read(name, Ledger());
        CHECK(got.shape() == expected.shape);
        // the .npy's float32 bits, read as bytes (a double would quiet a signalling NaN)
        const std::string file = read_file("data/safetensors/expected_" + name + ".npy", Ledger());
        const std::size_t n = got.numel();
        REQUIRE(file.size() >= 4 * n);
        const std::string data = file.substr(file.size() - 4 * n);
        std::vector<float> want(n);
        widen(DType::F32, data.data(), n, want.data(), name, 0);
        CHECK(test::same_bits(got.to_vector(), want));
    }
    CHECK(model.entry("scalar").shape.empty());
    CHECK(model.entry("f16").dtype == DType::F16);
}

// ---- headers ----------------------------------------------------------------------------

TEST_CASE("safetensors: a header's entries hold absolute byte ranges; metadata is ignored",
          "[safetensors]") {
    const std::string bytes = safetensors_file({{"b", "F16", {2}, u16_bytes({1, 2})},
                                                {"a", "F32", {1, 2}, f32_bytes({1, 2})},
                                                {"empty", "BF16", {0, 3}, ""},
                                                {"s", "F64", {}, f64_bytes({1})}});
    const std::vector<Entry> entries = parse(bytes);
    REQUIRE(entries.size() == 4);
    const std::uint64_t data_start = bytes.size() - 4 - 8 - 8;
    CHECK(entries[0].name == "b");  // in data order
    CHECK(entries[0].begin == data_start);
    CHECK(entries[0].end == data_start + 4);
    CHECK(entries[1].name == "a");
    CHECK(entries[1].shape == Shape{1, 2});
    CHECK(entries[2].name == "empty");  // zero bytes, at the end of a's
    CHECK(entries[2].begin == entries[2].end);
    CHECK(entries[3].dtype == DType::F64);
    CHECK(entries[3].end == bytes.size());
    CHECK(entries[3].file == "t.safetensors");
    CHECK(parse(with_header("{}        ")).empty());  // padded with spaces, no tensor
}

TEST_CASE("safetensors: a truncated file or an oversized header is refused with byte counts",
          "[safetensors]") {
    REQUIRE_THROWS_WITH(parse(std::string("\x10\0\0", 3)),
                        "t.safetensors: truncated: 3 bytes, fewer than the 8 of a safetensors "
                        "header's length");
    REQUIRE_THROWS_WITH(parse(le64(100000001) + "{}"),
                        "t.safetensors: byte 0: the header's length is 100000001 bytes, over the "
                        "100000000 (100 MB) a safetensors header may have");
    REQUIRE_THROWS_WITH(parse(le64(40) + "{\"x\":"),
                        "t.safetensors: truncated: byte 0 gives the header's length as 40 bytes, "
                        "but only 5 follow");
    REQUIRE_THROWS_WITH(parse(one_tensor("[2]", "[0,8]", 6)),
                        "t.safetensors: \"x.data_offsets\" at byte 55: truncated: [0, 8) runs "
                        "past the 6 bytes of data that follow the header");
}

TEST_CASE("safetensors: a header that is not JSON or not an object of tensors is refused",
          "[safetensors]") {
    REQUIRE_THROWS_WITH(parse(with_header("{\"x\" 1}")),
                        "t.safetensors: byte 13: expected ':', found '1'");
    REQUIRE_THROWS_WITH(parse(with_header("[]")),
                        "t.safetensors: byte 8: expected an object, found an array");
    REQUIRE_THROWS_WITH(parse(with_header("{\"__metadata__\":{\"n\":1}}")),
                        "t.safetensors: \"__metadata__.n\" at byte 29: expected a string, found "
                        "a number");
    REQUIRE_THROWS_WITH(parse(with_header("{\"x\":[]}")),
                        "t.safetensors: \"x\" at byte 13: expected an object, found an array");
    REQUIRE_THROWS_WITH(parse(with_header("{\"x\":{\"dtype\":\"F32\",\"shape\":[]}}")),
                        "t.safetensors: \"x\" at byte 13: the tensor has no \"data_offsets\"");
    REQUIRE_THROWS_WITH(
        parse(with_header("{\"x\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4],"
                          "\"stride\":[1]}}",
                          "\0\0\0\0")),
        "t.safetensors: \"x.stride\" at byte 69: not a key of a tensor's entry (dtype, shape, "
        "data_offsets)");
    REQUIRE_THROWS_WITH(parse(with_header("{\"x\":{},\"x\":{}}")),
                        "t.safetensors: byte 16: the key \"x\" appears twice");
}

TEST_CASE("safetensors: dtypes other than F32, F16, BF16 and F64 are refused by name",
          "[safetensors]") {
    for (const char* dtype : {"I8", "U8", "I32", "I64", "BOOL", "F8_E4M3", "F8_E5M2"}) {
        INFO(dtype);
        REQUIRE_THROWS_WITH(parse(with_header(std::string("{\"x\":{\"dtype\":\"") + dtype +
                                                  "\",\"shape\":[1],\"data_offsets\":[0,1]}}",
                                              "\0")),
                            std::string("t.safetensors: \"x.dtype\" at byte 22: dtype ") + dtype +
                                " is not read; mha reads F32, F16, BF16 and F64");
    }
}

TEST_CASE("safetensors: shapes and offsets that disagree are refused, naming the tensor",
          "[safetensors]") {
    REQUIRE_THROWS_WITH(parse(one_tensor("[2,-1]", "[0,0]", 0)),
                        "t.safetensors: \"x.shape[1]\" at byte 39: expected a non-negative "
                        "integer, found -1");
    REQUIRE_THROWS_WITH(
        parse(one_tensor("[4294967296,4294967296]", "[0,0]", 0)),
        "t.safetensors: \"x.shape\" at byte 36: (4294967296, 4294967296) of F32 is more than "
        "2^64 bytes");
    REQUIRE_THROWS_WITH(parse(one_tensor("[1]", "[0]", 4)),
                        "t.safetensors: \"x.data_offsets\" at byte 55: expected [begin, end], "
                        "found 1 value");
    REQUIRE_THROWS_WITH(parse(one_tensor("[0]", "[4,0]", 4)),
                        "t.safetensors: \"x.data_offsets\" at byte 55: [4, 0) ends before it "
                        "begins");
    REQUIRE_THROWS_WITH(parse(one_tensor("[2,3]", "[0,20]", 20)),
                        "t.safetensors: \"x.data_offsets\" at byte 57: [0, 20) holds 20 bytes, "
                        "but (2, 3) of F32 needs 24");
}

TEST_CASE("safetensors: the tensors must tile the data: no overlap, no gap, nothing after",
          "[safetensors]") {
    const auto two = [](const std::string& a, const std::string& b, std::size_t data_size) {
        return with_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":" + a +
                               "},\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":" + b +
                               "}}",
                           std::string(data_size, '\0'));
    };
    CHECK(parse(two("[4,8]", "[0,4]", 8)).front().name == "b");  // any order in the header
    REQUIRE_THROWS_WITH(parse(two("[0,4]", "[2,6]", 8)),
                        "t.safetensors: tensor b's data_offsets [2, 6) overlap tensor a's [0, 4)");
    REQUIRE_THROWS_WITH(parse(two("[0,4]", "[0,4]", 4)),
                        "t.safetensors: tensor b's data_offsets [0, 4) overlap tensor a's [0, 4)");
    REQUIRE_THROWS_WITH(parse(two("[0,4]", "[6,10]", 10)),
                        "t.safetensors: tensor b's data_offsets [6, 10) leave a gap: bytes [4, 6) "
                        "of the data belong to no tensor");
    REQUIRE_THROWS_WITH(parse(two("[0,4]", "[4,8]", 11)),
                        "t.safetensors: 3 bytes of data after the last tensor's, at data offset "
                        "8: the tensors do not cover the data");
    REQUIRE_THROWS_WITH(parse(with_header("{}", "abc")),
                        "t.safetensors: 3 bytes of data after the last tensor's, at data offset "
                        "0: the tensors do not cover the data");
}

TEST_CASE("safetensors: parsing a header is charged to the ledger first", "[safetensors]") {
    const std::string bytes = safetensors_file({{"a", "F32", {1}, f32_bytes({1})}});
    REQUIRE_THROWS_WITH(
        parse_header(bytes, bytes.size(), "t.safetensors", Ledger(100)),
        Catch::StartsWith(
            "t.safetensors: the header: parsing its 85 bytes needs 4 KiB, more than "));
    const std::string dir = folder("budget");
    write(dir + "/model.safetensors", bytes);
    REQUIRE_THROWS_WITH(read_header(dir + "/model.safetensors", Ledger(50)),
                        dir +
                            "/model.safetensors: the header: its 85 bytes need 93 B, more than "
                            "--max-memory 50 B; raise --max-memory or use a smaller file");
}

// ---- folders ----------------------------------------------------------------------------

namespace {

// x (3, 4) F32 with values 0..11 and y (2,) BF16.
std::string small_model() {
    std::vector<float> x(12);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i);
    return safetensors_file(
        {{"x", "F32", {3, 4}, f32_bytes(x)}, {"y", "BF16", {2}, u16_bytes({0x3F80, 0xC000})}});
}

// Two shards and their index: a (2, 2) F16 in the first, b (1,) F32 and c (2, 1) F64 in
// the second.
std::string sharded_model(const std::string& name) {
    const std::string dir = folder(name);
    write(dir + "/model-00001-of-00002.safetensors",
          safetensors_file({{"a", "F16", {2, 2}, u16_bytes({0x3C00, 0x4000, 0x0001, 0xFC00})}}));
    write(dir + "/model-00002-of-00002.safetensors",
          safetensors_file(
              {{"b", "F32", {1}, f32_bytes({7})}, {"c", "F64", {2, 1}, f64_bytes({0.5, -1})}}));
    write(dir + "/model.safetensors.index.json",
          R"({"metadata": {"total_size": 36}, "weight_map": {
  "a": "model-00001-of-00002.safetensors",
  "b": "model-00002-of-00002.safetensors",
  "c": "model-00002-of-00002.safetensors"}})");
    return dir;
}

}  // namespace

TEST_CASE("safetensors: a folder's model.safetensors is read by name, whole or by rows",
          "[safetensors]") {
    const std::string dir = folder("single");
    write(dir + "/model.safetensors", small_model());
    const Folder model = Folder::open(dir, Ledger());
    CHECK(model.dir() == dir);
    CHECK(model.has("x"));
    CHECK_FALSE(model.has("z"));
    CHECK(model.names() == std::vector<std::string>{"x", "y"});
    CHECK(model.float32_bytes("x") == 48);
    CHECK(model.entry("x").file == dir + "/model.safetensors");
    CHECK(model.read("y", Ledger()).to_vector() == std::vector<float>{1, -2});
    const Tensor rows = model.read_rows("x", {2, 0, 2}, Ledger());
    CHECK(rows.shape() == Shape{3, 4});
    CHECK(rows.to_vector() == std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11});
    const Tensor chunk = model.read_row_range("x", 1, 2, Ledger());
    CHECK(chunk.shape() == Shape{2, 4});
    CHECK(chunk.to_vector() == std::vector<float>{4, 5, 6, 7, 8, 9, 10, 11});
    CHECK(model.read_row_range("x", 3, 0, Ledger()).shape() == Shape{0, 4});
    CHECK(model.read_rows("x", {}, Ledger()).shape() == Shape{0, 4});
}

TEST_CASE("safetensors: a tensor larger than the read chunk is read in pieces", "[safetensors]") {
    const std::size_t rows = 700, cols = 1000;  // 1.4 MB of BF16, more than one 1 MiB chunk
    std::vector<std::uint16_t> bits(rows * cols);
    for (std::size_t i = 0; i < bits.size(); ++i) bits[i] = std::uint16_t(0x3F80 + i % 97);
    const std::string dir = folder("chunks");
    write(dir + "/model.safetensors",
          safetensors_file({{"w", "BF16", {rows, cols}, u16_bytes(bits)}}));
    const Folder model = Folder::open(dir, Ledger());
    const std::vector<float> all = model.read("w", Ledger()).to_vector();
    bool same = all.size() == bits.size();
    for (std::size_t i = 0; same && i < bits.size(); ++i) same = all[i] == bf16_to_f32(bits[i]);
    CHECK(same);
    const std::vector<float> tail = model.read_row_range("w", 1, rows - 1, Ledger()).to_vector();
    CHECK(std::equal(tail.begin(), tail.end(), all.begin() + cols));
}

TEST_CASE("safetensors: reads are refused before allocating beyond the ledger", "[safetensors]") {
    const std::string dir = folder("ledger");
    write(dir + "/model.safetensors", small_model());
    const Folder model = Folder::open(dir, Ledger());
    REQUIRE_THROWS_WITH(model.read("x", Ledger(50)),
                        dir +
                            "/model.safetensors: tensor x: its values (3, 4) in float32 need 48 B "
                            "(and 48 B to read them), more than --max-memory 50 B; raise "
                            "--max-memory or use a smaller checkpoint");
    CHECK(model.read_rows("x", {0, 2}, Ledger(48)).numel() == 8);  // 32 B and a row's 16 B
    REQUIRE_THROWS_WITH(model.read_rows("x", {0, 2}, Ledger(47)),
                        dir +
                            "/model.safetensors: tensor x: rows (2, 4) in float32 need 32 B (and "
                            "16 B to read them), more than --max-memory 47 B; raise --max-memory "
                            "or use a smaller checkpoint");
    REQUIRE_THROWS_WITH(model.read_row_range("x", 0, 2, Ledger(63)),
                        Catch::StartsWith(dir + "/model.safetensors: tensor x: rows (2, 4) in "
                                                "float32 need 32 B (and 32 B to read them)"));
}

TEST_CASE(
    "safetensors: an F64 value beyond float32 is refused when read, naming tensor and "
    "element",
    "[safetensors]") {
    const std::string dir = folder("f64");
    write(dir + "/model.safetensors",
          safetensors_file({{"w", "F64", {2, 2}, f64_bytes({1, -2, 0.5, -1e39})}}));
    const Folder model = Folder::open(dir, Ledger());  // the header is fine: values are not read
    CHECK(model.read_rows("w", {0}, Ledger()).to_vector() == std::vector<float>{1, -2});
    REQUIRE_THROWS_WITH(model.read("w", Ledger()),
                        dir +
                            "/model.safetensors: tensor w: element 3 is -1e+39, "
                            "beyond float32's range (largest 3.4028235e+38); mha computes in "
                            "float32");
    REQUIRE_THROWS_WITH(model.read_rows("w", {1}, Ledger()), Catch::Contains(": element 3 is "));
}

TEST_CASE("safetensors: rows of a tensor that is not 2-D, or past its end, are refused",
          "[safetensors]") {
    const std::string dir = folder("rows");
    write(dir + "/model.safetensors", small_model());
    const Folder model = Folder::open(dir, Ledger());
    const std::string file = dir + "/model.safetensors";
    REQUIRE_THROWS_WITH(model.read_rows("y", {0}, Ledger()),
                        file + ": tensor y is (2,), not a matrix: its rows cannot be read");
    REQUIRE_THROWS_WITH(model.read_rows("x", {0, 3}, Ledger()),
                        file + ": tensor x has 3 rows; row 3 was asked for");
    REQUIRE_THROWS_WITH(model.read_row_range("x", 2, 2, Ledger()),
                        file + ": tensor x has 3 rows; rows [2, 4) were asked for");
    REQUIRE_THROWS_WITH(model.read("z", Ledger()), dir + ": no tensor z (model.safetensors)");
}

TEST_CASE("safetensors: a file that shrinks after its header was read is refused as truncated",
          "[safetensors]") {
    const std::string dir = folder("shrunk");
    write(dir + "/model.safetensors", small_model());
    const Folder model = Folder::open(dir, Ledger());
    CHECK(model.entry("x").begin == 152);
    CHECK(model.entry("x").end == 200);
    fs::resize_file(dir + "/model.safetensors", 172);
    REQUIRE_THROWS_WITH(model.read("x", Ledger()),
                        dir +
                            "/model.safetensors: truncated: tensor x needs bytes [152, 200), but "
                            "the file ends at byte 172");
}

TEST_CASE("safetensors: the Hugging Face cache's snapshot of symlinks into blobs is read",
          "[safetensors]") {
    // models--org--name/snapshots/<hash>/model.safetensors -> ../../blobs/<sha256>
    const std::string cache = folder("cache") + "/models--org--tiny";
    const std::string snapshot = cache + "/snapshots/0123abcd";
    fs::create_directories(cache + "/blobs");
    fs::create_directories(snapshot);
    write(cache + "/blobs/5e1f", small_model());
    fs::create_symlink("../../blobs/5e1f", snapshot + "/model.safetensors");
    const Folder model = Folder::open(snapshot, Ledger());
    CHECK(model.read_rows("x", {1}, Ledger()).to_vector() == std::vector<float>{4, 5, 6, 7});

    const std::string shards = sharded_model("cache-shards");
    const std::string linked = folder("cache-linked");
    for (const char* name : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                             "model.safetensors.index.json"})
        fs::create_symlink(shards + "/" + name, linked + "/" + name);
    CHECK(Folder::open(linked, Ledger()).read("c", Ledger()).to_vector() ==
          std::vector<float>{0.5f, -1.0f});
}

TEST_CASE("safetensors: a sharded folder is read through its index", "[safetensors]") {
    const std::string dir = sharded_model("shards");
    const Folder model = Folder::open(dir, Ledger());
    CHECK(model.names() == std::vector<std::string>{"a", "b", "c"});
    CHECK(model.entry("b").file == dir + "/model-00002-of-00002.safetensors");
    const std::vector<float> a = model.read("a", Ledger()).to_vector();
    CHECK(a == std::vector<float>{1, 2, std::ldexp(1.0f, -24), -INFINITY});
    CHECK(model.read("b", Ledger()).to_vector() == std::vector<float>{7});
    REQUIRE_THROWS_WITH(model.entry("z"), dir + ": no tensor z (model.safetensors.index.json)");
}

TEST_CASE("safetensors: an index and shards that disagree are refused by name", "[safetensors]") {
    const std::string index_path = "/model.safetensors.index.json";
    const auto index = [&](const std::string& dir, const std::string& text) {
        write(dir + index_path, text);
        return dir;
    };
    const std::string first = "model-00001-of-00002.safetensors";
    const std::string second = "model-00002-of-00002.safetensors";
    {
        const std::string dir = sharded_model("absent");
        fs::remove(dir + "/" + second);
        REQUIRE_THROWS_WITH(Folder::open(dir, Ledger()),
                            dir + index_path + ": \"weight_map.b\" at byte 99: shard " + second +
                                " is absent from " + dir);
    }
    {
        const std::string dir = sharded_model("unlisted");
        index(dir, R"({"weight_map": {"a": ")" + first + R"(", "b": ")" + second + R"("}})");
        REQUIRE_THROWS_WITH(Folder::open(dir, Ledger()),
                            dir + "/" + second +
                                ": tensor c (bytes [153, 169)) is not in "
                                "model.safetensors.index.json's weight_map");
    }
    {
        const std::string dir = sharded_model("elsewhere");
        index(dir, R"({"weight_map": {"a": ")" + first + R"(", "b": ")" + first + R"(", "c": ")" +
                       second + R"("}})");
        REQUIRE_THROWS_WITH(
            Folder::open(dir, Ledger()),
            dir + index_path + ": \"weight_map.b\" at byte 62: " + first + " has no tensor b");
    }
    {
        const std::string dir = sharded_model("twice");
        write(dir + "/" + first, safetensors_file({{"a", "F16", {2, 2}, u16_bytes({1, 2, 3, 4})},
                                                   {"b", "F32", {1}, f32_bytes({7})}}));
        REQUIRE_THROWS_WITH(Folder::open(dir, Ledger()),
                            dir + "/" + first +
                                ": tensor b (bytes [157, 161)) is in "
                                "model.safetensors.index.json's weight_map under " +
                                second);
    }
    {
        const std::string dir = sharded_model("missing");
        index(dir, R"({"weight_map": {"a": ")" + first + R"(", "b": ")" + second + R"(", "c": ")" +
                       second + R"(", "d": ")" + second + R"("}})");
        REQUIRE_THROWS_WITH(
            Folder::open(dir, Ledger()),
            dir + index_path + ": \"weight_map.d\" at byte 144: " + second + " has no tensor d");
    }
    {
        const std::string dir = sharded_model("bad-index");
        index(dir, R"({"metadata": {}})");
        REQUIRE_THROWS_WITH(Folder::open(dir, Ledger()),
                            dir + index_path +
                                ": byte 0: no \"weight_map\" (tensor name to shard "
                                "file)");
        index(dir, R"({"weight_map": {"a": "../elsewhere.safetensors"}})");
        REQUIRE_THROWS_WITH(Folder::open(dir, Ledger()),
                            dir + index_path +
                                ": \"weight_map.a\" at byte 21: expected a shard's "
                                "file name in the folder, found "
                                "\"../elsewhere.safetensors\"");
    }
}

TEST_CASE("safetensors: a folder without safetensors files is refused", "[safetensors]") {
    const std::string dir = folder("empty");
    REQUIRE_THROWS_WITH(Folder::open(dir, Ledger()),
                        dir +
                            ": neither model.safetensors nor model.safetensors.index.json (a "
                            "Hugging Face model folder holds one of them)");
    REQUIRE_THROWS_WITH(
        Folder::open(dir + "/absent", Ledger()),
        dir + "/absent: not a folder (a checkpoint is a Hugging Face model folder)");
    write(dir + "/model.safetensors", le64(8) + "{}");
    REQUIRE_THROWS_WITH(Folder::open(dir, Ledger()),
                        dir +
                            "/model.safetensors: truncated: byte 0 gives the header's length as "
                            "8 bytes, but only 2 follow");
}

// ---- the budget bounds the working set, not the file -------------------------------------

namespace {

// A safetensors file of BF16 zeros in these shapes, sparse: its header, then a hole to the
// end of the data (nothing is written, so a 2.3 GiB file takes no disk).
void write_sparse_bf16(const std::string& path,
                       const std::vector<std::pair<std::string, Shape>>& tensors) {
    std::string header = "{";
    std::uint64_t data = 0;
    for (const auto& [name, shape] : tensors) {
        const std::uint64_t bytes = 2 * element_count(shape);
        header += std::string(header.size() > 1 ? "," : "") + "\"" + name +
                  "\":{\"dtype\":\"BF16\",\"shape\":" + shape_json(shape) + ",\"data_offsets\":[" +
                  std::to_string(data) + "," + std::to_string(data + bytes) + "]}";
        data += bytes;
    }
    const std::string start = with_header(header + "}");
    write(path, start);
    fs::resize_file(path, start.size() + data);
}

}  // namespace

TEST_CASE(
    "safetensors: a Llama-3.2-1B-shaped folder (2.3 GiB of BF16) is read within 2 GiB, "
    "a piece at a time",
    "[safetensors][big]") {
    const std::size_t hidden = 2048, mlp = 8192, kv = 512, vocab = 128256, layers = 16;
    std::vector<std::pair<std::string, Shape>> tensors = {
        {"model.embed_tokens.weight", {vocab, hidden}}, {"model.norm.weight", {hidden}}};
    for (std::size_t l = 0; l < layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        for (const auto& [name, shape] : std::vector<std::pair<std::string, Shape>>{
                 {"self_attn.q_proj.weight", {hidden, hidden}},
                 {"self_attn.k_proj.weight", {kv, hidden}},
                 {"self_attn.v_proj.weight", {kv, hidden}},
                 {"self_attn.o_proj.weight", {hidden, hidden}},
                 {"mlp.gate_proj.weight", {mlp, hidden}},
                 {"mlp.up_proj.weight", {mlp, hidden}},
                 {"mlp.down_proj.weight", {hidden, mlp}},
                 {"input_layernorm.weight", {hidden}},
                 {"post_attention_layernorm.weight", {hidden}}})
            tensors.push_back({p + name, shape});
    }
    const std::string dir = folder("llama-1b");
    write_sparse_bf16(dir + "/model.safetensors", tensors);
    const std::uint64_t gib = std::uint64_t(1) << 30;
    CHECK(fs::file_size(dir + "/model.safetensors") > 2 * gib);  // more than the budget

    Ledger ledger(2 * gib);
    const Folder model = Folder::open(dir, ledger);
    std::uint64_t all = 0;
    for (const std::string& name : model.names()) all += model.float32_bytes(name);
    CHECK(all > 4 * gib);  // the whole model in float32: twice the budget

    const std::vector<std::size_t> prompt = {128000, 791, 6864, 315, 9822, 374,
                                             12366,  13,  1,    2,   3,    4};
    ledger.hold(model.read_rows("model.embed_tokens.weight", prompt, ledger).numel() * 4);
    std::uint64_t layer = 0;
    for (const std::string& name : model.names()) {
        if (name.rfind("model.layers.0.", 0) != 0) continue;
        const Tensor weight = model.read(name, ledger);
        CHECK(weight.to_vector()[weight.numel() - 1] == 0.0f);
        layer += weight.numel() * 4;
        ledger.hold(weight.numel() * 4);
    }
    CHECK(layer == 243286016);  // 232 MiB
    const Tensor chunk =
        model.read_row_range("model.embed_tokens.weight", vocab - 8192, 8192, ledger);
    CHECK(chunk.shape() == Shape{8192, hidden});
    // with 1 GiB more held, the whole table in float32 (1002 MiB) is refused by the ledger,
    // before anything is allocated
    ledger.hold(gib);
    REQUIRE_THROWS_WITH(model.read("model.embed_tokens.weight", ledger),
                        Catch::Contains("tensor model.embed_tokens.weight: its values (128256, "
                                        "2048) in float32 need 1002 MiB"));
}

}  // namespace test_safetensors
