#pragma once
// Blocks of floats that several tensors share (Tensor::in_block), mapped in by one system
// call before they are written, on 2 MiB transparent huge pages when the block is large
// enough for one to cost less than its 4 KiB pages.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace mha {

// An empty vector with room for n floats. A large one is mapped in by one system call
// rather than by one page fault per 4 KiB page as it is filled: on a virtual machine a fault
// can cost 10 µs or more.
std::vector<float> reserved_floats(std::size_t n);

// `floats` zeros in a vector of their own (reserved_floats, then filled), as a pointer to the
// first that owns the vector: a tensor's storage, and a block too small for a huge page.
std::shared_ptr<float> zeroed_floats(std::size_t floats);

// Bytes a block of `floats` floats may hold in memory: its 4 KiB pages, rounded up to whole
// 2 MiB huge pages when the part past the last whole one is 512 KiB or more (one huge page
// then costs less to map in than its 4 KiB pages). What the memory budget counts.
std::uint64_t block_bytes(std::uint64_t floats);

// A zero-filled block of `floats` floats. A large one is mapped on its own, 2 MiB-aligned and
// advised for huge pages when block_bytes rounded it up; when the system gives none (no
// transparent huge pages, or none free), its 4 KiB pages are mapped in as before. Any other
// is zeroed_floats. Throws std::bad_alloc when there is no memory.
std::shared_ptr<float> float_block(std::size_t floats);

// Bytes of float storage handed out to tensors since the program started, every thread's:
// what a test reads to prove that a dry run allocates none.
std::uint64_t tensor_bytes_handed_out();

// Adds to tensor_bytes_handed_out: every maker of tensor storage calls it.
void count_tensor_bytes(std::uint64_t bytes);

}  // namespace mha
