// Strided tensor: the stride arithmetic behind view, transpose and contiguous.

#include "core/tensor/tensor.h"

#include "core/checked.h"
#include "core/error.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>

namespace mha {

std::string to_string(const Shape& shape) {
    std::string text = "(";
    for (std::size_t d = 0; d < shape.size(); ++d) {
        text += (d ? ", " : "") + std::to_string(shape[d]);
    }
    return text + (shape.size() == 1 ? ",)" : ")");
}

std::size_t element_count(const Shape& shape) {
    return std::accumulate(shape.begin(), shape.end(), std::size_t{1},
                           [](std::size_t a, std::size_t b) { return a * b; });
}

std::uint64_t float_bytes(const Shape& shape, const std::string& what) {
    std::uint64_t bytes = sizeof(float);
    for (std::size_t d : shape) bytes = checked_product({bytes, d}, what);
    return bytes;
}

Strides contiguous_strides(const Shape& shape) {
    Strides strides(shape.size());
    std::size_t stride = 1;
    for (std::size_t d = shape.size(); d-- > 0;) {
        strides[d] = stride;
        stride *= shape[d];
    }
    return strides;
}

namespace {

// A pointer to the first of the vector's floats that owns the vector.
std::shared_ptr<float> first_of(std::shared_ptr<std::vector<float>> values) {
    float* first = values->data();
    return std::shared_ptr<float>(std::move(values), first);
}

}  // namespace

Tensor::Tensor(Shape shape)
    : storage_(zeroed_floats(element_count(shape))),
      layout_(Layout::contiguous_of(std::move(shape))) {}

Tensor::Tensor(Shape shape, std::vector<float> values)
    : layout_(Layout::contiguous_of(std::move(shape))) {
    if (values.size() != element_count(layout_.shape)) {
        throw Error("tensor: " + std::to_string(values.size()) + " values cannot fill shape " +
                    to_string(layout_.shape));
    }
    count_tensor_bytes(values.capacity() * sizeof(float));
    storage_ = first_of(std::make_shared<std::vector<float>>(std::move(values)));
}

Tensor Tensor::in_storage(Shape shape, std::shared_ptr<std::vector<float>> storage,
                          bool zero_fill) {
    Tensor t;
    const std::size_t n = element_count(shape);
    if (storage->capacity() < n) count_tensor_bytes((n - storage->capacity()) * sizeof(float));
    if (storage->size() < n) storage->resize(n);  // zeros past what it held
    if (zero_fill) std::fill(storage->begin(), storage->begin() + n, 0.0f);
    t.storage_ = first_of(std::move(storage));
    t.layout_ = Layout::contiguous_of(std::move(shape));
    return t;
}

std::vector<Tensor> Tensor::in_one_block(const std::vector<Shape>& shapes) {
    std::size_t floats = 0;
    for (const Shape& shape : shapes) floats += element_count(shape);
    const std::shared_ptr<float> block = float_block(floats);
    std::vector<Tensor> tensors(shapes.size());
    std::size_t offset = 0;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
        tensors[i].storage_ = block;
        tensors[i].layout_ = Layout::contiguous_of(shapes[i]);
        tensors[i].offset_ = offset;
        offset += element_count(shapes[i]);
    }
    return tensors;
}

namespace {

// A dry tensor's storage: no floats; with a count, its bytes taken back when it goes, and in
// a block, the block kept taken until then.
struct DryRelease {
    std::shared_ptr<DryCount> count;
    std::uint64_t bytes = 0;
    std::shared_ptr<const void> block;
    void operator()(float*) const {
        if (count) count->live -= bytes;
    }
};

}  // namespace

Tensor Tensor::shape_only(Shape shape, std::shared_ptr<DryCount> count,
                          std::shared_ptr<const void> block) {
    std::uint64_t bytes = 0;
    if (count) {  // a dry run may be of sizes no memory holds: counted without wrapping around
        const std::string what = "the memory for this configuration";
        bytes = block ? 0 : float_bytes(shape, what);  // a block's bytes are counted already
        count->live = checked_sum({count->live, bytes}, what);
        count->peak = std::max(count->peak, checked_sum({count->live, count->blocks}, what));
    }
    Tensor t;
    t.storage_ =
        std::shared_ptr<float>(nullptr, DryRelease{std::move(count), bytes, std::move(block)});
    t.layout_ = Layout::contiguous_of(std::move(shape));
    t.dry_ = true;
    return t;
}

Tensor Tensor::dry_result(Shape shape) const {
    const DryRelease* release = std::get_deleter<DryRelease>(storage_);
    return shape_only(std::move(shape), release ? release->count : nullptr);
}

Tensor Tensor::without_values() const {
    Tensor t = *this;
    t.dry_ = !empty();
    return t;
}

bool is_contiguous(const Shape& shape, const Strides& strides) {
    if (element_count(shape) == 0) return true;  // no element to lay out, as in PyTorch
    const Strides expected = contiguous_strides(shape);
    for (std::size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] != 1 && strides[d] != expected[d]) return false;
    }
    return true;
}

bool Tensor::is_contiguous() const { return layout_.is_contiguous(); }

// A view is possible when every run of old dimensions that is contiguous in
// memory (a "chunk") is split or merged into new dimensions that stay inside
// that chunk. Walk both shapes from the innermost dimension, chunk by chunk.
static bool view_strides(const Shape& old_shape, const Strides& old_strides, const Shape& new_shape,
                         Strides& new_strides) {
    new_strides.assign(new_shape.size(), 1);
    std::size_t new_d = new_shape.size();
    std::size_t chunk_stride = old_strides.empty() ? 1 : old_strides.back();
    std::size_t old_count = 1;
    std::size_t new_count = 1;
    for (std::size_t old_d = old_shape.size(); old_d-- > 0;) {
        old_count *= old_shape[old_d];
        const bool chunk_ends = old_d == 0 || (old_shape[old_d - 1] != 1 &&
                                               old_strides[old_d - 1] != old_count * chunk_stride);
        if (!chunk_ends) continue;
        while (new_d > 0 && (new_count < old_count || new_shape[new_d - 1] == 1)) {
            --new_d;
            new_strides[new_d] = new_count * chunk_stride;
            new_count *= new_shape[new_d];
        }
        if (new_count != old_count) return false;
        if (old_d > 0) {
            chunk_stride = old_strides[old_d - 1];
            old_count = 1;
            new_count = 1;
        }
    }
    return new_d == 0;
}

Layout Layout::contiguous_of(Shape shape) {
    Strides strides = contiguous_strides(shape);
    return {std::move(shape), std::move(strides)};
}

Layout Layout::view(const Shape& new_shape) const {
    if (element_count(new_shape) != element_count(shape)) {
        throw Error("view: shape " + to_string(new_shape) + " is invalid for a tensor of shape " +
                    to_string(shape) + " (" + std::to_string(element_count(shape)) + " elements)");
    }
    Layout result = contiguous_of(new_shape);  // what an empty tensor takes, as in PyTorch
    if (element_count(shape) != 0 && !view_strides(shape, strides, new_shape, result.strides)) {
        throw Error("view: cannot view a tensor of shape " + to_string(shape) + " with strides " +
                    to_string(strides) + " as " + to_string(new_shape) +
                    ": its elements are not laid out contiguously; call contiguous() first"
                    " (in PyTorch: x.contiguous().view(...))");
    }
    return result;
}

Layout Layout::transpose(std::size_t a, std::size_t b) const {
    if (a >= shape.size() || b >= shape.size()) {
        throw Error("transpose: dimensions " + std::to_string(a) + " and " + std::to_string(b) +
                    " do not both exist in a tensor of shape " + to_string(shape));
    }
    Layout result = *this;
    std::swap(result.shape[a], result.shape[b]);
    std::swap(result.strides[a], result.strides[b]);
    return result;
}

Layout Layout::permute(const std::vector<std::size_t>& order) const {
    std::vector<bool> seen(shape.size(), false);
    for (std::size_t d : order) {
        if (d >= shape.size() || seen[d] || order.size() != shape.size()) {
            throw Error("permute: " + to_string(order) + " is not an order of the " +
                        std::to_string(shape.size()) + " dimensions of a tensor of shape " +
                        to_string(shape));
        }
        seen[d] = true;
    }
    Layout result = *this;
    for (std::size_t d = 0; d < order.size(); ++d) {
        result.shape[d] = shape[order[d]];
        result.strides[d] = strides[order[d]];
    }
    return result;
}

Layout Layout::select(std::size_t d) const {
    Layout result = *this;
    result.shape.erase(result.shape.begin() + std::ptrdiff_t(d));
    result.strides.erase(result.strides.begin() + std::ptrdiff_t(d));
    return result;
}

Tensor Tensor::view(const Shape& shape) const {
    Tensor result = *this;
    result.layout_ = layout_.view(shape);
    return result;
}

Tensor Tensor::transpose(std::size_t a, std::size_t b) const {
    Tensor result = *this;
    result.layout_ = layout_.transpose(a, b);
    return result;
}

Tensor Tensor::permute(const std::vector<std::size_t>& order) const {
    Tensor result = *this;
    result.layout_ = layout_.permute(order);
    return result;
}

Tensor Tensor::select(std::size_t d, std::size_t i) const {
    if (d >= dim() || i >= size(d)) {
        throw Error("select: index " + std::to_string(i) + " of dimension " + std::to_string(d) +
                    " is out of range for a tensor of shape " + to_string(shape()));
    }
    Tensor result = *this;
    result.offset_ += i * strides()[d];
    result.layout_ = layout_.select(d);
    return result;
}

Tensor Tensor::narrow(std::size_t d, std::size_t start, std::size_t length) const {
    if (d >= dim() || start + length > size(d)) {
        throw Error("narrow: [" + std::to_string(start) + ", " + std::to_string(start + length) +
                    ") of dimension " + std::to_string(d) + " is out of range for a tensor of shape " +
                    to_string(shape()));
    }
    Tensor result = *this;
    result.offset_ += start * strides()[d];
    result.layout_.shape[d] = length;
    return result;
}

Tensor Tensor::contiguous() const {
    if (is_contiguous()) return *this;
    if (dry_) return dry_result(shape());
    return Tensor(shape(), to_vector());
}

float Tensor::at(const std::vector<std::size_t>& index) const {
    if (empty() || dry_) throw Error("at: the tensor has no values");
    if (index.size() != dim()) {
        throw Error("at: " + std::to_string(index.size()) + " indices for a tensor of shape " +
                    to_string(shape()));
    }
    std::size_t position = offset_;
    for (std::size_t d = 0; d < dim(); ++d) {
        if (index[d] >= shape()[d]) {
            throw Error("at: index " + std::to_string(index[d]) +
                        " is out of range for dimension " + std::to_string(d) + " of shape " +
                        to_string(shape()));
        }
        position += index[d] * strides()[d];
    }
    return storage_.get()[position];
}

std::vector<float> Tensor::to_vector() const {
    std::vector<float> values(dry_ ? 0 : numel());  // a dry tensor: copy_to throws
    copy_to(values.data());
    return values;
}

namespace {

// A matrix of `rows` x `cols` read with strides (row_step, col_step), col_step not 1, into `out`
// in C order, a 16 x 16 tile at a time: of a transposed matrix (row_step 1) a tile reads 16
// cache lines down its columns and writes 16 across its rows, all still in cache when the next
// row of the tile reads on along them. Row by row, each read of a long row touches a new line,
// gone before the next row comes back for its neighbour: GPT-2's Conv1D weights, turned into
// nn.Linear's layout as a checkpoint loads, took 30% longer so (4.5-5.2 ms against 2.4-4.4 for
// a (768, 2304) weight), the largest part of a short run's time.
void copy_strided_matrix(const float* from, std::size_t rows, std::size_t cols,
                         std::size_t row_step, std::size_t col_step, float* out) {
    constexpr std::size_t tile = 16;
    for (std::size_t i0 = 0; i0 < rows; i0 += tile) {
        const std::size_t i1 = std::min(rows, i0 + tile);
        for (std::size_t j0 = 0; j0 < cols; j0 += tile) {
            const std::size_t j1 = std::min(cols, j0 + tile);
            for (std::size_t i = i0; i < i1; ++i) {
                for (std::size_t j = j0; j < j1; ++j)
                    out[i * cols + j] = from[i * row_step + j * col_step];
            }
        }
    }
}

}  // namespace

void Tensor::copy_to(float* out) const {
    if (dry_) throw Error("internal error: a dry run read the values of a tensor");
    const std::size_t count = numel();
    if (count == 0) return;
    // the last dimension is copied row by row, or with a strided last dimension the last two
    // a matrix at a time; the index walks the dimensions before them
    const std::size_t last = dim() == 0 ? 1 : shape().back();
    const std::size_t step = dim() == 0 ? 1 : strides().back();
    const bool matrices = dim() >= 2 && step != 1;
    const std::size_t rows = matrices ? shape()[dim() - 2] : 1;
    const std::size_t outer = dim() == 0 ? 0 : dim() - (matrices ? 2 : 1);
    std::vector<std::size_t> index(outer, 0);
    const float* base = data();
    for (std::size_t piece = 0; piece * rows * last < count; ++piece) {
        std::size_t position = 0;
        for (std::size_t d = 0; d < outer; ++d) position += index[d] * strides()[d];
        const float* from = base + position;
        float* to = out + piece * rows * last;
        if (matrices) {
            copy_strided_matrix(from, rows, last, strides()[dim() - 2], step, to);
        } else if (step == 1) {  // in 64-byte pieces: a row of a head (16 floats) is one
            std::size_t i = 0;
            for (; i + 16 <= last; i += 16) std::memcpy(to + i, from + i, 16 * sizeof(float));
            for (; i < last; ++i) to[i] = from[i];
        } else {
            for (std::size_t i = 0; i < last; ++i) to[i] = from[i * step];
        }
        for (std::size_t d = outer; d-- > 0;) {
            if (++index[d] < shape()[d]) break;
            index[d] = 0;
        }
    }
}

}  // namespace mha
