#pragma once
// The checks mha train makes before its first step: a resumed run's settings, the sizes, the
// memory (--max-memory) and the time (--max-time) the run would take.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "app/train/train_checkpoint.h"
#include "app/train/train_data.h"
#include "app/train/train_options.h"

namespace mha {

// A resumed run keeps the checkpoint's settings: an option given (`given`: the options on the
// command line) with another value, or another corpus (named `source`), is refused.
void check_resume_matches(const TrainOptions& o, const std::vector<std::string>& given,
                          const Checkpoint& c, const Corpus& corpus, const std::string& source);

// No file is named by two of --corpus, --out, --log, --resume and --save-batches (after
// following links: the same device and inode, or the same path for a file not yet made), but
// for --resume F --out F, which goes on in place.
void check_distinct_files(const TrainOptions& o);

// d_model must split into the heads.
void check_sizes(const TrainSettings& s);

// Bytes of memory per byte of corpus while it is decoded (the text, a code point per
// character, a token per character, the held-out characters as strings) and once decoded (the
// text, the tokens, the held-out strings): read_corpus's, measured by the [memory] test.
inline constexpr std::uint64_t corpus_decoding = 8, corpus_kept = 3;

// Refuses a corpus of `corpus_bytes` (from `source`) whose decoding alone would take more than
// --max-memory: checked before read_corpus.
void check_corpus_memory(const TrainOptions& o, std::uint64_t corpus_bytes,
                         const std::string& source);

// Refuses a run whose estimated peak memory on `threads` threads is above --max-memory.
void check_memory(const TrainOptions& o, std::uint64_t corpus_bytes, std::size_t vocab,
                  std::size_t threads);

// --max-time: refuses a run whose steps from first_step on (none past --time-limit) would take
// longer at this machine's expected rate.
void check_training_time(const TrainOptions& o, std::size_t vocab, std::uint64_t first_step,
                         std::size_t threads);

}  // namespace mha
