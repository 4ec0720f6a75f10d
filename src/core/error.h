#pragma once
// The one error type: a message for the user that says what was given and what is expected.

#include <stdexcept>
#include <string>

namespace mha {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace mha
