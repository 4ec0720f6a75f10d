#pragma once
// The rules of docs/trace.schema.json applied to a document: the subset of JSON Schema the
// file uses (type, required, properties, items, const, enum, minimum, maximum, and $ref into
// #/$defs). Each broken rule is listed with the key path where it broke.

#include <stdexcept>
#include <string>
#include <vector>

#include "io/json.h"

namespace test {

class SchemaChecker {
public:
    explicit SchemaChecker(const mha::json::Value& schema) : root_(schema) {}

    // Every rule the document breaks, "steps[3].step: above the maximum 21"; empty: valid.
    std::vector<std::string> broken(const mha::json::Value& document) const {
        std::vector<std::string> found;
        check(root_, document, "$", found);
        return found;
    }

private:
    static std::string number_text(const mha::json::Value& v) { return v.text; }

    static bool has_type(const std::string& type, const mha::json::Value& v) {
        using mha::json::Kind;
        if (type == "object") return v.kind == Kind::object;
        if (type == "array") return v.kind == Kind::array;
        if (type == "string") return v.kind == Kind::string;
        if (type == "boolean") return v.kind == Kind::boolean;
        if (type == "null") return v.kind == Kind::null;
        if (type == "number") return v.kind == Kind::number;
        if (type == "integer")
            return v.kind == Kind::number &&
                   v.text.find_first_of(".eE") == std::string::npos;
        return false;
    }

    static bool same(const mha::json::Value& a, const mha::json::Value& b) {
        if (a.kind != b.kind) return false;
        if (a.kind == mha::json::Kind::number)
            return std::stod(a.text) == std::stod(b.text);
        return a.text == b.text && a.boolean == b.boolean;
    }

    const mha::json::Value& resolved(const mha::json::Value& schema) const {
        const mha::json::Value* ref = schema.find("$ref");
        if (ref == nullptr) return schema;
        const std::string prefix = "#/$defs/";
        const mha::json::Value* defs = root_.find("$defs");
        const mha::json::Value* target =
            defs == nullptr ? nullptr : defs->find(ref->text.substr(prefix.size()));
        if (target == nullptr) throw std::runtime_error("schema: unknown $ref " + ref->text);
        return *target;
    }

    void check(const mha::json::Value& raw, const mha::json::Value& v, const std::string& path,
               std::vector<std::string>& found) const {
        const mha::json::Value& schema = resolved(raw);
        if (const mha::json::Value* type = schema.find("type")) {
            bool any = false;
            if (type->kind == mha::json::Kind::string) any = has_type(type->text, v);
            for (const mha::json::Value& t : type->items) any = any || has_type(t.text, v);
            if (!any) {
                found.push_back(path + ": not of the type the schema names");
                return;
            }
        }
        if (const mha::json::Value* c = schema.find("const"))
            if (!same(*c, v)) found.push_back(path + ": not the constant the schema names");
        if (const mha::json::Value* e = schema.find("enum")) {
            bool any = false;
            for (const mha::json::Value& option : e->items) any = any || same(option, v);
            if (!any) found.push_back(path + ": none of the schema's enum");
        }
        if (v.kind == mha::json::Kind::number) {
            if (const mha::json::Value* low = schema.find("minimum"))
                if (std::stod(v.text) < std::stod(low->text))
                    found.push_back(path + ": below the minimum " + number_text(*low));
            if (const mha::json::Value* high = schema.find("maximum"))
                if (std::stod(v.text) > std::stod(high->text))
                    found.push_back(path + ": above the maximum " + number_text(*high));
        }
        if (v.kind == mha::json::Kind::object) {
            if (const mha::json::Value* required = schema.find("required"))
                for (const mha::json::Value& key : required->items)
                    if (v.find(key.text) == nullptr)
                        found.push_back(path + ": lacks required " + key.text);
            if (const mha::json::Value* properties = schema.find("properties"))
                for (const auto& [key, member] : v.members)
                    if (const mha::json::Value* rule = properties->find(key))
                        check(*rule, member, path + "." + key, found);
        }
        if (v.kind == mha::json::Kind::array) {
            if (const mha::json::Value* items = schema.find("items"))
                for (std::size_t i = 0; i < v.items.size(); ++i)
                    check(*items, v.items[i], path + "[" + std::to_string(i) + "]", found);
        }
    }

    const mha::json::Value& root_;
};

}  // namespace test
