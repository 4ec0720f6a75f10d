// A dry decode's trace without its middle tokens.

#include "show/token_elision.h"

#include <string>

#include "show/format.h"
#include "show/text_layout.h"

namespace mha {

void TokenElision::on_step(const Step& step) {
    if (step.facts.token) {  // steps 2, 9 and 14 name their token; the steps between are its too
        token_ = step.facts.token->position;
        count_ = step.facts.token->count;
    }
    if (count_ >= 4 && token_ > 1 && token_ < count_) {  // a lone middle token stays: the line
                                                         // would not be shorter
        ++left_out_;
        return;
    }
    if (left_out_ && !said_so_ && said_) {
        *said_ << "\n";  // a blank line apart, as the steps are
        write_filled(*said_,
                     words_of("... tokens 2 to " + std::to_string(count_ - 1) + " (" +
                              with_commas(count_ - 2) + " of them) took the same steps as tokens "
                              "1 and " + std::to_string(count_) + ", each against one more "
                              "cached position: this dry run leaves their " +
                              with_commas(left_out_) + " steps out"),
                     " ", "", "    ");
    }
    if (left_out_) said_so_ = true;
    next_.on_step(step);
}

}  // namespace mha
