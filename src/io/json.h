#pragma once
// JSON as config.json, safetensors headers and tokenizer files write it (RFC 8259): parsed
// into a tree of values that remember their byte offset, so that every error names the
// file, the key and where it is ("config.json: \"rope_theta\" at byte 312: expected a
// number, found a string").

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace mha::json {

enum class Kind { null, boolean, number, string, array, object };

struct Value {
    Kind kind = Kind::null;
    bool boolean = false;
    std::string text;  // a string's UTF-8, or a number's literal as written ("1e-06")
    std::vector<Value> items;                            // an array's elements
    std::vector<std::pair<std::string, Value>> members;  // an object's, in file order
    std::size_t offset = 0;                              // byte where the value starts

    // The member named `key`, or nullptr (also when this is not an object).
    const Value* find(const std::string& key) const;
};

// "a string", "an object", ... as errors say it.
const char* kind_name(Kind kind);

// The whole text as one value. Throws mha::Error "WHAT: byte N: ..." on anything that is not
// JSON: a syntax error, invalid UTF-8 or a lone surrogate in a string, a duplicate key, or
// nesting deeper than 512.
Value parse(const std::string& text, const std::string& what);

// The members of the object that is the whole text, each handed to `take` (its key and value)
// in file order as soon as it is read, so that an object of many members (a vocabulary of
// 50,000 tokens) is never held as one tree. Throws what parse throws for the same text, or for
// a value that is not an object what as_object says; an error take throws stops the reading.
void parse_members(const std::string& text, const std::string& what,
                   const std::function<void(std::string&& key, Value&& value)>& take);

// An upper bound on the bytes parse(text) allocates, from one scan that allocates nothing:
// charge it to the ledger before parsing a large file.
std::uint64_t parse_bytes(const std::string& text);

// Where a value came from, for errors: the file and the key path ("rope_scaling.factor").
struct Where {
    std::string what;
    std::string key;
    Where at(const std::string& member) const;
    Where at(std::size_t index) const;
};

// Throws mha::Error "WHAT: \"KEY\" at byte N: MESSAGE".
[[noreturn]] void refuse(const Where& where, const Value& value, const std::string& message);

// The value as each type, or an error naming what was expected and found.
const std::string& as_string(const Value& value, const Where& where);
bool as_bool(const Value& value, const Where& where);
double as_double(const Value& value, const Where& where);  // finite, within double's range
std::int64_t as_int(const Value& value, const Where& where);    // an integer value exactly
std::uint64_t as_size(const Value& value, const Where& where);  // a non-negative integer
const std::vector<Value>& as_array(const Value& value, const Where& where);
const Value& as_object(const Value& value, const Where& where);

}  // namespace mha::json
