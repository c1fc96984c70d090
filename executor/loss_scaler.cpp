#include "executor/loss_scaler.hpp"

#include <algorithm>
#include <string>

#include "model/errors.hpp"

namespace epochcast {

LossScaler::LossScaler(double initial_scale, std::int64_t growth_interval)
    : scale_(initial_scale), growth_interval_(growth_interval) {
    if (!(initial_scale >= kMinimumScale)) {
        throw InputError("loss scale " + std::to_string(initial_scale) + " is invalid; use at least 1");
    }
    if (growth_interval < 1) {
        throw InputError("loss-scale growth interval " + std::to_string(growth_interval) +
                         " is invalid; use at least 1 step");
    }
}

bool LossScaler::update(bool overflowed) {
    if (overflowed) {
        if (scale_ <= kMinimumScale) {
            throw RunError("fp16 gradients overflow even at the minimum loss scale (" + std::to_string(skipped_ + 1) +
                           " steps skipped in all): training diverged; lower --lr");
        }
        scale_ = std::max(kMinimumScale, scale_ / 2);
        clean_steps_ = 0;
        ++skipped_;
        return false;
    }
    if (++clean_steps_ == growth_interval_) {
        scale_ *= 2;
        clean_steps_ = 0;
    }
    return true;
}

}  // namespace epochcast
