// The data's seeded randomness: every draw of the datasets (a synthetic image's label and noise, a
// class's pattern, an epoch's permutation, an image's crop and flip) comes from a stream that is a
// pure function of (seed, stream, value), so that what a position holds does not depend on which
// thread or rank reads it, or when (executor/data.hpp's position contract). splitmix64
// (executor/synthetic.hpp) both hashes (seed, stream, value) into a state and steps it.
#pragma once

#include <cstdint>

#include "executor/synthetic.hpp"

namespace epochcast {

/// Independent streams drawn from one seed, so that changing how one is used leaves the others.
enum class Stream : std::uint64_t { label = 1, image = 2, class_pattern = 3, permutation = 4, augment = 5 };

/// The state of stream `stream` at `value` under `seed`.
inline std::uint64_t hash_of(std::uint64_t seed, Stream stream, std::uint64_t value) {
    using synthetic::splitmix64;
    return splitmix64(splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(stream))) ^ value);
}

/// A splitmix64 generator from one hashed state; cheap to make per image.
class Rng {
public:
    explicit Rng(std::uint64_t state) : state_(state) {}
    std::uint64_t next() {
        using synthetic::splitmix64;
        state_ += synthetic::kGolden;
        return splitmix64(state_);
    }
    /// Uniform in [0, 1).
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
    double uniform(double low, double high) { return low + (high - low) * uniform(); }
    /// Uniform integer in [low, high] (inclusive).
    std::int64_t integer(std::int64_t low, std::int64_t high) {
        return low + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(high - low + 1));
    }

private:
    std::uint64_t state_;
};

}  // namespace epochcast
