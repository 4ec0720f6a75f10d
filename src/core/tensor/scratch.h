#pragma once
// A thread's packing buffer, kept between calls: it only grows, and it never writes the memory
// it hands out (no zero-fill), so a small problem faults in only the pages its kernels touch.

#include <cstddef>
#include <memory>

namespace mha {

class ScratchBuffer {
public:
    // Room for n floats; what it held before is lost when it grows.
    float* floats(std::size_t n) {
        if (n > size_) {
            data_.reset();
            data_.reset(new float[n]);
            size_ = n;
        }
        return data_.get();
    }

private:
    std::unique_ptr<float[]> data_;
    std::size_t size_ = 0;
};

}  // namespace mha
