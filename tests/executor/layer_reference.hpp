// Plain fp64 references of the ResNet layers, forward and backward, written as the definitions read,
// for the layer tests of every backend (tests/executor/test_layer_conformance.cpp) and the CPU's own
// (test_cpu_layers.cpp, test_cpu_kernels.cpp), with the random inputs and the error measure they
// share. Tensors are N x C x H x W, row-major (NCHW).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace epochcast::reference {

/// Where element (n, c, p) of an N x C x P tensor lies in oneDNN's nChw16c layout (C a multiple
/// of 16), the layout our own CPU kernels take: per image, C / 16 rows of P pixels of 16 channels.
inline std::size_t nchw16c_index(int n, int c, int p, int channels, int pixels) {
    constexpr int kBlock = 16;
    return ((std::size_t(n) * (channels / kBlock) + c / kBlock) * pixels + p) * kBlock + c % kBlock;
}

/// Plain N x C x H x W dims and fp64 values.
struct Tensor {
    int n = 0, c = 0, h = 0, w = 0;
    std::vector<double> data;
    Tensor(int n_, int c_, int h_, int w_) : n(n_), c(c_), h(h_), w(w_), data(std::size_t(n_) * c_ * h_ * w_, 0.0) {}
    double& at(int in, int ic, int ih, int iw) { return data[((std::size_t(in) * c + ic) * h + ih) * w + iw]; }
    double at(int in, int ic, int ih, int iw) const { return data[((std::size_t(in) * c + ic) * h + ih) * w + iw]; }
    std::vector<float> floats() const { return std::vector<float>(data.begin(), data.end()); }
};

/// Standard normal values, rounded to fp32 so that the fp64 reference sees exactly the values the
/// layer sees.
inline Tensor random_tensor(int n, int c, int h, int w, std::uint64_t seed) {
    Tensor t(n, c, h, w);
    std::mt19937_64 generator(seed);
    std::normal_distribution<double> normal;
    for (double& value : t.data) value = static_cast<float>(normal(generator));
    return t;
}

inline std::vector<float> random_vector(std::size_t count, std::uint64_t seed, double scale = 1.0) {
    std::mt19937_64 generator(seed);
    std::normal_distribution<double> normal(0.0, scale);
    std::vector<float> values(count);
    for (float& value : values) value = static_cast<float>(normal(generator));
    return values;
}

/// Each side x side plane a shuffled (i - side^2 / 2) / 8: exact in bf16 and fp16 (for side <= 11)
/// and without ties, so a max-pooling reference picks the same maximum as the layer.
inline Tensor distinct_planes(int n, int c, int side, std::uint64_t seed) {
    Tensor x(n, c, side, side);
    std::mt19937_64 generator(seed);
    const int half = side * side / 2;
    for (std::size_t plane = 0; plane < std::size_t(n) * c; ++plane) {
        std::vector<double> values(std::size_t(side) * side);
        for (int i = 0; i < side * side; ++i) values[i] = (i - half) / 8.0;
        std::shuffle(values.begin(), values.end(), generator);
        std::copy(values.begin(), values.end(), x.data.begin() + plane * side * side);
    }
    return x;
}

/// max |actual - reference| / rms(reference).
template <typename Actual>
double relative_error(const Actual& actual, const std::vector<double>& reference) {
    EXPECT_EQ(actual.size(), reference.size());
    double max_difference = 0, sum_squares = 0;
    for (std::size_t i = 0; i < reference.size(); ++i) {
        max_difference = std::max(max_difference, std::abs(double(actual[i]) - reference[i]));
        sum_squares += reference[i] * reference[i];
    }
    const double rms = std::sqrt(sum_squares / double(reference.size()));
    return max_difference / std::max(rms, 1e-30);
}

// ---------------------------------------------------------------------------------------------
// Convolution: y[n,o,i,j] = sum_{c,a,b} x[n,c,i s - p + a, j s - p + b] w[o,c,a,b]

struct ConvolutionReference {
    Tensor y, dx;
    std::vector<double> dw;  ///< O x I x K x K
};

/// `window`: any type with kernel, stride and padding (each backend's Window). w: O x I x K x K.
template <typename Window>
ConvolutionReference convolve(const Tensor& x, const std::vector<float>& w, int out_channels, const Window& window,
                              const Tensor& dy) {
    const int k = window.kernel;
    ConvolutionReference r{Tensor(x.n, out_channels, dy.h, dy.w), Tensor(x.n, x.c, x.h, x.w),
                           std::vector<double>(w.size(), 0.0)};
    for (int n = 0; n < x.n; ++n)
        for (int o = 0; o < out_channels; ++o)
            for (int i = 0; i < dy.h; ++i)
                for (int j = 0; j < dy.w; ++j)
                    for (int c = 0; c < x.c; ++c)
                        for (int a = 0; a < k; ++a)
                            for (int b = 0; b < k; ++b) {
                                const int ih = i * window.stride - window.padding + a;
                                const int iw = j * window.stride - window.padding + b;
                                if (ih < 0 || ih >= x.h || iw < 0 || iw >= x.w) continue;
                                const std::size_t wi = ((std::size_t(o) * x.c + c) * k + a) * k + b;
                                r.y.at(n, o, i, j) += x.at(n, c, ih, iw) * w[wi];
                                r.dx.at(n, c, ih, iw) += dy.at(n, o, i, j) * w[wi];
                                r.dw[wi] += dy.at(n, o, i, j) * x.at(n, c, ih, iw);
                            }
    return r;
}

// ---------------------------------------------------------------------------------------------
// Batch normalisation, training mode, optionally followed by a fused ReLU:
// x_hat = (x - mean) / sqrt(var + eps), y = [relu](gamma x_hat + beta); g = dy masked by the ReLU;
// dbeta = sum g, dgamma = sum g x_hat, dx = gamma / sqrt(var + eps) (g - dbeta / n - x_hat dgamma / n).
// Running statistics after one step from (0, 1) with momentum 0.1: 0.1 mean, 0.9 + 0.1 unbiased var.

struct BatchNormReference {
    Tensor y, dx;
    std::vector<double> dgamma_beta;       ///< dgamma (C) then dbeta (C)
    std::vector<double> running_mean;      ///< C, after one step from 0
    std::vector<double> running_variance;  ///< C, after one step from 1
};

inline BatchNormReference batch_norm(const Tensor& x, const std::vector<float>& gamma_beta, const Tensor& dy,
                                     double epsilon, bool fused_relu) {
    const int batch = x.n, channels = x.c, plane = x.h * x.w;
    const double n = double(batch) * plane;
    BatchNormReference r{Tensor(x.n, x.c, x.h, x.w), Tensor(x.n, x.c, x.h, x.w), std::vector<double>(2 * channels, 0.0),
                         std::vector<double>(channels), std::vector<double>(channels)};
    auto value = [&](const Tensor& t, int b, int c, int i) { return t.at(b, c, i / x.w, i % x.w); };
    for (int c = 0; c < channels; ++c) {
        double mean = 0, var = 0;
        for (int b = 0; b < batch; ++b)
            for (int i = 0; i < plane; ++i) mean += value(x, b, c, i) / n;
        for (int b = 0; b < batch; ++b)
            for (int i = 0; i < plane; ++i) var += std::pow(value(x, b, c, i) - mean, 2) / n;
        const double inv_std = 1.0 / std::sqrt(var + epsilon);
        auto x_hat = [&](int b, int i) { return (value(x, b, c, i) - mean) * inv_std; };
        auto pre = [&](int b, int i) { return gamma_beta[c] * x_hat(b, i) + gamma_beta[channels + c]; };
        auto g = [&](int b, int i) { return (fused_relu && pre(b, i) <= 0) ? 0.0 : value(dy, b, c, i); };
        for (int b = 0; b < batch; ++b)
            for (int i = 0; i < plane; ++i) {
                r.y.at(b, c, i / x.w, i % x.w) = fused_relu ? std::max(pre(b, i), 0.0) : pre(b, i);
                r.dgamma_beta[c] += g(b, i) * x_hat(b, i);
                r.dgamma_beta[channels + c] += g(b, i);
            }
        for (int b = 0; b < batch; ++b)
            for (int i = 0; i < plane; ++i) {
                r.dx.at(b, c, i / x.w, i % x.w) =
                    gamma_beta[c] * inv_std *
                    (g(b, i) - r.dgamma_beta[channels + c] / n - x_hat(b, i) * r.dgamma_beta[c] / n);
            }
        r.running_mean[c] = 0.1 * mean;
        r.running_variance[c] = 0.9 + 0.1 * var * n / (n - 1);
    }
    return r;
}

// ---------------------------------------------------------------------------------------------
// Element-wise layers and pooling

struct ForwardBackward {
    Tensor y, dx;
};

/// y = max(x, 0), dx = dy where x > 0.
inline ForwardBackward relu(const Tensor& x, const Tensor& dy) {
    ForwardBackward r{x, dy};
    for (std::size_t i = 0; i < x.data.size(); ++i) {
        r.y.data[i] = std::max(x.data[i], 0.0);
        r.dx.data[i] = x.data[i] > 0 ? dy.data[i] : 0.0;
    }
    return r;
}

/// Max pooling: the window's maximum (padding never wins); its input receives dy.
template <typename Window>
ForwardBackward max_pool(const Tensor& x, const Window& window, const Tensor& dy) {
    ForwardBackward r{Tensor(x.n, x.c, dy.h, dy.w), Tensor(x.n, x.c, x.h, x.w)};
    for (int n = 0; n < x.n; ++n)
        for (int c = 0; c < x.c; ++c)
            for (int i = 0; i < dy.h; ++i)
                for (int j = 0; j < dy.w; ++j) {
                    double best = -1e300;
                    int best_h = 0, best_w = 0;
                    for (int a = 0; a < window.kernel; ++a)
                        for (int b = 0; b < window.kernel; ++b) {
                            const int h = window.stride * i - window.padding + a;
                            const int w = window.stride * j - window.padding + b;
                            if (h < 0 || h >= x.h || w < 0 || w >= x.w || x.at(n, c, h, w) <= best) continue;
                            best = x.at(n, c, h, w);
                            best_h = h;
                            best_w = w;
                        }
                    r.y.at(n, c, i, j) = best;
                    r.dx.at(n, c, best_h, best_w) += dy.at(n, c, i, j);
                }
    return r;
}

/// Global average pooling: y = mean over H x W; dx = dy / (H W) everywhere.
inline ForwardBackward global_average_pool(const Tensor& x, const Tensor& dy) {
    ForwardBackward r{Tensor(x.n, x.c, 1, 1), Tensor(x.n, x.c, x.h, x.w)};
    const int plane = x.h * x.w;
    for (int n = 0; n < x.n; ++n)
        for (int c = 0; c < x.c; ++c)
            for (int i = 0; i < plane; ++i) {
                r.y.at(n, c, 0, 0) += x.at(n, c, i / x.w, i % x.w) / plane;
                r.dx.at(n, c, i / x.w, i % x.w) = dy.at(n, c, 0, 0) / plane;
            }
    return r;
}

/// Residual add: y = a + b; the gradient reaches both inputs, and `earlier` (what another reader
/// already wrote into the shortcut's gradient) gets it added.
struct AddReference {
    std::vector<double> y, branch_dx, shortcut_dx;
};

/// The residual-add test's inputs (2 x 16 x 4 x 4), the same for every backend.
struct AddInputs {
    Tensor a = random_tensor(2, 16, 4, 4, 14), b = random_tensor(2, 16, 4, 4, 15);
    Tensor dy = random_tensor(2, 16, 4, 4, 16), earlier = random_tensor(2, 16, 4, 4, 17);
};

inline AddReference residual_add(const Tensor& a, const Tensor& b, const Tensor& dy, const Tensor& earlier) {
    AddReference r{a.data, dy.data, earlier.data};
    for (std::size_t i = 0; i < a.data.size(); ++i) {
        r.y[i] += b.data[i];
        r.shortcut_dx[i] += dy.data[i];
    }
    return r;
}

// ---------------------------------------------------------------------------------------------
// Fully connected: logits = x W^T + b; dx = dlogits W, dW = dlogits^T x, db = sum dlogits.
// params: W (classes x features) then b (classes), as the arenas hold them.

struct FullyConnectedReference {
    std::vector<double> logits;   ///< N x classes
    std::vector<double> dx;       ///< N x features
    std::vector<double> dparams;  ///< dW then db
};

/// The fully connected test's inputs, the same for every backend: x (batch x features x 1 x 1),
/// dlogits (batch x classes), params (W then b, small so that logits stay of order 1).
struct FullyConnectedInputs {
    int batch = 3, features = 64, classes = 10;
    Tensor x = random_tensor(batch, features, 1, 1, 18);
    std::vector<float> dlogits = random_vector(std::size_t(batch) * classes, 19);
    std::vector<float> params = random_vector(std::size_t(classes) * features + classes, 20, 0.125);
};

inline FullyConnectedReference fully_connected(const Tensor& x, const std::vector<float>& params,
                                               const std::vector<float>& dlogits, int classes) {
    const int batch = x.n, features = x.c;
    FullyConnectedReference r{std::vector<double>(std::size_t(batch) * classes, 0.0),
                              std::vector<double>(x.data.size(), 0.0), std::vector<double>(params.size(), 0.0)};
    for (int n = 0; n < batch; ++n)
        for (int k = 0; k < classes; ++k) {
            const double g = dlogits[std::size_t(n) * classes + k];
            r.logits[std::size_t(n) * classes + k] = params[std::size_t(classes) * features + k];
            r.dparams[std::size_t(classes) * features + k] += g;
            for (int f = 0; f < features; ++f) {
                const double w = params[std::size_t(k) * features + f];
                r.logits[std::size_t(n) * classes + k] += x.at(n, f, 0, 0) * w;
                r.dx[std::size_t(n) * features + f] += g * w;
                r.dparams[std::size_t(k) * features + f] += g * x.at(n, f, 0, 0);
            }
        }
    return r;
}

// ---------------------------------------------------------------------------------------------
// Softmax cross-entropy: loss = mean_n (log sum_k e^{l_nk} - l_n,label), dlogits = (softmax - onehot) / N.

struct SoftmaxReference {
    double mean_loss = 0;
    std::vector<double> gradient;  ///< N x classes
};

inline SoftmaxReference softmax_cross_entropy(const std::vector<float>& logits, const std::vector<std::int32_t>& labels,
                                              int classes) {
    const int batch = static_cast<int>(labels.size());
    SoftmaxReference r{0.0, std::vector<double>(logits.size())};
    for (int n = 0; n < batch; ++n) {
        double max_logit = -1e300, sum = 0;
        for (int k = 0; k < classes; ++k) max_logit = std::max(max_logit, double(logits[n * classes + k]));
        for (int k = 0; k < classes; ++k) sum += std::exp(double(logits[n * classes + k]) - max_logit);
        r.mean_loss += (std::log(sum) + max_logit - logits[n * classes + labels[n]]) / batch;
        for (int k = 0; k < classes; ++k) {
            r.gradient[n * classes + k] =
                (std::exp(double(logits[n * classes + k]) - max_logit) / sum - (k == labels[n] ? 1.0 : 0.0)) / batch;
        }
    }
    return r;
}

}  // namespace epochcast::reference
