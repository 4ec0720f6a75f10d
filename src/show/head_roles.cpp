// The four role scores of every head, and their table.

#include "show/head_roles.h"

#include <algorithm>
#include <cmath>

#include "show/format.h"

namespace mha {

namespace {

// Mean over the queries that have keys of the summed weight on those keys; NaN for none.
struct Mean {
    double sum = 0.0;
    std::size_t count = 0;
    void add(double value) {
        sum += value;
        ++count;
    }
    double value() const { return count ? sum / double(count) : std::nan(""); }
};

std::string score(double value) { return std::isnan(value) ? "    -" : fixed(value, 3); }

}  // namespace

std::vector<HeadRoles> head_roles(const Tensor& weights, const std::vector<std::string>& t) {
    const Tensor packed = weights.contiguous();
    const std::size_t h = packed.size(1), n = packed.size(2);
    std::vector<HeadRoles> roles;
    for (std::size_t head = 0; head < h; ++head) {
        const float* w = packed.data() + head * n * n;  // (N, N) of batch 0
        Mean previous, first, same, induction;
        for (std::size_t i = 1; i < n; ++i) {
            previous.add(w[i * n + i - 1]);
            first.add(w[i * n]);
        }
        for (std::size_t i = 0; i < n; ++i) {
            double on_same = 0.0, on_next = 0.0;
            bool any_same = false, any_next = false;
            for (std::size_t j = 0; j < i; ++j) {
                if (t[j] != t[i]) continue;
                on_same += w[i * n + j];
                any_same = true;
                if (j >= 1 && t[j - 1] == t[i - 1]) {
                    on_next += w[i * n + j + 1];
                    any_next = true;
                }
            }
            if (any_same) same.add(on_same);
            if (any_next) induction.add(on_next);
        }
        roles.push_back({previous.value(), first.value(), same.value(), induction.value()});
    }
    return roles;
}

namespace {

// The role with the largest score, and that score (-1 when none qualifies).
std::pair<const char*, double> strongest(const HeadRoles& r) {
    const std::pair<const char*, double> scores[] = {{"previous", r.previous},
                                                     {"first", r.first},
                                                     {"same", r.same},
                                                     {"induction", r.induction}};
    std::pair<const char*, double> best{"", -1.0};
    for (const auto& [name, value] : scores) {
        if (!std::isnan(value) && value > best.second) best = {name, value};
    }
    return best;
}

void print_rows(std::ostream& out, const std::vector<std::vector<HeadRoles>>& layers,
                const std::vector<std::pair<std::size_t, std::size_t>>& order) {
    out << "\nhead roles on this text: the mean weight a head's queries put on the key that\n"
           "each role names (- : no query of this text qualifies; examples/models/README.md)\n"
        << "  layer head  previous  first   same  induction  strongest\n";
    for (const auto& [l, head] : order) {
        const HeadRoles& r = layers[l][head];
        out << "  " << l << "     " << head << "     " << score(r.previous) << "    "
            << score(r.first) << "  " << score(r.same) << "    " << score(r.induction) << "    "
            << strongest(r).first << "\n";
    }
}

}  // namespace

std::string strongest_role(const HeadRoles& roles) { return strongest(roles).first; }

std::string role_score(double value) { return std::isnan(value) ? "-" : fixed(value, 3); }

std::vector<std::pair<std::size_t, std::size_t>> head_order(
    const std::vector<std::vector<HeadRoles>>& layers, bool ranked) {
    std::vector<std::pair<std::size_t, std::size_t>> order;
    for (std::size_t l = 0; l < layers.size(); ++l)
        for (std::size_t head = 0; head < layers[l].size(); ++head) order.emplace_back(l, head);
    if (ranked) {
        std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
            return strongest(layers[a.first][a.second]).second >
                   strongest(layers[b.first][b.second]).second;
        });
    }
    return order;
}

void print_head_roles(std::ostream& out, const std::vector<std::vector<HeadRoles>>& layers) {
    print_rows(out, layers, head_order(layers, false));
}

void print_ranked_head_roles(std::ostream& out,
                             const std::vector<std::vector<HeadRoles>>& layers) {
    out << "\nranked by the strongest score";
    print_rows(out, layers, head_order(layers, true));
}

}  // namespace mha
