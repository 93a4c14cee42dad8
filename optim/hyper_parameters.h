#pragma once
// What a refused resume says about hyper-parameters: which one differs, and both values.
#include <string>
#include <vector>

namespace ruccl::optim {

/// Every hyper-parameter whose recorded value differs from the current one, as "expected
/// weight_decay 0.05 (the record's), got 0.5" joined by "; " (each number printed exactly, in its
/// shortest round-trip form); "expected N hyper-parameters (the record's), got M" when the counts
/// differ. Empty when they are equal. `names` names the current values in order.
std::string hyper_parameter_differences(const std::vector<std::string>& names,
                                        const std::vector<double>& recorded,
                                        const std::vector<double>& current);

}  // namespace ruccl::optim
