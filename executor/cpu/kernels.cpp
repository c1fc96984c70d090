// The CPU backend's own kernels (see kernels.hpp).
#include "executor/cpu/kernels.hpp"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "executor/bf16.hpp"
#include "executor/cpu/kernel_support.hpp"

namespace epochcast::cpu {

namespace {

using kernel_support::kBlock;
using kernel_support::thread_share;
constexpr int kPairBytes = 2 * kBlock * 2;  ///< one packed pair row: 16 channels x 2 k x bf16
constexpr int kMaxPairsPerChunk = 256;
constexpr int kMinPairsPerChunk = 16;
/// Packed input pairs of one chunk, all input blocks, are kept within about 512 KiB (half of a
/// Zen 4 or Sapphire Rapids core's L2): in_blocks x pairs x 64 bytes.
constexpr int kChunkPairBlocks = 8192;
constexpr std::size_t kAlignment = 64;
/// Pairs an image must have for the path that reads x in place: its chunks end at the image's
/// end, and a tile loads and stores its 16 sums once a chunk, so small images (ResNet-50's last
/// stages at 64 px: 8 x 8 down to 2 x 2 pixels) take the packed path, whose chunks span images.
constexpr int kMinRawPairs = 64;

int pairs_per_chunk(int in_blocks) {
    return std::clamp(kChunkPairBlocks / in_blocks, kMinPairsPerChunk, kMaxPairsPerChunk);
}

std::size_t align_up(std::size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

/// Per thread: the input chunk packed for every input block, then one output block's chunk.
std::size_t thread_scratch_bytes(const Conv1x1Geometry& g) {
    const int in_blocks = g.in_channels / kBlock;
    const int pairs = pairs_per_chunk(in_blocks);
    return align_up(std::size_t(in_blocks) * pairs * kPairBytes) + align_up(std::size_t(pairs) * kPairBytes);
}

/// Where the two k of each pair of a chunk lie: image n and pixel p (n = -1: past the end, zeros).
struct PairPositions {
    std::array<int, kMaxPairsPerChunk> first_image, first_pixel, second_image, second_pixel;
};

void locate_pairs(std::int64_t first_k, int pairs, std::int64_t k_total, int pixels, PairPositions& at) {
    for (int j = 0; j < pairs; ++j) {
        const std::int64_t k = first_k + 2 * j;
        at.first_image[j] = static_cast<int>(k / pixels);
        at.first_pixel[j] = static_cast<int>(k % pixels);
        const bool second = k + 1 < k_total;
        at.second_image[j] = second ? static_cast<int>((k + 1) / pixels) : -1;
        at.second_pixel[j] = second ? static_cast<int>((k + 1) % pixels) : 0;
    }
}

/// Two adjacent nChw16c rows (t[k][0..15], t[k+1][0..15]) in one register -> the pair form:
/// position q takes element q / 2 of the first row (q even) or 16 + q / 2 (q odd).
alignas(64) constexpr std::uint16_t kAdjacentRowsInterleave[32] = {0,  16, 1,  17, 2,  18, 3,  19, 4,  20, 5,
                                                                   21, 6,  22, 7,  23, 8,  24, 9,  25, 10, 26,
                                                                   11, 27, 12, 28, 13, 29, 14, 30, 15, 31};

/// Two rows in the low halves of two registers -> the pair form: position q takes element q / 2
/// of the first row (q even) or of the second (index 32 + q / 2 of a two-register permute).
alignas(64) constexpr std::uint16_t kTwoRowsInterleave[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                                              37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                                              11, 43, 12, 44, 13, 45, 14, 46, 15, 47};

/// Pair form of `pairs` pairs of adjacent rows starting at `rows` (pairs x 64 contiguous bytes).
EPOCHCAST_AVX512_BF16 void pack_adjacent_pairs(const std::uint16_t* rows, int pairs, std::uint16_t* out) {
    const __m512i interleave = _mm512_load_si512(kAdjacentRowsInterleave);
    for (int j = 0; j < pairs; ++j) {
        const __m512i both = _mm512_loadu_si512(rows + std::int64_t{j} * 2 * kBlock);
        _mm512_store_si512(out + std::int64_t{j} * 2 * kBlock, _mm512_permutexvar_epi16(interleave, both));
    }
}

/// Packs block `block` (of `blocks`) of an nChw16c tensor over the chunk's pairs: out row j holds,
/// for channel c of the block, t[k][c] at 16-bit position 2c and t[k+1][c] at 2c + 1.
EPOCHCAST_AVX512_BF16 void pack_pairs(const std::uint16_t* tensor, int blocks, int block, int pixels,
                                      const PairPositions& at, int pairs, std::uint16_t* out) {
    const __m512i interleave = _mm512_load_si512(kTwoRowsInterleave);
    constexpr __mmask32 kOneRow = 0xffff;  // 16 bf16: the rest of the register is zero
    const std::int64_t image_stride = std::int64_t{blocks} * pixels * kBlock;
    const std::int64_t block_offset = std::int64_t{block} * pixels * kBlock;
    for (int j = 0; j < pairs; ++j) {
        const std::uint16_t* first =
            tensor + at.first_image[j] * image_stride + block_offset + at.first_pixel[j] * kBlock;
        const __m512i a = _mm512_maskz_loadu_epi16(kOneRow, first);
        __m512i b = _mm512_setzero_si512();
        if (at.second_image[j] >= 0) {
            const std::uint16_t* second =
                tensor + at.second_image[j] * image_stride + block_offset + at.second_pixel[j] * kBlock;
            b = _mm512_maskz_loadu_epi16(kOneRow, second);
        }
        _mm512_store_si512(out + std::int64_t{j} * 2 * kBlock, _mm512_permutex2var_epi16(a, interleave, b));
    }
}

/// Cache lines to fetch into L2 while a tile computes: `lines` lines from `from`, one a pair.
struct Prefetch {
    const std::uint16_t* from = nullptr;
    int lines = 0;
};

/// Output rows per tile: 8 rows of an output block (one half of dy's packed pairs) against
/// kTileInBlocks input blocks. Each broadcast of a dy pair then feeds two dot products; a 16 x 16
/// tile, one product per broadcast, was load-bound (slower in L1 on Zen 4; docs/performance.md).
constexpr int kTileRows = 8;
constexpr int kTileInBlocks = 2;

/// How a tile finds x's pair j of an input block, from x_pairs:
enum class XRows {
    packed,   ///< pair form, at pair j
    raw,      ///< two successive nChw16c rows at 2j, 2j + 1: interleaved in the tile
    shifted,  ///< pair form shifted by one row: the odd half of pair j and the even half of pair j + 1
};

/// Pair j of one input block from x_pairs (the block's pairs), as `kRows` says; `carried` holds
/// pair j of the pair form across calls (XRows::shifted: load pair 0 into it first).
template <XRows kRows>
EPOCHCAST_AVX512_BF16 inline __m512i x_pair(const std::uint16_t* x_pairs, std::int64_t j, __m512i& carried) {
    __m512i rows = _mm512_loadu_si512(x_pairs + (j + (kRows == XRows::shifted ? 1 : 0)) * 2 * kBlock);
    if constexpr (kRows == XRows::raw) {
        return _mm512_permutexvar_epi16(_mm512_load_si512(kAdjacentRowsInterleave), rows);
    } else if constexpr (kRows == XRows::shifted) {
        // Position 2c: element 2c + 1 of pair j (row 2j + 1, channel c); 2c + 1: element 2c of pair
        // j + 1 (row 2j + 2, channel c).
        alignas(64) static constexpr std::uint16_t kShift[32] = {1,  32, 3,  34, 5,  36, 7,  38, 9,  40, 11,
                                                                 42, 13, 44, 15, 46, 17, 48, 19, 50, 21, 52,
                                                                 23, 54, 25, 56, 27, 58, 29, 60, 31, 62};
        const __m512i shifted = _mm512_permutex2var_epi16(carried, _mm512_load_si512(kShift), rows);
        carried = rows;
        return shifted;
    } else {
        return rows;
    }
}

/// The output tile dw[o][i] (row stride ld), 8 rows o by kInBlocks x 16 columns i, += the sum over
/// the chunk's pairs; `first`: the tile starts from zero instead of its stored value; `bf16`, when
/// not null (the last chunk), also receives the tile rounded to bf16, at the same offsets as dw.
///   x_pairs: pairs x 32 bf16 of each input block (blocks x_block_stride apart), as XRows says
///   dy_pairs: pairs x 16 bf16 pairs (32 bits each) of the packed output block, from the tile's
///            first row
template <XRows kRows, int kInBlocks>
EPOCHCAST_AVX512_BF16 void tile_rows(const std::uint16_t* x_pairs, std::int64_t x_block_stride,
                                     const std::uint32_t* dy_pairs, int pairs, float* dw, std::uint16_t* bf16,
                                     std::int64_t ld, bool first, Prefetch a, Prefetch b) {
    constexpr int kLineElements = 32;  // 64 bytes of bf16
    __m512 acc[kTileRows][kInBlocks];
    __m512i carried[kInBlocks];
#pragma GCC unroll 2
    for (int c = 0; c < kInBlocks; ++c) {
        carried[c] =
            kRows == XRows::shifted ? _mm512_loadu_si512(x_pairs + c * x_block_stride) : _mm512_setzero_si512();
    }
#pragma GCC unroll 8
    for (int o = 0; o < kTileRows; ++o) {
#pragma GCC unroll 2
        for (int c = 0; c < kInBlocks; ++c) {
            acc[o][c] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(dw + o * ld + c * kBlock);
        }
    }
    for (int j = 0; j < pairs; ++j) {
        __m512bh x[kInBlocks];
#pragma GCC unroll 2
        for (int c = 0; c < kInBlocks; ++c) x[c] = (__m512bh)x_pair<kRows>(x_pairs + c * x_block_stride, j, carried[c]);
        const std::uint32_t* dy = dy_pairs + std::int64_t{j} * kBlock;
        if (j < a.lines) _mm_prefetch(reinterpret_cast<const char*>(a.from + j * kLineElements), _MM_HINT_T1);
        if (j < b.lines) _mm_prefetch(reinterpret_cast<const char*>(b.from + j * kLineElements), _MM_HINT_T1);
#pragma GCC unroll 8
        for (int o = 0; o < kTileRows; ++o) {
            const __m512bh y = (__m512bh)_mm512_set1_epi32(static_cast<int>(dy[o]));
#pragma GCC unroll 2
            for (int c = 0; c < kInBlocks; ++c) acc[o][c] = _mm512_dpbf16_ps(acc[o][c], y, x[c]);
        }
    }
#pragma GCC unroll 8
    for (int o = 0; o < kTileRows; ++o) {
#pragma GCC unroll 2
        for (int c = 0; c < kInBlocks; ++c) _mm512_storeu_ps(dw + o * ld + c * kBlock, acc[o][c]);
    }
    if (bf16 == nullptr) return;
#pragma GCC unroll 8
    for (int o = 0; o < kTileRows; ++o) {
#pragma GCC unroll 2
        for (int c = 0; c < kInBlocks; ++c) {
            const __m256bh rounded = _mm512_cvtneps_pbh(acc[o][c]);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(bf16 + o * ld + c * kBlock),
                                reinterpret_cast<const __m256i&>(rounded));
        }
    }
}

/// Tiles in the order an output block takes them: both 8-row halves of the block, each against the
/// input blocks two at a time (one alone at the end when their count is odd).
struct TileOrder {
    int in_blocks;
    int per_half() const { return (in_blocks + kTileInBlocks - 1) / kTileInBlocks; }
    int count() const { return 2 * per_half(); }
    int half(int tile) const { return tile / per_half(); }
    int first_in_block(int tile) const { return tile % per_half() * kTileInBlocks; }
    int width(int tile) const { return std::min(kTileInBlocks, in_blocks - first_in_block(tile)); }
};

/// Where a tile writes: the fp32 rows of its output block (row 0, column 0), and the same block of
/// the bf16 copy on the last chunk (null otherwise).
struct TileTarget {
    float* dw_block = nullptr;
    std::uint16_t* bf16_block = nullptr;
};

/// Tile `tile` (TileOrder) of output block rows `to`, against x's input blocks from x_first (the
/// tile's first input block at x_first + first_in_block x x_block_stride).
template <XRows kRows>
EPOCHCAST_AVX512_BF16 void run_tile(const TileOrder& order, int tile, const std::uint16_t* x_first,
                                    std::int64_t x_block_stride, const std::uint32_t* dy_pairs, int pairs,
                                    TileTarget to, std::int64_t ld, bool first, Prefetch a = {}, Prefetch b = {}) {
    const int half = order.half(tile);
    const int ib = order.first_in_block(tile);
    const std::uint16_t* x = x_first + ib * x_block_stride;
    const std::int64_t at = half * kTileRows * ld + ib * kBlock;
    float* dw = to.dw_block + at;
    std::uint16_t* bf16 = to.bf16_block ? to.bf16_block + at : nullptr;
    const std::uint32_t* dy = dy_pairs + half * kTileRows;
    if (order.width(tile) == kTileInBlocks) {
        tile_rows<kRows, kTileInBlocks>(x, x_block_stride, dy, pairs, dw, bf16, ld, first, a, b);
    } else {
        tile_rows<kRows, 1>(x, x_block_stride, dy, pairs, dw, bf16, ld, first, a, b);
    }
}

/// One thread's share: output blocks [out_begin, out_end), every chunk of k.
///
/// With an even pixel count a pair (k, k + 1) never spans two images, and its two nChw16c rows are
/// adjacent in memory: the tile interleaves them itself and only dy is packed (once per output
/// block and chunk, reused by every input block). With an odd count (7 x 7) pairs cross images, and
/// x is packed too, once per chunk for every input block; so are small images (kMinRawPairs).
EPOCHCAST_AVX512_BF16 void weight_gradient_rows(const Conv1x1Geometry& g, const std::uint16_t* x,
                                                const std::uint16_t* dy, float* dw, std::uint16_t* dw_bf16,
                                                std::byte* scratch, int out_begin, int out_end) {
    const int in_blocks = g.in_channels / kBlock;
    const int out_blocks = g.out_channels / kBlock;
    const int chunk_pairs = pairs_per_chunk(in_blocks);
    auto* x_packed = reinterpret_cast<std::uint16_t*>(scratch);  // in_blocks x chunk_pairs x 32 (packed path)
    auto* dy_packed = reinterpret_cast<std::uint16_t*>(
        scratch + align_up(std::size_t(in_blocks) * chunk_pairs * kPairBytes));  // chunk_pairs x 32
    const auto* dy_pairs = reinterpret_cast<const std::uint32_t*>(dy_packed);
    // The output block's rows; the bf16 copy's too on the last chunk (`last`), which rounds the sums.
    auto block_rows = [&](int ob, bool last) {
        const std::int64_t at = std::int64_t{ob} * kBlock * g.in_channels;
        return TileTarget{dw + at, last && dw_bf16 ? dw_bf16 + at : nullptr};
    };
    const TileOrder order{in_blocks};

    if (g.pixels % 2 == 0 && g.pixels / 2 >= kMinRawPairs) {
        // Steps (image n, chunk from pair0, output block ob). While a step's tiles compute, they
        // fetch into L2 the dy rows of the next step (spread over the input blocks' tiles) and, in
        // the chunk's last output block, the x rows of the next chunk, so that neither the packing
        // nor the first tiles of a chunk wait on memory.
        const int image_pairs = g.pixels / 2;
        auto x_rows = [&](int n, int pair0, int ib) {
            return x + ((std::int64_t{n} * in_blocks + ib) * g.pixels + 2 * pair0) * kBlock;
        };
        auto dy_rows = [&](int n, int pair0, int ob) {
            return dy + ((std::int64_t{n} * out_blocks + ob) * g.pixels + 2 * pair0) * kBlock;
        };
        for (int n = 0; n < g.batch; ++n) {
            for (int pair0 = 0; pair0 < image_pairs; pair0 += chunk_pairs) {
                const int pairs = std::min(chunk_pairs, image_pairs - pair0);
                const bool first = n == 0 && pair0 == 0;
                const bool last = n + 1 == g.batch && pair0 + chunk_pairs >= image_pairs;
                // The next chunk (none after the last: next_pairs 0).
                const bool same_image = pair0 + chunk_pairs < image_pairs;
                const int next_n = same_image ? n : n + 1;
                const int next_pair0 = same_image ? pair0 + chunk_pairs : 0;
                const int next_pairs = next_n < g.batch ? std::min(chunk_pairs, image_pairs - next_pair0) : 0;
                for (int ob = out_begin; ob < out_end; ++ob) {
                    pack_adjacent_pairs(dy_rows(n, pair0, ob), pairs, dy_packed);
                    const bool last_ob = ob + 1 == out_end;
                    const std::uint16_t* next_dy =
                        last_ob ? dy_rows(next_n, next_pair0, out_begin) : dy_rows(n, pair0, ob + 1);
                    const int next_dy_lines = last_ob ? next_pairs : pairs;
                    const int dy_lines_per_tile = (next_dy_lines + order.count() - 1) / order.count();
                    for (int tile = 0; tile < order.count(); ++tile) {
                        const int dy_from = std::min(tile * dy_lines_per_tile, next_dy_lines);
                        const Prefetch dy_ahead{next_dy + std::int64_t{dy_from} * 2 * kBlock,
                                                std::min(dy_lines_per_tile, next_dy_lines - dy_from)};
                        // Each input block's next rows once: by the first half's tiles, then the
                        // second's (the second input block of a pair).
                        const int ahead_block = order.first_in_block(tile) + order.half(tile);
                        const bool fetch_x = last_ob && next_pairs > 0 && ahead_block < in_blocks;
                        const Prefetch x_ahead{fetch_x ? x_rows(next_n, next_pair0, ahead_block) : nullptr,
                                               fetch_x ? next_pairs : 0};
                        run_tile<XRows::raw>(order, tile, x_rows(n, pair0, 0), std::int64_t{g.pixels} * kBlock,
                                             dy_pairs, pairs, block_rows(ob, last), g.in_channels, first, dy_ahead,
                                             x_ahead);
                    }
                }
            }
        }
        return;
    }
    const std::int64_t k_total = std::int64_t{g.batch} * g.pixels;
    const std::int64_t pairs_total = (k_total + 1) / 2;
    PairPositions at;
    for (std::int64_t pair0 = 0; pair0 < pairs_total; pair0 += chunk_pairs) {
        const int pairs = static_cast<int>(std::min<std::int64_t>(chunk_pairs, pairs_total - pair0));
        locate_pairs(2 * pair0, pairs, k_total, g.pixels, at);
        for (int ib = 0; ib < in_blocks; ++ib) {
            pack_pairs(x, in_blocks, ib, g.pixels, at, pairs, x_packed + std::int64_t{ib} * chunk_pairs * 2 * kBlock);
        }
        for (int ob = out_begin; ob < out_end; ++ob) {
            pack_pairs(dy, out_blocks, ob, g.pixels, at, pairs, dy_packed);
            for (int tile = 0; tile < order.count(); ++tile) {
                run_tile<XRows::packed>(order, tile, x_packed, std::int64_t{chunk_pairs} * 2 * kBlock, dy_pairs, pairs,
                                        block_rows(ob, pair0 + chunk_pairs >= pairs_total), g.in_channels, pair0 == 0);
            }
        }
    }
}

std::atomic<bool> own_kernels{true};

}  // namespace

bool cpu_has_avx512_bf16() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
}

void set_own_kernels_enabled(bool enabled) { own_kernels = enabled; }
bool own_kernels_enabled() { return own_kernels; }

bool conv1x1_weight_gradient_applies(const Conv1x1Geometry& g) {
    static const bool has_isa = cpu_has_avx512_bf16();
    return has_isa && g.batch > 0 && g.pixels > 0 && g.in_channels > 0 && g.out_channels > 0 &&
           g.in_channels % kBlock == 0 && g.out_channels % kBlock == 0;
}

std::size_t conv1x1_weight_gradient_scratch_bytes(const Conv1x1Geometry& g, int threads) {
    if (g.in_channels < kBlock) return 0;
    return std::size_t(std::max(threads, 1)) * thread_scratch_bytes(g);
}

void conv1x1_weight_gradient_bf16(const Conv1x1Geometry& g, const std::uint16_t* x, const std::uint16_t* dy, float* dw,
                                  std::byte* scratch, int threads, std::uint16_t* dw_bf16) {
    if (!conv1x1_weight_gradient_applies(g)) {
        throw std::logic_error("conv1x1_weight_gradient_bf16: geometry or CPU not supported");
    }
    const int out_blocks = g.out_channels / kBlock;
    const std::size_t per_thread = thread_scratch_bytes(g);
#pragma omp parallel num_threads(std::max(threads, 1))
    {
        const auto [begin, end] = thread_share(out_blocks);
        if (begin < end) {
            weight_gradient_rows(g, x, dy, dw, dw_bf16, scratch + per_thread * omp_get_thread_num(), begin, end);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The 3x3 weight gradient

namespace {

/// Pairs of padded positions per chunk: x's pairs of one chunk and input block (128 + W + 2 pairs
/// of 64 bytes: 12 KiB at 56 x 56) and dy's (8 KiB) stay in L1 while the nine taps read them.
constexpr int kPairsPerChunk3x3 = 128;
constexpr int kTaps = 9;

/// Where the pair forms of x and dy put things. Padded position q = h Wp + w with Wp = W + 1: the
/// pixel (h, w) for w < W, zero for w = W, so that a tap (a, b) reads x at position
/// q + (a - 1) Wp + (b - 1) for dy's position q, and falls on a zero whenever it leaves the map
/// sideways; a zero row above and below (and one zero pixel beyond each) catch the rest. x's padded
/// index r = q + Wp + 1 starts at the zero pixel before the zero row; its pair m holds indices
/// (2m, 2m + 1). A tap that starts at an odd index reads pairs shifted by one (XRows::shifted).
/// dy's pair j holds positions (2j, 2j + 1).
struct Padding3x3 {
    std::int64_t row_stride = 0;  ///< Wp = W + 1
    std::int64_t positions = 0;   ///< H x Wp: the positions dy's pairs run over
    int image_pairs = 0;          ///< dy's pairs per map: ceil(positions / 2)
    std::int64_t origin = 0;      ///< x's padded index of position 0: Wp + 1
};

Padding3x3 padding_3x3(const Conv3x3Geometry& g) {
    Padding3x3 p;
    p.row_stride = g.width + 1;
    p.positions = std::int64_t{g.height} * p.row_stride;
    p.image_pairs = static_cast<int>((p.positions + 1) / 2);
    p.origin = p.row_stride + 1;
    return p;
}

/// x's pairs the taps read for a chunk of `pairs` of dy's pairs, per input block: from the
/// chunk's first pair on, Wp + 1 more for the last tap's shift and one more for the shifted form
/// (and one to spare).
std::int64_t x_pairs_of_chunk(const Padding3x3& p, int pairs) { return pairs + p.row_stride + 3; }

/// Per thread: x's pairs of one chunk for every input block, then dy's pairs of one output block.
std::size_t chunk_scratch_bytes(const Conv3x3Geometry& g) {
    return align_up(std::size_t(g.in_channels / kBlock) * x_pairs_of_chunk(padding_3x3(g), kPairsPerChunk3x3) *
                    kPairBytes) +
           align_up(std::size_t(kPairsPerChunk3x3) * kPairBytes);
}

std::size_t tap_planes_bytes(const Conv3x3Geometry& g) {
    return align_up(std::size_t(kTaps) * g.out_channels * g.in_channels * sizeof(float));
}

/// The 16 channels at `at` in the low half of a register, or zeros.
EPOCHCAST_AVX512_BF16 inline __m512i load_pixel(const std::uint16_t* at) {
    return at ? _mm512_maskz_loadu_epi16(0xffff, at) : _mm512_setzero_si512();
}

/// `pairs` pairs of one map (nChw16c rows) in pair form, from padded position `from` on. A pair
/// inside one row of the map is one load of two adjacent rows; a pair that touches padding loads
/// its pixels one by one.
EPOCHCAST_AVX512_BF16 void pair_map(const Conv3x3Geometry& g, const Padding3x3& p, const std::uint16_t* map,
                                    std::int64_t from, std::int64_t pairs, std::uint16_t* out) {
    const __m512i two_rows = _mm512_load_si512(kTwoRowsInterleave);
    const __m512i adjacent = _mm512_load_si512(kAdjacentRowsInterleave);
    // Position (h, w) of padded position q, without a division a pair: w < 0 (with h = 0) stands for
    // the padding before the first row, w = W for each row's padding pixel, h = H past the map.
    std::int64_t h = from > 0 ? from / p.row_stride : 0;
    std::int64_t w = from > 0 ? from - h * p.row_stride : from;
    auto pixel = [&](std::int64_t row, std::int64_t column) -> const std::uint16_t* {
        return column >= 0 && column < g.width && row < g.height ? map + (row * g.width + column) * kBlock : nullptr;
    };
    for (std::int64_t m = 0; m < pairs; ++m) {
        __m512i pair;
        if (w >= 0 && w + 1 < g.width && h < g.height) {
            pair = _mm512_permutexvar_epi16(adjacent, _mm512_loadu_si512(map + (h * g.width + w) * kBlock));
        } else {
            const bool wraps = w + 1 == p.row_stride;
            pair = _mm512_permutex2var_epi16(load_pixel(pixel(h, w)), two_rows,
                                             load_pixel(wraps ? pixel(h + 1, 0) : pixel(h, w + 1)));
        }
        _mm512_store_si512(out + m * 2 * kBlock, pair);
        if ((w += 2) >= p.row_stride) {
            w -= p.row_stride;
            ++h;
        }
    }
}

/// One thread's share: output blocks [out_begin, out_end) of the nine tap planes (tap t = 3a + b:
/// an O x I fp32 matrix at taps + t O I). For each chunk the thread writes x's pairs (every input
/// block) and then, per output block, dy's pairs into its own scratch, which stays in L2: written
/// to memory for the whole tensor instead, the pair forms cost a sizeable share of the kernel's time
/// (docs/performance.md).
EPOCHCAST_AVX512_BF16 void weight_gradient_3x3_rows(const Conv3x3Geometry& g, const Padding3x3& p,
                                                    const std::uint16_t* x, const std::uint16_t* dy, float* taps,
                                                    std::byte* scratch, int out_begin, int out_end) {
    const int in_blocks = g.in_channels / kBlock;
    const int out_blocks = g.out_channels / kBlock;
    const std::int64_t map = std::int64_t{g.height} * g.width * kBlock;
    const std::int64_t tap_plane = std::int64_t{g.out_channels} * g.in_channels;
    const std::int64_t x_block = x_pairs_of_chunk(p, kPairsPerChunk3x3) * 2 * kBlock;  // bf16 elements per input block
    auto* x_chunk = reinterpret_cast<std::uint16_t*>(scratch);
    auto* dy_chunk = reinterpret_cast<std::uint16_t*>(scratch + align_up(std::size_t(in_blocks) * x_block * 2));
    const auto* dy_pairs = reinterpret_cast<const std::uint32_t*>(dy_chunk);
    // Tap t reads, for dy's pair j of a chunk, x's padded indices first[t] + 2j and + 2j + 1,
    // counted from the chunk's first x pair.
    std::array<std::int64_t, kTaps> first{};
    for (int t = 0; t < kTaps; ++t) first[t] = p.origin + (t / 3 - 1) * p.row_stride + (t % 3 - 1);
    const TileOrder order{in_blocks};
    for (int n = 0; n < g.batch; ++n) {
        for (int pair0 = 0; pair0 < p.image_pairs; pair0 += kPairsPerChunk3x3) {
            const int pairs = std::min(kPairsPerChunk3x3, p.image_pairs - pair0);
            const bool zero = n == 0 && pair0 == 0;
            for (int ib = 0; ib < in_blocks; ++ib) {
                pair_map(g, p, x + (std::int64_t{n} * in_blocks + ib) * map, 2 * std::int64_t{pair0} - p.origin,
                         x_pairs_of_chunk(p, pairs), x_chunk + ib * x_block);
            }
            for (int ob = out_begin; ob < out_end; ++ob) {
                pair_map(g, p, dy + (std::int64_t{n} * out_blocks + ob) * map, 2 * std::int64_t{pair0}, pairs,
                         dy_chunk);
                float* rows = taps + std::int64_t{ob} * kBlock * g.in_channels;
                for (int tile = 0; tile < order.count(); ++tile) {
                    for (int t = 0; t < kTaps; ++t) {
                        const std::uint16_t* x_pairs = x_chunk + first[t] / 2 * 2 * kBlock;
                        if (first[t] % 2 == 0) {
                            run_tile<XRows::packed>(order, tile, x_pairs, x_block, dy_pairs, pairs,
                                                    TileTarget{rows + t * tap_plane}, g.in_channels, zero);
                        } else {
                            run_tile<XRows::shifted>(order, tile, x_pairs, x_block, dy_pairs, pairs,
                                                     TileTarget{rows + t * tap_plane}, g.in_channels, zero);
                        }
                    }
                }
            }
        }
    }
}

/// dw[o][i][t] = taps[t][o][i] for the rows o of output blocks [out_begin, out_end), and the
/// same rounded to bf16 into dw_bf16 when it is not null.
void gather_taps(const Conv3x3Geometry& g, const float* taps, float* dw, std::uint16_t* dw_bf16, int out_begin,
                 int out_end) {
    const std::int64_t tap_plane = std::int64_t{g.out_channels} * g.in_channels;
    const std::int64_t first = std::int64_t{out_begin} * kBlock * g.in_channels;
    const std::int64_t end = std::int64_t{out_end} * kBlock * g.in_channels;
    for (std::int64_t at = first; at < end; ++at) {
        for (int t = 0; t < kTaps; ++t) dw[at * kTaps + t] = taps[t * tap_plane + at];
    }
    if (dw_bf16 != nullptr) round_to_bf16(dw + first * kTaps, dw_bf16 + first * kTaps, (end - first) * kTaps);
}

}  // namespace

bool conv3x3_weight_gradient_applies(const Conv3x3Geometry& g) {
    static const bool has_isa = cpu_has_avx512_bf16();
    return has_isa && g.batch > 0 && g.height > 0 && g.width > 0 && g.in_channels > 0 && g.out_channels > 0 &&
           g.in_channels % kBlock == 0 && g.out_channels % kBlock == 0 &&
           std::int64_t{g.height} * (g.width + 1) < (std::int64_t{1} << 30);
}

bool conv3x3_weight_gradient_preferred(const Conv3x3Geometry& g) {
    return conv3x3_weight_gradient_applies(g) && std::int64_t{g.height} * g.width >= 14 * 14;
}

std::size_t conv3x3_weight_gradient_scratch_bytes(const Conv3x3Geometry& g, int threads) {
    if (g.in_channels < kBlock || g.out_channels < kBlock || g.height <= 0 || g.width <= 0) return 0;
    return tap_planes_bytes(g) + std::size_t(std::max(threads, 1)) * chunk_scratch_bytes(g);
}

void conv3x3_weight_gradient_bf16(const Conv3x3Geometry& g, const std::uint16_t* x, const std::uint16_t* dy, float* dw,
                                  std::byte* scratch, int threads, std::uint16_t* dw_bf16) {
    if (!conv3x3_weight_gradient_applies(g)) {
        throw std::logic_error("conv3x3_weight_gradient_bf16: geometry or CPU not supported");
    }
    const Padding3x3 p = padding_3x3(g);
    auto* taps = reinterpret_cast<float*>(scratch);
    const int out_blocks = g.out_channels / kBlock;
#pragma omp parallel num_threads(std::max(threads, 1))
    {
        const auto [begin, end] = thread_share(out_blocks);
        if (begin < end) {
            std::byte* own = scratch + tap_planes_bytes(g) + omp_get_thread_num() * chunk_scratch_bytes(g);
            weight_gradient_3x3_rows(g, p, x, dy, taps, own, begin, end);
            gather_taps(g, taps, dw, dw_bf16, begin, end);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Bf16WorkingCopies

namespace {

/// Which pairing a layout's inner blocks are: 8b16a2b (pairs of inputs), 8a16b2a (pairs of
/// outputs), or neither.
enum class Pairing { inputs, outputs, none };

Pairing pairing_of(const BlockedLayout& layout) {
    if (layout.inner_blocks != std::vector<int>{8, 16, 2}) return Pairing::none;
    if (layout.inner_dims == std::vector<int>{1, 0, 1}) return Pairing::inputs;
    if (layout.inner_dims == std::vector<int>{0, 1, 0}) return Pairing::outputs;
    return Pairing::none;
}

/// Row o of the O x I plane of kernel pixel s, in the K x K x O x I scratch, rounded from the
/// master's row o (I x K x K fp32): 16 values at a time through vcvtneps2bf16 into `row_bf16`
/// (I x K x K), then spread over the K x K planes.
EPOCHCAST_AVX512_BF16 void round_row(const float* master_row, std::int64_t in, std::int64_t pixels,
                                     std::uint16_t* row_bf16, std::uint16_t* plane_row, std::int64_t plane) {
    const std::int64_t count = in * pixels;
    std::int64_t j = 0;
    for (; j + kBlock <= count; j += kBlock) {
        const __m256bh rounded = _mm512_cvtneps_pbh(_mm512_loadu_ps(master_row + j));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(pixels == 1 ? plane_row + j : row_bf16 + j),
                            reinterpret_cast<const __m256i&>(rounded));
    }
    if (j < count) {
        const auto mask = static_cast<__mmask16>((1u << (count - j)) - 1);
        const __m256bh rounded = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, master_row + j));
        _mm256_mask_storeu_epi16(pixels == 1 ? plane_row + j : row_bf16 + j, mask,
                                 reinterpret_cast<const __m256i&>(rounded));
    }
    if (pixels == 1) return;
    for (std::int64_t i = 0; i < in; ++i) {
        for (std::int64_t s = 0; s < pixels; ++s) plane_row[s * plane + i] = row_bf16[i * pixels + s];
    }
}

/// The lanes of 3 x 3 kernels' 16-channel blocks: the block's 144 fp32 values (channel-major, 9
/// pixels each) lie in 9 registers; pixel s of channel k is value s + 9k, in register (s + 9k) / 16.
/// For pixel s and register pair p (registers 2p and 2p + 1): the permutex2var index of each
/// channel, and the channels that pair holds.
struct Pixels3x3 {
    alignas(64) std::int32_t index[9][5][kBlock];
    std::uint16_t channels[9][5];
};

const Pixels3x3& pixels_3x3() {
    static const Pixels3x3 table = [] {
        Pixels3x3 t{};
        for (int s = 0; s < 9; ++s) {
            for (int k = 0; k < kBlock; ++k) {
                const int value = s + 9 * k;
                const int pair = value / 32;
                t.index[s][pair][k] = value % 32;
                t.channels[s][pair] = static_cast<std::uint16_t>(t.channels[s][pair] | (1u << k));
            }
        }
        return t;
    }();
    return table;
}

/// round_row for 3 x 3 kernels (the spread done with permutes, 16 channels at a time).
EPOCHCAST_AVX512_BF16 void round_row_3x3(const float* master_row, std::int64_t in, std::uint16_t* plane_row,
                                         std::int64_t plane) {
    const Pixels3x3& table = pixels_3x3();
    for (std::int64_t i0 = 0; i0 < in; i0 += kBlock) {
        const float* block = master_row + i0 * 9;
        __m512 r[10];
        for (int q = 0; q < 9; ++q) r[q] = _mm512_loadu_ps(block + q * kBlock);
        r[9] = _mm512_setzero_ps();
        for (int s = 0; s < 9; ++s) {
            __m512 pixel = _mm512_setzero_ps();
            for (int pair = 0; pair < 5; ++pair) {
                const __mmask16 channels = table.channels[s][pair];
                if (channels == 0) continue;
                const __m512i index = _mm512_load_si512(table.index[s][pair]);
                pixel =
                    _mm512_mask_mov_ps(pixel, channels, _mm512_permutex2var_ps(r[2 * pair], index, r[2 * pair + 1]));
            }
            const __m256bh rounded = _mm512_cvtneps_pbh(pixel);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(plane_row + s * plane + i0),
                                reinterpret_cast<const __m256i&>(rounded));
        }
    }
}

EPOCHCAST_AVX512_WARNINGS_OFF

/// 8b16a2b tile: rows[a] (a < 16, `stride` apart) hold 16 bf16 input channels each, 8 pairs;
/// out[p][a] (32-bit words, p < 8) = rows[a]'s pair p. An 8 x 8 transpose of 32-bit words in
/// each 256-bit half (rows a and a + 8 share a register), then the halves' 128-bit quarters
/// are regrouped.
EPOCHCAST_AVX512_BF16 void write_input_pairs(const std::uint16_t* rows, std::int64_t stride, std::uint16_t* out) {
    __m512i r[8], t[8], u[8];
    for (int k = 0; k < 8; ++k) {
        const __m256i low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows + k * stride));
        const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows + (k + 8) * stride));
        r[k] = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
    }
    for (int k = 0; k < 8; k += 2) {  // per 128-bit quarter: (r_k p0, r_k+1 p0, r_k p1, r_k+1 p1) ...
        t[k] = _mm512_unpacklo_epi32(r[k], r[k + 1]);
        t[k + 1] = _mm512_unpackhi_epi32(r[k], r[k + 1]);
    }
    for (int half = 0; half < 2; ++half) {  // rows 0-3 (and 8-11), rows 4-7 (and 12-15)
        __m512i* v = t + 4 * half;
        __m512i* w = u + 4 * half;
        w[0] = _mm512_unpacklo_epi64(v[0], v[2]);  // pair 0 of 4 rows, and pair 4 in the odd quarters
        w[1] = _mm512_unpackhi_epi64(v[0], v[2]);  // pairs 1 and 5
        w[2] = _mm512_unpacklo_epi64(v[1], v[3]);  // pairs 2 and 6
        w[3] = _mm512_unpackhi_epi64(v[1], v[3]);  // pairs 3 and 7
    }
    // u[q] quarters: (pair q rows 0-3, pair q+4 rows 0-3, pair q rows 8-11, pair q+4 rows 8-11);
    // u[q+4] the same for rows 4-7 and 12-15.
    const __m512i low_pairs = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
    const __m512i high_pairs = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    for (int q = 0; q < 4; ++q) {
        _mm512_storeu_si512(out + q * 32, _mm512_permutex2var_epi64(u[q], low_pairs, u[q + 4]));
        _mm512_storeu_si512(out + (q + 4) * 32, _mm512_permutex2var_epi64(u[q], high_pairs, u[q + 4]));
    }
}

/// 8a16b2a tile: out[h][b][l] = rows[2h + l][b] (h < 8, b < 16, l < 2): rows 2h and 2h + 1 interleaved.
EPOCHCAST_AVX512_BF16 void write_output_pairs(const std::uint16_t* rows, std::int64_t stride, std::uint16_t* out) {
    const __m512i interleave = _mm512_load_si512(kTwoRowsInterleave);
    for (int h = 0; h < 8; ++h) {
        const __m512i even =
            _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows + 2 * h * stride)));
        const __m512i odd =
            _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows + (2 * h + 1) * stride)));
        _mm512_storeu_si512(out + h * 32, _mm512_permutex2var_epi16(even, interleave, odd));
    }
}

EPOCHCAST_AVX512_WARNINGS_ON

}  // namespace

bool Bf16WorkingCopies::applies(const BlockedLayout& layout) {
    static const bool has_isa = cpu_has_avx512_bf16();
    return has_isa && layout.dims.size() == 4 && layout.padded_dims == layout.dims && layout.strides.size() == 4 &&
           layout.dims[0] > 0 && layout.dims[0] % kBlock == 0 && layout.dims[1] > 0 && layout.dims[1] % kBlock == 0 &&
           layout.dims[2] > 0 && layout.dims[3] > 0 && pairing_of(layout) != Pairing::none;
}

void Bf16WorkingCopies::add(const BlockedLayout& layout, std::uint16_t* target) {
    if (!applies(layout)) throw std::invalid_argument("Bf16WorkingCopies: layout or CPU not supported");
    const std::array<std::int64_t, 4> dims{layout.dims[0], layout.dims[1], layout.dims[2], layout.dims[3]};
    if (!copies_.empty() && dims != dims_) throw std::invalid_argument("Bf16WorkingCopies: copies of different sizes");
    dims_ = dims;
    Copy copy;
    copy.input_pairs = pairing_of(layout) == Pairing::inputs;
    for (std::size_t d = 0; d < 4; ++d) copy.strides[d] = layout.strides[d];
    copy.target = target + layout.offset0;
    copies_.push_back(copy);
}

void Bf16WorkingCopies::write(const float* master, int threads) const {
    if (copies_.empty()) return;
    const auto [out, in, kernel_h, kernel_w] = dims_;
    const std::int64_t pixels = kernel_h * kernel_w, plane = out * in;
    thread_local std::vector<std::uint16_t> planes, rows;
    planes.resize(static_cast<std::size_t>(plane * pixels));
    std::uint16_t* const planes_data = planes.data();
    const int team = std::max(threads, 1);
    rows.resize(static_cast<std::size_t>(team * in * pixels));
    std::uint16_t* const rows_data = rows.data();
    const std::int64_t out_blocks = out / kBlock, in_blocks = in / kBlock;
    const std::int64_t tiles = pixels * out_blocks * in_blocks;
#pragma omp parallel num_threads(team)
    {
        std::uint16_t* row_bf16 = rows_data + std::int64_t{omp_get_thread_num()} * in * pixels;
#pragma omp for schedule(static)
        for (std::int64_t o = 0; o < out; ++o) {
            if (kernel_h == 3 && kernel_w == 3) {
                round_row_3x3(master + o * in * pixels, in, planes_data + o * in, plane);
            } else {
                round_row(master + o * in * pixels, in, pixels, row_bf16, planes_data + o * in, plane);
            }
        }
        for (const Copy& copy : copies_) {
#pragma omp for schedule(static)
            for (std::int64_t t = 0; t < tiles; ++t) {
                const std::int64_t s = t / (out_blocks * in_blocks);
                const std::int64_t ob = t / in_blocks % out_blocks, ib = t % in_blocks;
                const std::uint16_t* rows_of_tile = planes_data + s * plane + ob * kBlock * in + ib * kBlock;
                std::uint16_t* tile = copy.target + ob * copy.strides[0] + ib * copy.strides[1] +
                                      s / kernel_w * copy.strides[2] + s % kernel_w * copy.strides[3];
                if (copy.input_pairs) {
                    write_input_pairs(rows_of_tile, in, tile);
                } else {
                    write_output_pairs(rows_of_tile, in, tile);
                }
            }
        }
    }
}

}  // namespace epochcast::cpu
