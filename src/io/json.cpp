// JSON parsing by recursive descent, with each value's byte offset kept for errors.

#include "io/json.h"

#include "core/error.h"
#include "io/printable.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string_view>

namespace mha::json {

namespace {

constexpr int max_depth = 512;

using Take = std::function<void(std::string&&, Value&&)>;

// The keys of one object so far, to find a repeated one as it is read: an open-addressing
// table of key indices (key_of(i) gives the i-th key wherever the caller keeps it), so that
// an object of 50,000 keys (a tokenizer's vocabulary) costs no allocation per key.
class KeySet {
public:
    // True when `key` is one of the keys added so far.
    template <typename KeyOf>
    bool contains(std::string_view key, const KeyOf& key_of) const {
        if (slots_.empty()) return false;
        for (std::size_t slot = hash(key); slots_[slot] != 0; slot = (slot + 1) & mask()) {
            if (key_of(slots_[slot] - 1) == key) return true;
        }
        return false;
    }

    // Remembers key `index`, the next after those added so far.
    template <typename KeyOf>
    void add(std::size_t index, const KeyOf& key_of) {
        if (2 * (index + 1) > slots_.size()) {
            slots_.assign(slots_.empty() ? 16 : 2 * slots_.size(), 0);
            for (std::size_t i = 0; i < index; ++i) place(i, key_of);
        }
        place(index, key_of);
    }

private:
    std::size_t mask() const { return slots_.size() - 1; }
    std::size_t hash(std::string_view key) const { return std::hash<std::string_view>()(key) & mask(); }
    template <typename KeyOf>
    void place(std::size_t index, const KeyOf& key_of) {
        std::size_t slot = hash(key_of(index));
        while (slots_[slot] != 0) slot = (slot + 1) & mask();
        slots_[slot] = static_cast<std::uint32_t>(index + 1);
    }

    std::vector<std::uint32_t> slots_;  // key index + 1, or 0: empty
};

// The keys of an object whose members are handed on as they are read: their bytes end to end.
class KeyArena {
public:
    void add(const std::string& key) {
        bytes_ += key;
        ends_.push_back(bytes_.size());
    }
    std::size_t size() const { return ends_.size(); }
    std::string_view operator()(std::size_t i) const {
        const std::size_t begin = i == 0 ? 0 : ends_[i - 1];
        return std::string_view(bytes_).substr(begin, ends_[i] - begin);
    }

private:
    std::string bytes_;
    std::vector<std::size_t> ends_;
};

class Parser {
public:
    Parser(const std::string& text, const std::string& what) : s_(text), what_(what) {}

    Value document() {
        Value root = value(0);
        end_of_document();
        return root;
    }

    // The members of the object at the start of the text, each handed to take as it is read.
    void streamed_members(const Take& take) {
        skip_space();
        KeyArena keys;
        KeySet seen;
        members(0, [&](std::string_view key) { return seen.contains(key, keys); },
                [&](std::string&& key, Value&& value) {
                    keys.add(key);
                    seen.add(keys.size() - 1, keys);
                    take(std::move(key), std::move(value));
                });
        end_of_document();
    }

private:
    [[noreturn]] void fail(const std::string& message) const {
        throw Error(what_ + ": byte " + std::to_string(at_) + ": " + message);
    }

    void end_of_document() {
        skip_space();
        if (at_ < s_.size()) fail("unexpected text after the JSON value");
    }

    void skip_space() {
        while (at_ < s_.size() &&
               (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n' || s_[at_] == '\r'))
            ++at_;
    }

    void expect(char c) {
        skip_space();
        if (at_ >= s_.size() || s_[at_] != c)
            fail(std::string("expected '") + c + "'" + found());
        ++at_;
    }

    std::string found() const {
        if (at_ >= s_.size()) return ", found the end of the text";
        unsigned char c = static_cast<unsigned char>(s_[at_]);
        if (c >= 0x20 && c < 0x7f) return std::string(", found '") + s_[at_] + "'";
        return ", found byte " + std::to_string(c);
    }

    Value value(int depth) {
        if (depth > max_depth) fail("nested deeper than " + std::to_string(max_depth));
        skip_space();
        Value v;
        v.offset = at_;
        if (at_ >= s_.size()) fail("expected a value" + found());
        char c = s_[at_];
        if (c == '{') {
            object(v, depth);
        } else if (c == '[') {
            array(v, depth);
        } else if (c == '"') {
            v.kind = Kind::string;
            v.text = string();
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            v.kind = Kind::number;
            v.text = number();
        } else if (word("true")) {
            v.kind = Kind::boolean;
            v.boolean = true;
        } else if (word("false")) {
            v.kind = Kind::boolean;
        } else if (!word("null")) {
            fail("expected a value" + found());
        }
        return v;
    }

    bool word(std::string_view w) {
        if (s_.compare(at_, w.size(), w) != 0) return false;
        at_ += w.size();
        return true;
    }

    void object(Value& v, int depth) {
        v.kind = Kind::object;
        KeySet seen;
        const auto key_of = [&](std::size_t i) { return std::string_view(v.members[i].first); };
        members(depth, [&](std::string_view key) { return seen.contains(key, key_of); },
                [&](std::string&& key, Value&& value) {
                    v.members.emplace_back(std::move(key), std::move(value));
                    seen.add(v.members.size() - 1, key_of);
                });
    }

    // The object's members from its '{' at at_, each handed to add(key, value) in order;
    // repeated(key) says whether a key came before.
    template <typename Repeated, typename Add>
    void members(int depth, const Repeated& repeated, const Add& add) {
        ++at_;
        skip_space();
        if (at_ < s_.size() && s_[at_] == '}') {
            ++at_;
            return;
        }
        for (;;) {
            skip_space();
            if (at_ >= s_.size() || s_[at_] != '"') fail("expected a key in quotes" + found());
            std::size_t key_at = at_;
            std::string key = string();
            if (repeated(key)) {
                at_ = key_at;
                fail("the key \"" + key + "\" appears twice");
            }
            expect(':');
            add(std::move(key), value(depth + 1));
            skip_space();
            if (at_ < s_.size() && s_[at_] == ',') {
                ++at_;
                continue;
            }
            expect('}');
            return;
        }
    }

    void array(Value& v, int depth) {
        v.kind = Kind::array;
        ++at_;
        skip_space();
        if (at_ < s_.size() && s_[at_] == ']') {
            ++at_;
            return;
        }
        for (;;) {
            v.items.push_back(value(depth + 1));
            skip_space();
            if (at_ < s_.size() && s_[at_] == ',') {
                ++at_;
                continue;
            }
            expect(']');
            return;
        }
    }

    std::string number() {
        std::size_t start = at_;
        auto digits = [&] {
            std::size_t first = at_;
            while (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9') ++at_;
            if (at_ == first) fail("expected a digit" + found());
        };
        if (s_[at_] == '-') ++at_;
        if (at_ < s_.size() && s_[at_] == '0')
            ++at_;
        else
            digits();
        if (at_ < s_.size() && s_[at_] == '.') {
            ++at_;
            digits();
        }
        if (at_ < s_.size() && (s_[at_] == 'e' || s_[at_] == 'E')) {
            ++at_;
            if (at_ < s_.size() && (s_[at_] == '+' || s_[at_] == '-')) ++at_;
            digits();
        }
        return s_.substr(start, at_ - start);
    }

    unsigned hex4() {
        if (s_.size() - at_ < 4) fail("expected four hex digits after \\u");
        unsigned code = 0;
        for (int i = 0; i < 4; ++i) {
            char c = s_[at_++];
            unsigned digit = c >= '0' && c <= '9'   ? unsigned(c - '0')
                             : c >= 'a' && c <= 'f' ? unsigned(c - 'a' + 10)
                             : c >= 'A' && c <= 'F' ? unsigned(c - 'A' + 10)
                                                    : 16;
            if (digit == 16) {
                --at_;
                fail("expected four hex digits after \\u" + found());
            }
            code = code * 16 + digit;
        }
        return code;
    }

    unsigned escaped_code() {
        unsigned code = hex4();
        if (code >= 0xDC00 && code <= 0xDFFF) fail("a lone low surrogate in \\u escapes");
        if (code < 0xD800 || code > 0xDBFF) return code;
        if (!word("\\u")) fail("a high surrogate without its low half in \\u escapes");
        unsigned low = hex4();
        if (low < 0xDC00 || low > 0xDFFF) fail("a high surrogate without its low half");
        return 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
    }

    // A string's byte that stands for itself: ASCII, neither a quote, a backslash nor a control.
    static bool plain_ascii(unsigned char c) { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; }

    std::string string() {
        ++at_;  // the opening quote
        std::string out;
        for (;;) {
            if (at_ >= s_.size()) fail("a string without its closing quote");
            unsigned char c = static_cast<unsigned char>(s_[at_]);
            if (c == '"') {
                ++at_;
                return out;
            }
            if (c < 0x20) fail("a control character inside a string (write it as \\u00XX)");
            if (c == '\\') {
                ++at_;
                if (at_ >= s_.size()) fail("a string without its closing quote");
                char e = s_[at_++];
                switch (e) {
                    case '"': out += '"'; break;
                    case '\\': out += '\\'; break;
                    case '/': out += '/'; break;
                    case 'b': out += '\b'; break;
                    case 'f': out += '\f'; break;
                    case 'n': out += '\n'; break;
                    case 'r': out += '\r'; break;
                    case 't': out += '\t'; break;
                    case 'u': out += utf8_encode(escaped_code()); break;
                    default: --at_; fail(std::string("an unknown escape \\") + e);
                }
            } else if (c < 0x80) {  // a run of plain ASCII at once
                std::size_t end = at_ + 1;
                while (end < s_.size() && plain_ascii(static_cast<unsigned char>(s_[end]))) ++end;
                out.append(s_, at_, end - at_);
                at_ = end;
            } else {
                std::size_t n = utf8_length(s_, at_);
                if (n == 0) fail("invalid UTF-8 inside a string");
                out.append(s_, at_, n);
                at_ += n;
            }
        }
    }

    const std::string& s_;
    const std::string& what_;
    std::size_t at_ = 0;
};

std::string offset_words(const Value& value) { return "byte " + std::to_string(value.offset); }

}  // namespace

const Value* Value::find(const std::string& key) const {
    for (const auto& member : members)
        if (member.first == key) return &member.second;
    return nullptr;
}

const char* kind_name(Kind kind) {
    switch (kind) {
        case Kind::null: return "null";
        case Kind::boolean: return "a boolean";
        case Kind::number: return "a number";
        case Kind::string: return "a string";
        case Kind::array: return "an array";
        case Kind::object: return "an object";
    }
    return "a value";
}

Value parse(const std::string& text, const std::string& what) {
    return Parser(text, what).document();
}

void parse_members(const std::string& text, const std::string& what, const Take& take) {
    const std::size_t first = text.find_first_not_of(" \t\n\r");
    if (first == std::string::npos || text[first] != '{') {
        as_object(parse(text, what), Where{what, ""});  // refuses it, as the whole value
        return;
    }
    Parser(text, what).streamed_members(take);
}

std::uint64_t parse_bytes(const std::string& text) {
    // Every value but the first follows a '[', ',' or ':' outside strings; each costs one
    // Value, plus a member's key (whose bytes are in the text), plus the hash set of keys.
    std::uint64_t values = 1;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        if (in_string) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == ',' || c == ':') {
            ++values;
        }
    }
    constexpr std::uint64_t per_value = sizeof(Value) + sizeof(std::pair<std::string, Value>) + 64;
    return values * per_value + 2 * std::uint64_t(text.size());
}

Where Where::at(const std::string& member) const {
    return {what, key.empty() ? member : key + "." + member};
}

Where Where::at(std::size_t index) const {
    return {what, key + "[" + std::to_string(index) + "]"};
}

void refuse(const Where& where, const Value& value, const std::string& message) {
    std::string place = where.key.empty() ? offset_words(value)
                                          : "\"" + where.key + "\" at " + offset_words(value);
    throw Error(where.what + ": " + place + ": " + message);
}

namespace {

void require(const Value& value, Kind kind, const Where& where) {
    if (value.kind != kind)
        refuse(where, value,
               std::string("expected ") + kind_name(kind) + ", found " + kind_name(value.kind));
}

}  // namespace

const std::string& as_string(const Value& value, const Where& where) {
    require(value, Kind::string, where);
    return value.text;
}

bool as_bool(const Value& value, const Where& where) {
    require(value, Kind::boolean, where);
    return value.boolean;
}

double as_double(const Value& value, const Where& where) {
    require(value, Kind::number, where);
    errno = 0;
    double d = std::strtod(value.text.c_str(), nullptr);
    if (errno == ERANGE && std::isinf(d))
        refuse(where, value, value.text + " is beyond the range of a double");
    return d;
}

std::int64_t as_int(const Value& value, const Where& where) {
    require(value, Kind::number, where);
    bool plain = value.text.find_first_of(".eE") == std::string::npos;
    if (plain) {
        errno = 0;
        long long n = std::strtoll(value.text.c_str(), nullptr, 10);
        if (errno == ERANGE) refuse(where, value, value.text + " is beyond a 64-bit integer");
        return n;
    }
    double d = as_double(value, where);
    constexpr double exact = 9007199254740992.0;  // 2^53
    if (d != std::floor(d) || std::fabs(d) > exact)
        refuse(where, value, "expected an integer, found " + value.text);
    return static_cast<std::int64_t>(d);
}

std::uint64_t as_size(const Value& value, const Where& where) {
    std::int64_t n = as_int(value, where);
    if (n < 0) refuse(where, value, "expected a non-negative integer, found " + value.text);
    return static_cast<std::uint64_t>(n);
}

const std::vector<Value>& as_array(const Value& value, const Where& where) {
    require(value, Kind::array, where);
    return value.items;
}

const Value& as_object(const Value& value, const Where& where) {
    require(value, Kind::object, where);
    return value;
}

}  // namespace mha::json
