#pragma once
// PyTorch's side of mha bench --compare-torch: src/app/bench/bench_torch.py in a child process at
// one thread setting, kept alive and given orders, so that its runs take turns with mha's.

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace mha {

// Throws mha::Error unless src/app/bench/bench_torch.py is here (mha bench runs from the
// repository's top folder), /usr/bin/python3 imports torch, and torch's BLAS is not the
// reference one (reference_blas): against it PyTorch ran GPT-2-small's forward 50x slower.
void check_torch_side();

// Of the library files `libraries` names, one a line, the reference BLAS (netlib's, as Debian
// installs it: .../blas/libblas.so.3...), or "" when none is.
std::string reference_blas(const std::string& libraries);

class TorchProcess {
public:
    // What bench_torch.py times: the forward, forward + backward, a training step, or a
    // checkpoint folder's forward to logits.
    enum class Mode { Forward, Backward, Train, Checkpoint };

    // Starts bench_torch.py at torch threads x OpenBLAS threads (OPENBLAS_CORETYPE unset, so
    // OpenBLAS picks its own kernels) and waits for it; Checkpoint reads the folder `dir`.
    // Throws mha::Error if it fails.
    TorchProcess(Mode mode, std::size_t torch_threads, std::size_t blas_threads,
                 const std::string& dir = "");
    TorchProcess(const TorchProcess&) = delete;
    TorchProcess& operator=(const TorchProcess&) = delete;
    ~TorchProcess();

    // Builds the model for `size` ("B,N,d_model,h"; Train: "B,N,d_model,h,layers,d_ff,vocab";
    // Checkpoint: the token ids "17,4,..."), runs each form once, checks that the forms agree,
    // and returns the forms' names ("module", "composed").
    std::vector<std::string> load(const std::string& size);
    // One run of `form`, its time in ms as PyTorch's own clock took it.
    double run_ms(const std::string& form);
    // "torch threads/OpenBLAS threads", e.g. "2/1".
    const std::string& setting() const { return setting_; }

private:
    std::vector<std::string> ask(const std::string& order);  // its answer's words
    [[noreturn]] void fail(const std::string& order) const;
    void stop();

    std::string command_, setting_;
    pid_t pid_ = -1;
    int socket_ = -1;
    std::string pending_;  // what it printed past the last line read
};

// PyTorch at torch threads 1, 2 x OpenBLAS threads 1, 2: one process each, in that order.
std::vector<std::unique_ptr<TorchProcess>> start_torch(TorchProcess::Mode mode,
                                                       const std::string& dir = "");

}  // namespace mha
