// The CPU backend's own kernels (see kernels.hpp).
#include "executor/cpu/kernels.hpp"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <stdexcept>
#include <vector>

namespace epochcast::cpu {

namespace {

constexpr int kBlock = 16;                 ///< channels per nChw16c block, and the output tile's side
constexpr int kPairBytes = 2 * kBlock * 2; ///< one packed pair row: 16 channels x 2 k x bf16
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

#define EPOCHCAST_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/// Two adjacent nChw16c rows (t[k][0..15], t[k+1][0..15]) in one register -> the pair form:
/// position q takes element q / 2 of the first row (q even) or 16 + q / 2 (q odd).
alignas(64) constexpr std::uint16_t kAdjacentRowsInterleave[32] = {0,  16, 1,  17, 2,  18, 3,  19, 4,  20, 5,
                                                                   21, 6,  22, 7,  23, 8,  24, 9,  25, 10, 26,
                                                                   11, 27, 12, 28, 13, 29, 14, 30, 15, 31};

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
    // Position q of the packed row takes element q / 2 of the first row (q even) or of the second
    // (index 32 + q / 2 of the two-register permute).
    alignas(64) static constexpr std::uint16_t kInterleave[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                                                  37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                                                  11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
    const __m512i interleave = _mm512_load_si512(kInterleave);
    constexpr __mmask32 kOneRow = 0xffff;  // 16 bf16: the rest of the register is zero
    const std::int64_t image_stride = std::int64_t{blocks} * pixels * kBlock;
    const std::int64_t block_offset = std::int64_t{block} * pixels * kBlock;
    for (int j = 0; j < pairs; ++j) {
        const std::uint16_t* first = tensor + at.first_image[j] * image_stride + block_offset + at.first_pixel[j] * kBlock;
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

/// The 16 x 16 output tile dw[o][i] (row stride ld) += sum over the chunk's pairs; `first`: the
/// tile starts from zero instead of its stored value.
///   x_pairs: pairs x 32 bf16 of one input block: packed (kRawRows false), or two successive
///            nChw16c rows per pair, interleaved here (kRawRows true)
///   dy_pairs: pairs x 16 bf16 pairs, the packed output block
/// Cache lines to fetch into L2 while a tile computes: `lines` lines from `from`, one a pair.
struct Prefetch {
    const std::uint16_t* from = nullptr;
    int lines = 0;
};

template <bool kRawRows>
EPOCHCAST_AVX512_BF16 void tile_16x16(const std::uint16_t* x_pairs, const std::uint32_t* dy_pairs, int pairs,
                                      float* dw, std::int64_t ld, bool first, Prefetch a = {}, Prefetch b = {}) {
    constexpr int kLineElements = 32;  // 64 bytes of bf16
    const __m512i interleave = _mm512_load_si512(kAdjacentRowsInterleave);
    __m512 acc[kBlock];
#pragma GCC unroll 16
    for (int o = 0; o < kBlock; ++o) acc[o] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(dw + o * ld);
    for (int j = 0; j < pairs; ++j) {
        __m512i rows = _mm512_loadu_si512(x_pairs + std::int64_t{j} * 2 * kBlock);
        if constexpr (kRawRows) rows = _mm512_permutexvar_epi16(interleave, rows);
        const __m512bh x = (__m512bh)rows;
        const std::uint32_t* dy = dy_pairs + std::int64_t{j} * kBlock;
        if (j < a.lines) _mm_prefetch(reinterpret_cast<const char*>(a.from + j * kLineElements), _MM_HINT_T1);
        if (j < b.lines) _mm_prefetch(reinterpret_cast<const char*>(b.from + j * kLineElements), _MM_HINT_T1);
#pragma GCC unroll 16
        for (int o = 0; o < kBlock; ++o) {
            acc[o] = _mm512_dpbf16_ps(acc[o], (__m512bh)_mm512_set1_epi32(static_cast<int>(dy[o])), x);
        }
    }
#pragma GCC unroll 16
    for (int o = 0; o < kBlock; ++o) _mm512_storeu_ps(dw + o * ld, acc[o]);
}

/// One thread's share: output blocks [out_begin, out_end), every chunk of k.
///
/// With an even pixel count a pair (k, k + 1) never spans two images, and its two nChw16c rows are
/// adjacent in memory: the tile interleaves them itself and only dy is packed (once per output
/// block and chunk, reused by every input block). With an odd count (7 x 7) pairs cross images, and
/// x is packed too, once per chunk for every input block; so are small images (kMinRawPairs).
EPOCHCAST_AVX512_BF16 void weight_gradient_rows(const Conv1x1Geometry& g, const std::uint16_t* x,
                                                const std::uint16_t* dy, float* dw, std::byte* scratch,
                                                int out_begin, int out_end) {
    const int in_blocks = g.in_channels / kBlock;
    const int out_blocks = g.out_channels / kBlock;
    const int chunk_pairs = pairs_per_chunk(in_blocks);
    auto* x_packed = reinterpret_cast<std::uint16_t*>(scratch);  // in_blocks x chunk_pairs x 32 (packed path)
    auto* dy_packed = reinterpret_cast<std::uint16_t*>(
        scratch + align_up(std::size_t(in_blocks) * chunk_pairs * kPairBytes));  // chunk_pairs x 32
    const auto* dy_pairs = reinterpret_cast<const std::uint32_t*>(dy_packed);
    auto tile_of = [&](int ob, int ib) { return dw + std::int64_t{ob} * kBlock * g.in_channels + ib * kBlock; };

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
                // The next chunk (none after the last: next_pairs 0).
                const bool same_image = pair0 + chunk_pairs < image_pairs;
                const int next_n = same_image ? n : n + 1;
                const int next_pair0 = same_image ? pair0 + chunk_pairs : 0;
                const int next_pairs = next_n < g.batch ? std::min(chunk_pairs, image_pairs - next_pair0) : 0;
                for (int ob = out_begin; ob < out_end; ++ob) {
                    pack_adjacent_pairs(dy_rows(n, pair0, ob), pairs, dy_packed);
                    const bool last_ob = ob + 1 == out_end;
                    const std::uint16_t* next_dy = last_ob ? dy_rows(next_n, next_pair0, out_begin) : dy_rows(n, pair0, ob + 1);
                    const int next_dy_lines = last_ob ? next_pairs : pairs;
                    const int dy_lines_per_tile = (next_dy_lines + in_blocks - 1) / in_blocks;
                    for (int ib = 0; ib < in_blocks; ++ib) {
                        const int dy_from = std::min(ib * dy_lines_per_tile, next_dy_lines);
                        const Prefetch dy_ahead{next_dy + std::int64_t{dy_from} * 2 * kBlock,
                                                std::min(dy_lines_per_tile, next_dy_lines - dy_from)};
                        const Prefetch x_ahead{last_ob && next_pairs > 0 ? x_rows(next_n, next_pair0, ib) : nullptr,
                                               last_ob ? next_pairs : 0};
                        tile_16x16<true>(x_rows(n, pair0, ib), dy_pairs, pairs, tile_of(ob, ib), g.in_channels, first,
                                         dy_ahead, x_ahead);
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
            for (int ib = 0; ib < in_blocks; ++ib) {
                tile_16x16<false>(x_packed + std::int64_t{ib} * chunk_pairs * 2 * kBlock, dy_pairs, pairs,
                                  tile_of(ob, ib), g.in_channels, pair0 == 0);
            }
        }
    }
}

bool cpu_has_avx512_bf16() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
}

std::atomic<bool> own_kernels{true};

}  // namespace

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
                                  std::byte* scratch, int threads) {
    if (!conv1x1_weight_gradient_applies(g)) {
        throw std::logic_error("conv1x1_weight_gradient_bf16: geometry or CPU not supported");
    }
    const int out_blocks = g.out_channels / kBlock;
    const std::size_t per_thread = thread_scratch_bytes(g);
#pragma omp parallel num_threads(std::max(threads, 1))
    {
        const int thread = omp_get_thread_num();
        const int team = omp_get_num_threads();
        const int begin = out_blocks * thread / team;
        const int end = out_blocks * (thread + 1) / team;
        if (begin < end) weight_gradient_rows(g, x, dy, dw, scratch + per_thread * thread, begin, end);
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
                pixel = _mm512_mask_mov_ps(pixel, channels, _mm512_permutex2var_ps(r[2 * pair], index, r[2 * pair + 1]));
            }
            const __m256bh rounded = _mm512_cvtneps_pbh(pixel);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(plane_row + s * plane + i0),
                                reinterpret_cast<const __m256i&>(rounded));
        }
    }
}

// GCC 12's AVX-512 headers build some intrinsics from _mm512_undefined_*(), which -Wuninitialized
// reports once inlined here (GCC bug 105593); the values are all defined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

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
    alignas(64) static constexpr std::uint16_t kInterleave[32] = {0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,
                                                                  37, 6, 38, 7, 39, 8,  40, 9,  41, 10, 42,
                                                                  11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
    const __m512i interleave = _mm512_load_si512(kInterleave);
    for (int h = 0; h < 8; ++h) {
        const __m512i even = _mm512_castsi256_si512(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows + 2 * h * stride)));
        const __m512i odd = _mm512_castsi256_si512(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows + (2 * h + 1) * stride)));
        _mm512_storeu_si512(out + h * 32, _mm512_permutex2var_epi16(even, interleave, odd));
    }
}

#pragma GCC diagnostic pop

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
