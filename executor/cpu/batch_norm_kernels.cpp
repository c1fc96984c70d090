// The CPU backend's own batch normalisation (see batch_norm_kernels.hpp).
#include "executor/cpu/batch_norm_kernels.hpp"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "executor/cpu/kernel_support.hpp"
#include "executor/cpu/kernels.hpp"

namespace epochcast::cpu {

namespace {

using kernel_support::kBlock;
using kernel_support::thread_share;
/// Pixels summed in fp32 registers before the partial sums move to fp64 (each register lane
/// then adds at most kStretch / 4 values).
constexpr int kStretch = 256;

EPOCHCAST_AVX512_WARNINGS_OFF

/// 16 bf16 (one nChw16c pixel) -> 16 fp32 (exact).
EPOCHCAST_AVX512_BF16 inline __m512 widen(__m256i bits) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
}

EPOCHCAST_AVX512_BF16 inline __m256i load_bits(const std::uint16_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

EPOCHCAST_AVX512_BF16 inline __m512 load_bf16(const std::uint16_t* p) { return widen(load_bits(p)); }

/// 16 fp32 -> bf16, nearest even (vcvtneps2bf16).
EPOCHCAST_AVX512_BF16 inline void store_bf16(std::uint16_t* p, __m512 v) {
    const __m256bh rounded = _mm512_cvtneps_pbh(v);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), reinterpret_cast<const __m256i&>(rounded));
}

/// 16 per-channel sums in fp64 (one channel block), fed with fp32 partial sums.
struct BlockSums {
    __m512d low;   ///< channels 0-7
    __m512d high;  ///< channels 8-15

    EPOCHCAST_AVX512_BF16 BlockSums() : low(_mm512_setzero_pd()), high(_mm512_setzero_pd()) {}
    EPOCHCAST_AVX512_BF16 void add(__m512 v) {
        low = _mm512_add_pd(low, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
        high = _mm512_add_pd(high, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
    }
    EPOCHCAST_AVX512_BF16 void store(double* sums) const {
        _mm512_storeu_pd(sums, low);
        _mm512_storeu_pd(sums + 8, high);
    }
};

/// The forward's per-channel affine map t = x scale + shift for block b: scale = gamma inv_std,
/// shift = beta - mean scale. The backward's recomputed ReLU gate calls this same function, so
/// that it sees the forward's t bit for bit.
struct Affine {
    __m512 scale;
    __m512 shift;
};

EPOCHCAST_AVX512_BF16 inline Affine affine_of(const BatchNormChannels& channels, int b) {
    const __m512 scale =
        _mm512_mul_ps(_mm512_loadu_ps(channels.gamma + b * kBlock), _mm512_loadu_ps(channels.inv_std + b * kBlock));
    return {scale, _mm512_fnmadd_ps(_mm512_loadu_ps(channels.mean + b * kBlock), scale,
                                    _mm512_loadu_ps(channels.beta + b * kBlock))};
}

EPOCHCAST_AVX512_BF16 inline __m512 pre_activation(__m512 x, const Affine& affine) {
    return _mm512_fmadd_ps(x, affine.scale, affine.shift);
}

using Range = kernel_support::Share<std::int64_t>;

/// Elements of one (image, channel block) row.
std::int64_t row_elements(const BatchNormGeometry& g) { return std::int64_t{g.pixels} * kBlock; }

/// The row of image n, channel block b.
std::int64_t row_offset(const BatchNormGeometry& g, int n, int b) {
    return (std::int64_t{n} * (g.channels / kBlock) + b) * row_elements(g);
}

/// Statistics of channel blocks [begin, end): sums of x and x^2, fp32 within a stretch and fp64
/// across stretches, so that variance = E[x^2] - mean^2 is formed in fp64. Within a stretch each
/// fp32 lane adds 64 bf16 values (8 significant bits, squares 16): close to exact.
EPOCHCAST_AVX512_BF16 void statistics_of_blocks(const BatchNormGeometry& g, const std::uint16_t* x, Range blocks,
                                                float* mean, float* variance) {
    const double values = double(g.batch) * g.pixels;
    for (auto b = static_cast<int>(blocks.begin); b < blocks.end; ++b) {
        BlockSums sums, sums_of_squares;
        for (int n = 0; n < g.batch; ++n) {
            const std::uint16_t* row = x + row_offset(g, n, b);
            for (int p0 = 0; p0 < g.pixels; p0 += kStretch) {
                const int p1 = std::min(g.pixels, p0 + kStretch);
                __m512 s[4], q[4];
                for (int u = 0; u < 4; ++u) s[u] = q[u] = _mm512_setzero_ps();
                int p = p0;
                for (; p + 4 <= p1; p += 4) {
#pragma GCC unroll 4
                    for (int u = 0; u < 4; ++u) {
                        const __m512 d = load_bf16(row + std::int64_t{p + u} * kBlock);
                        s[u] = _mm512_add_ps(s[u], d);
                        q[u] = _mm512_fmadd_ps(d, d, q[u]);
                    }
                }
                for (; p < p1; ++p) {
                    const __m512 d = load_bf16(row + std::int64_t{p} * kBlock);
                    s[0] = _mm512_add_ps(s[0], d);
                    q[0] = _mm512_fmadd_ps(d, d, q[0]);
                }
                sums.add(_mm512_add_ps(_mm512_add_ps(s[0], s[1]), _mm512_add_ps(s[2], s[3])));
                sums_of_squares.add(_mm512_add_ps(_mm512_add_ps(q[0], q[1]), _mm512_add_ps(q[2], q[3])));
            }
        }
        double sum[kBlock], squares[kBlock];
        sums.store(sum);
        sums_of_squares.store(squares);
        for (int c = 0; c < kBlock; ++c) {
            const double m = sum[c] / values;
            mean[b * kBlock + c] = static_cast<float>(m);
            variance[b * kBlock + c] = static_cast<float>(std::max(squares[c] / values - m * m, 0.0));
        }
    }
}

template <bool kShortcut, bool kRelu>
EPOCHCAST_AVX512_BF16 void forward_rows(const BatchNormGeometry& g, const std::uint16_t* x,
                                        const BatchNormChannels& channels, const std::uint16_t* shortcut,
                                        std::uint16_t* y, Range rows) {
    const int blocks = g.channels / kBlock;
    const __m512 zero = _mm512_setzero_ps();
    for (std::int64_t r = rows.begin; r < rows.end; ++r) {
        const Affine affine = affine_of(channels, static_cast<int>(r % blocks));
        const std::int64_t offset = r * row_elements(g);
        const std::uint16_t* in = x + offset;
        const std::uint16_t* add = kShortcut ? shortcut + offset : nullptr;
        std::uint16_t* out = y + offset;
        for (std::int64_t e = 0; e < row_elements(g); e += kBlock) {
            __m512 t = pre_activation(load_bf16(in + e), affine);
            if constexpr (kShortcut) t = _mm512_add_ps(t, load_bf16(add + e));
            if constexpr (kRelu) t = _mm512_max_ps(t, zero);
            store_bf16(out + e, t);
        }
    }
}

/// The gradient gated by the ReLU, for one pixel: dy where the ReLU passed it, else 0.
template <ReluGate kGate>
EPOCHCAST_AVX512_BF16 inline __m512 gated(__m512 x, std::uint16_t* dy, const std::uint16_t* y, const Affine& affine) {
    const __m256i bits = load_bits(dy);
    if constexpr (kGate == ReluGate::none) {
        return widen(bits);
    } else if constexpr (kGate == ReluGate::recompute) {
        const __mmask16 passed = _mm512_cmp_ps_mask(pre_activation(x, affine), _mm512_setzero_ps(), _CMP_GT_OQ);
        return _mm512_maskz_mov_ps(passed, widen(bits));
    } else {
        const __mmask16 passed = _mm512_cmp_ps_mask(load_bf16(y), _mm512_setzero_ps(), _CMP_GT_OQ);
        const __m256i kept = _mm256_maskz_mov_epi16(passed, bits);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dy), kept);
        return widen(kept);
    }
}

/// Sums of channel blocks [begin, end): dbeta = sum g, dgamma = inv_std sum g (x - mean).
template <ReluGate kGate>
EPOCHCAST_AVX512_BF16 void sums_of_blocks(const BatchNormGeometry& g, const std::uint16_t* x, std::uint16_t* dy,
                                          const BatchNormChannels& channels, const std::uint16_t* y, Range blocks,
                                          float* dgamma, float* dbeta) {
    for (auto b = static_cast<int>(blocks.begin); b < blocks.end; ++b) {
        const Affine affine = affine_of(channels, b);
        const __m512 mean = _mm512_loadu_ps(channels.mean + b * kBlock);
        BlockSums sums, sums_x;
        for (int n = 0; n < g.batch; ++n) {
            const std::int64_t offset = row_offset(g, n, b);
            for (int p0 = 0; p0 < g.pixels; p0 += kStretch) {
                const int p1 = std::min(g.pixels, p0 + kStretch);
                __m512 s[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
                __m512 sx[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
                for (int p = p0; p < p1; ++p) {
                    const std::int64_t e = offset + std::int64_t{p} * kBlock;
                    const __m512 xv = load_bf16(x + e);
                    const __m512 gv = gated<kGate>(xv, dy + e, kGate == ReluGate::output ? y + e : nullptr, affine);
                    s[p & 1] = _mm512_add_ps(s[p & 1], gv);
                    sx[p & 1] = _mm512_fmadd_ps(gv, _mm512_sub_ps(xv, mean), sx[p & 1]);
                }
                sums.add(_mm512_add_ps(s[0], s[1]));
                sums_x.add(_mm512_add_ps(sx[0], sx[1]));
            }
        }
        double sum[kBlock], sum_x[kBlock];
        sums.store(sum);
        sums_x.store(sum_x);
        for (int c = 0; c < kBlock; ++c) {
            dbeta[b * kBlock + c] = static_cast<float>(sum[c]);
            dgamma[b * kBlock + c] = static_cast<float>(sum_x[c] * channels.inv_std[b * kBlock + c]);
        }
    }
}

/// dx = a g - k (x - mean) - c with a = gamma inv_std, k = a inv_std dgamma / M, c = a dbeta / M.
template <ReluGate kGate>
EPOCHCAST_AVX512_BF16 void data_rows(const BatchNormGeometry& g, const std::uint16_t* x, const std::uint16_t* dy,
                                     const BatchNormChannels& channels, const float* dgamma, const float* dbeta,
                                     std::uint16_t* dx, Range rows) {
    const int blocks = g.channels / kBlock;
    const __m512 per_value = _mm512_set1_ps(static_cast<float>(1.0 / (double(g.batch) * g.pixels)));
    for (std::int64_t r = rows.begin; r < rows.end; ++r) {
        const int b = static_cast<int>(r % blocks);
        const Affine affine = affine_of(channels, b);
        const __m512 mean = _mm512_loadu_ps(channels.mean + b * kBlock);
        const __m512 inv_std = _mm512_loadu_ps(channels.inv_std + b * kBlock);
        const __m512 a = affine.scale;  // gamma inv_std
        const __m512 k =
            _mm512_mul_ps(_mm512_mul_ps(a, inv_std), _mm512_mul_ps(_mm512_loadu_ps(dgamma + b * kBlock), per_value));
        const __m512 c = _mm512_mul_ps(a, _mm512_mul_ps(_mm512_loadu_ps(dbeta + b * kBlock), per_value));
        const std::int64_t offset = r * row_elements(g);
        for (std::int64_t e = offset; e < offset + row_elements(g); e += kBlock) {
            const __m512 xv = load_bf16(x + e);
            // const_cast: gated<none/recompute> only reads dy.
            const __m512 gv = gated<kGate>(xv, const_cast<std::uint16_t*>(dy + e), nullptr, affine);
            store_bf16(dx + e, _mm512_sub_ps(_mm512_fnmadd_ps(k, _mm512_sub_ps(xv, mean), _mm512_mul_ps(a, gv)), c));
        }
    }
}

EPOCHCAST_AVX512_WARNINGS_ON

void require(const BatchNormGeometry& g) {
    if (!batch_norm_applies(g)) {
        throw std::logic_error("batch_norm kernels: geometry " + std::to_string(g.batch) + " x " +
                               std::to_string(g.channels) + " x " + std::to_string(g.pixels) +
                               " pixels is not one they compute (or the CPU lacks AVX512-BF16)");
    }
}

}  // namespace

bool batch_norm_applies(const BatchNormGeometry& g) {
    static const bool has_isa = cpu_has_avx512_bf16();
    return has_isa && g.batch > 0 && g.pixels > 0 && g.channels > 0 && g.channels % kBlock == 0;
}

void batch_norm_statistics_bf16(const BatchNormGeometry& g, const std::uint16_t* x, float* mean, float* variance,
                                int threads) {
    require(g);
#pragma omp parallel num_threads(std::max(threads, 1))
    statistics_of_blocks(g, x, thread_share<std::int64_t>(g.channels / kBlock), mean, variance);
}

void batch_norm_forward_bf16(const BatchNormGeometry& g, const std::uint16_t* x, const BatchNormChannels& channels,
                             const std::uint16_t* shortcut, bool relu, std::uint16_t* y, int threads) {
    require(g);
    const std::int64_t rows = std::int64_t{g.batch} * (g.channels / kBlock);
#pragma omp parallel num_threads(std::max(threads, 1))
    {
        const Range mine = thread_share(rows);
        if (shortcut != nullptr) {
            if (relu) forward_rows<true, true>(g, x, channels, shortcut, y, mine);
            else forward_rows<true, false>(g, x, channels, shortcut, y, mine);
        } else {
            if (relu) forward_rows<false, true>(g, x, channels, nullptr, y, mine);
            else forward_rows<false, false>(g, x, channels, nullptr, y, mine);
        }
    }
}

void batch_norm_backward_sums_bf16(const BatchNormGeometry& g, const std::uint16_t* x, std::uint16_t* dy,
                                   const BatchNormChannels& channels, ReluGate gate, const std::uint16_t* y,
                                   float* dgamma, float* dbeta, int threads) {
    require(g);
    if (gate == ReluGate::output && y == nullptr)
        throw std::logic_error("batch_norm_backward_sums_bf16: ReluGate::output needs y");
#pragma omp parallel num_threads(std::max(threads, 1))
    {
        const Range mine = thread_share<std::int64_t>(g.channels / kBlock);
        switch (gate) {
            case ReluGate::none:
                sums_of_blocks<ReluGate::none>(g, x, dy, channels, y, mine, dgamma, dbeta);
                break;
            case ReluGate::recompute:
                sums_of_blocks<ReluGate::recompute>(g, x, dy, channels, y, mine, dgamma, dbeta);
                break;
            case ReluGate::output:
                sums_of_blocks<ReluGate::output>(g, x, dy, channels, y, mine, dgamma, dbeta);
                break;
        }
    }
}

void batch_norm_backward_data_bf16(const BatchNormGeometry& g, const std::uint16_t* x, const std::uint16_t* dy,
                                   const BatchNormChannels& channels, ReluGate gate, const float* dgamma,
                                   const float* dbeta, std::uint16_t* dx, int threads) {
    require(g);
    if (gate == ReluGate::output) {
        throw std::logic_error("batch_norm_backward_data_bf16: after ReluGate::output dy is already gated; pass none");
    }
    const std::int64_t rows = std::int64_t{g.batch} * (g.channels / kBlock);
#pragma omp parallel num_threads(std::max(threads, 1))
    {
        const Range mine = thread_share(rows);
        if (gate == ReluGate::recompute) data_rows<ReluGate::recompute>(g, x, dy, channels, dgamma, dbeta, dx, mine);
        else data_rows<ReluGate::none>(g, x, dy, channels, dgamma, dbeta, dx, mine);
    }
}

}  // namespace epochcast::cpu
