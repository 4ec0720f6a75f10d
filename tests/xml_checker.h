#pragma once
// A checker for the XML this project writes (the SVG, the lesson page's markup): one root
// element, every tag closed in order, attribute values quoted, only the five named
// entities and numeric ones. A leading <!DOCTYPE html> is skipped.

#include <algorithm>
#include <string>
#include <vector>

namespace test {

class XmlChecker {
public:
    explicit XmlChecker(const std::string& text) : text_(text) {}

    bool well_formed() {
        if (!characters_allowed()) return false;
        std::vector<std::string> open;
        std::size_t roots = 0;
        skip_declaration();
        while (at_ < text_.size()) {
            if (text_[at_] != '<') {
                if (!character_data()) return false;
                continue;
            }
            const std::size_t end = text_.find('>', at_);
            if (end == std::string::npos) return false;
            const std::string tag = text_.substr(at_ + 1, end - at_ - 1);
            at_ = end + 1;
            if (!tag.empty() && tag[0] == '/') {
                if (open.empty() || open.back() != tag.substr(1)) return false;
                open.pop_back();
                continue;
            }
            const std::string name = tag.substr(0, tag.find_first_of(" \n/"));
            if (name.empty() || !attributes_quoted(tag)) return false;
            if (open.empty()) ++roots;
            if (tag.back() != '/') open.push_back(name);
        }
        return open.empty() && roots == 1;
    }

private:
    // XML 1.0 takes no control byte but tab, newline and carriage return, and only valid
    // UTF-8 (checked here by lead and continuation bytes).
    bool characters_allowed() const {
        for (std::size_t i = 0; i < text_.size(); ++i) {
            const unsigned char c = static_cast<unsigned char>(text_[i]);
            if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return false;
            if (c == 0x7f) return false;
            if (c < 0x80) continue;
            const std::size_t length = c >= 0xF0 && c <= 0xF4  ? 4
                                       : c >= 0xE0             ? 3
                                       : c >= 0xC2 && c < 0xE0 ? 2
                                                               : 0;
            if (length == 0 || (length == 3 && c >= 0xF0) || i + length > text_.size())
                return false;
            for (std::size_t k = 1; k < length; ++k) {
                if ((static_cast<unsigned char>(text_[i + k]) & 0xC0) != 0x80) return false;
            }
            i += length - 1;
        }
        return true;
    }

    void skip_declaration() {
        if (text_.compare(0, 5, "<?xml") == 0) at_ = text_.find("?>") + 2;
        if (text_.compare(0, 15, "<!DOCTYPE html>") == 0) at_ = 15;
    }

    bool character_data() {
        const char c = text_[at_];
        if (c == '>') return false;
        if (c == '&') {
            const std::size_t end = text_.find(';', at_);
            if (end == std::string::npos) return false;
            const std::string entity = text_.substr(at_ + 1, end - at_ - 1);
            static const std::vector<std::string> named = {"amp", "lt", "gt", "quot", "apos"};
            if (std::find(named.begin(), named.end(), entity) == named.end() && entity[0] != '#')
                return false;
            at_ = end + 1;
            return true;
        }
        ++at_;
        return true;
    }

    static bool attributes_quoted(const std::string& tag) {
        for (std::size_t i = tag.find('='); i != std::string::npos; i = tag.find('=', i + 1)) {
            if (i + 1 >= tag.size() || tag[i + 1] != '"') return false;
            const std::size_t close = tag.find('"', i + 2);
            if (close == std::string::npos) return false;
            const std::string value = tag.substr(i + 2, close - i - 2);
            if (value.find_first_of("<&") != std::string::npos &&
                value.find("&amp;") == std::string::npos)
                return false;
            i = close;
        }
        return true;
    }

    const std::string& text_;
    std::size_t at_ = 0;
};

}  // namespace test
