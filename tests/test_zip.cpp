// Tests for io/zip on bytes in memory: round trips, CRC-32, zip64 records, errors it reports.

#include "io/zip.h"

#include "core/error.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>

namespace test_zip {

namespace zip = mha::zip;

namespace {

using Files = std::vector<std::pair<std::string, std::string>>;

std::string read_bytes(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    REQUIRE(file);
    return std::string(std::istreambuf_iterator<char>(file), {});
}

// The one entry of `archive`, as its central directory describes it.
zip::Entry only_entry(const std::string& archive) {
    const std::vector<zip::Entry> entries = zip::read_directory(archive, "one.zip");
    REQUIRE(entries.size() == 1);
    return entries[0];
}

}  // namespace

TEST_CASE("stored_archive round-trips through read_directory and stored_data", "[zip]") {
    const Files files = {
        {"a.txt", "hello"},
        {"empty", ""},
        {"dir/binary.bin", std::string("\x00\xff\x50\x4b\x05\x06\n", 7)},
        {"long.bin", std::string(1000, 'x')},
    };
    const std::string archive = zip::stored_archive(files, "out.zip");
    const std::vector<zip::Entry> entries = zip::read_directory(archive, "out.zip");
    REQUIRE(entries.size() == files.size());
    for (std::size_t i = 0; i < files.size(); ++i) {
        INFO(files[i].first);
        CHECK(entries[i].name == files[i].first);
        CHECK(entries[i].method == 0);
        CHECK(entries[i].size == files[i].second.size());
        CHECK(zip::stored_data(archive, entries[i], "out.zip: entry") == files[i].second);
    }
}

TEST_CASE("an archive without entries has only the end record", "[zip]") {
    const std::string archive = zip::stored_archive({}, "none.zip");
    CHECK(archive == std::string("PK\x05\x06", 4) + std::string(18, '\0'));
    CHECK(zip::read_directory(archive, "none.zip").empty());
}

TEST_CASE("entries carry the standard CRC-32", "[zip]") {
    // The check value of CRC-32/ISO-HDLC for the nine ASCII digits "123456789".
    CHECK(only_entry(zip::stored_archive({{"check", "123456789"}}, "crc.zip")).crc == 0xCBF43926u);
    CHECK(only_entry(zip::stored_archive({{"empty", ""}}, "crc.zip")).crc == 0);
}

TEST_CASE("read_directory reads zip64 records and an archive comment", "[zip]") {
    const std::string bytes = read_bytes("data/npy/zip64.npz");
    const std::vector<zip::Entry> entries = zip::read_directory(bytes, "zip64.npz");
    REQUIRE(entries.size() == 2);
    CHECK(entries[0].name == "a.npy");
    CHECK(entries[1].name == "b.npy");
    for (const zip::Entry& entry : entries) {
        CHECK(zip::stored_data(bytes, entry, entry.name).size() == entry.size);
    }
}

TEST_CASE("read_directory names the archive in every error", "[zip]") {
    const std::string valid = zip::stored_archive({{"a", "abc"}}, "a.zip");
    const std::size_t end_at = valid.size() - 22;
    SECTION("no end record") {
        REQUIRE_THROWS_WITH(zip::read_directory("", "empty.zip"),
                            "empty.zip: not an .npz file (no zip end of central directory"
                            " record); expected a file written by numpy.savez");
    }
    SECTION("a saturated entry count without zip64 records") {
        std::string damaged = valid;
        damaged[end_at + 10] = damaged[end_at + 11] = '\xff';
        REQUIRE_THROWS_WITH(
            zip::read_directory(damaged, "bad.zip"),
            "bad.zip: corrupt zip64 file: the zip64 end of central directory is missing");
    }
    SECTION("a bad central directory signature") {
        std::string damaged = valid;
        damaged[valid.find("PK\x01\x02")] = 'Q';
        REQUIRE_THROWS_WITH(zip::read_directory(damaged, "bad.zip"),
                            "bad.zip: corrupt central directory (bad entry signature)");
    }
}

TEST_CASE("stored_data refuses what it cannot read, naming the entry's label", "[zip]") {
    const std::string archive = zip::stored_archive({{"digits", "123456789"}}, "d.zip");
    zip::Entry entry = only_entry(archive);
    SECTION("encrypted") {
        entry.flags = 1;
        REQUIRE_THROWS_WITH(zip::stored_data(archive, entry, "d.zip: digits"),
                            "d.zip: digits: the entry is encrypted;"
                            " expected a plain numpy.savez file");
    }
    SECTION("deflated") {
        entry.method = 8;
        REQUIRE_THROWS_WITH(zip::stored_data(archive, entry, "d.zip: digits"),
                            "d.zip: digits: the file is compressed;"
                            " save it with numpy.savez (not numpy.savez_compressed)");
    }
    SECTION("another compression method") {
        entry.method = 12;
        REQUIRE_THROWS_WITH(zip::stored_data(archive, entry, "d.zip: digits"),
                            "d.zip: digits: unsupported zip compression method 12;"
                            " save it with numpy.savez");
    }
    SECTION("sizes that disagree") {
        entry.compressed_size = 10;
        REQUIRE_THROWS_WITH(zip::stored_data(archive, entry, "d.zip: digits"),
                            "d.zip: digits: corrupt file: a stored entry of 9 bytes"
                            " claims 10 stored bytes");
    }
    SECTION("a local header past the end") {
        entry.local_offset = archive.size() - 10;
        REQUIRE_THROWS_WITH(zip::stored_data(archive, entry, "d.zip: digits"),
                            "d.zip: digits: truncated file: the local header lies past its end");
    }
    SECTION("no local header where the directory points") {
        entry.local_offset = 1;
        REQUIRE_THROWS_WITH(zip::stored_data(archive, entry, "d.zip: digits"),
                            "d.zip: digits: corrupt file (bad local header signature)");
    }
    SECTION("data past the end") {
        entry.size = entry.compressed_size = archive.size();
        REQUIRE_THROWS_WITH(zip::stored_data(archive, entry, "d.zip: digits"),
                            "d.zip: digits: truncated file: the entry's " +
                                std::to_string(archive.size()) +
                                " bytes run past the end of the file");
    }
    SECTION("a CRC-32 that does not match") {
        entry.crc = 0;
        REQUIRE_THROWS_WITH(zip::stored_data(archive, entry, "d.zip: digits"),
                            "d.zip: digits: corrupt file: CRC-32 mismatch"
                            " (stored 0x00000000, computed 0xcbf43926)");
    }
}

}  // namespace test_zip
