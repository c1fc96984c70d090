// What only the CPU backend's layers (executor/cpu/layers.hpp) have; their accuracy against the
// fp64 references, shared with every backend, is test_layer_conformance.cpp's. Here: which
// convolutions and batch norms our own kernels (executor/cpu/kernels.hpp) serve, in fp32 and bf16
// and both activation layouts, and the fused batch norms (with the ReLU after it, and with the
// residual add and ReLU) against the references at the tolerances of cpu_layer_backend.hpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "executor/cpu/kernels.hpp"
#include "executor/cpu/layers.hpp"
#include "tests/executor/cpu_layer_backend.hpp"
#include "tests/executor/layer_reference.hpp"

namespace epochcast::cpu {
namespace {

using reference::random_tensor;
using reference::relative_error;
using reference::Tensor;
using testing::BatchNormInputs;
using testing::ConvolutionCase;
using testing::CpuLayerBackend;
using testing::OwnKernels;

constexpr int kThreads = 2;

struct Variant {
    DataType type;
    Layout layout;
};

std::string name_of(const Variant& v) {
    return std::string(v.type == DataType::bf16 ? "bf16" : "fp32") + (v.layout == Layout::nhwc ? "_nhwc" : "_blocked");
}
std::string variant_name(const ::testing::TestParamInfo<Variant>& info) { return name_of(info.param); }
/// How GoogleTest (and so ctest's test list) shows the parameter: by name, not its bytes.
void PrintTo(const Variant& v, std::ostream* os) { *os << name_of(v); }

Shape shape_of(const Tensor& t) { return Shape{t.c, t.h, t.w}; }

class CpuLayer : public ::testing::TestWithParam<Variant> {
protected:
    void SetUp() override {
        if (const std::string why = backend_.skip_reason(); !why.empty()) GTEST_SKIP() << why;
    }
    DataType type() const { return GetParam().type; }
    bool bf16() const { return GetParam().type == DataType::bf16; }

    /// Runs case `c` (its accuracy is the conformance suite's) and says what our kernels did.
    OwnKernels convolution_kernels(const ConvolutionCase& c) {
        backend_.convolution(c, testing::convolution_inputs(c, false));
        return backend_.last_convolution_kernels();
    }

    CpuLayerBackend backend_{GetParam().type, GetParam().layout};
};

// ---------------------------------------------------------------------------------------------
// Convolutions: which work our own kernels do

TEST_P(CpuLayer, Convolution3x3Stride1) {
    const OwnKernels own = convolution_kernels({{3, 1, 1}, 16, 32, 14});
    // With nChw16c activations, both bf16 copies (forward, backward-data) are refreshed by our
    // writer on a CPU with AVX512-BF16 (the kernels' ISA, which conv1x1_weight_gradient_applies
    // also asks for); fp32 copies never are. (With NHWC oneDNN picks other layouts for some.)
    // On an AMX host a bf16 nChw16c layer computes in NHWC (relaid: oneDNN's AMX kernels), where
    // our kernels do not apply.
    const bool ours = bf16() && !own.relaid && conv1x1_weight_gradient_applies(Conv1x1Geometry{2, 16, 32, 196});
    if (!own.relaid && (!ours || GetParam().layout == Layout::blocked)) {
        EXPECT_EQ(own.working_copies, ours ? 2u : 0u) << "bf16 working copies refreshed by our writer";
    }
    EXPECT_EQ(own.weight_gradient, ours && GetParam().layout == Layout::blocked)
        << "the own 3x3 weight-gradient kernel serves bf16 nChw16c, and only that";
}

TEST_P(CpuLayer, Convolution3x3Stride2) {
    EXPECT_FALSE(convolution_kernels({{3, 2, 1}, 32, 16, 10}).weight_gradient)
        << "strided 3x3 convolutions stay on oneDNN";
}

// conv1's shape (3 input channels) in these layouts leaves oneDNN 2.6.3 only its reference
// forward kernel for some (bf16 nChw16c); the layer then computes in the layouts oneDNN chooses
// (its values are the conformance suite's Convolution7x7Stride2LikeConv1), and only then.
TEST_P(CpuLayer, ConvolutionAvoidsAReferenceKernelByReordering) {
    const OwnKernels own = convolution_kernels({{7, 2, 3}, 3, 16, 16});
    EXPECT_NE(implementation_isa(own.implementation), "reference") << own.implementation;
    // nChw16c on an AMX host: oneDNN's AMX kernel wants NHWC, a better tier, so the layer reorders.
    const OwnKernels unit = convolution_kernels({{1, 1, 0}, 32, 48, 7});
    EXPECT_EQ(unit.relaid,
              GetParam().layout == Layout::blocked && implementation_isa(unit.implementation) == "avx512_core_amx")
        << unit.implementation;
}

// A 3x3 window on a 1 x 1 map (ResNet's last stage at 32 px): AVX2's JIT weight gradient refuses
// it on nChw8c, which left oneDNN's reference kernel (220 ms a call at 512 channels, batch 4, on a
// Zen 3); the layer then reads x and dy in the layouts oneDNN picks itself. No pass of it runs a
// reference kernel (its values are the conformance suite's Convolution3x3OnAOneByOneMap).
TEST_P(CpuLayer, ConvolutionOnAOneByOneMapRunsNoReferenceKernel) {
    const OwnKernels own = convolution_kernels({{3, 1, 1}, 32, 32, 1});
    EXPECT_NE(implementation_isa(own.implementation), "reference") << own.implementation;
    if (!own.weight_gradient) {
        EXPECT_NE(implementation_isa(own.weight_gradient_implementation), "reference")
            << own.weight_gradient_implementation;
    }
}

TEST(CpuKernelNames, TierAndIsaOfOneDnnImplementations) {
    EXPECT_EQ(implementation_isa("jit_bf16:avx512_core_bf16"), "avx512_core_bf16");
    EXPECT_EQ(implementation_isa("jit_bf16_1x1:avx512_core_bf16"), "avx512_core_bf16");
    EXPECT_EQ(implementation_isa("brgconv:avx512_core_amx_bf16"), "avx512_core_amx");
    EXPECT_EQ(implementation_isa("brg_conv_fwd:avx512_core_amx"), "avx512_core_amx");  // oneDNN 3's naming
    EXPECT_EQ(implementation_isa("jit:avx2"), "avx2");
    EXPECT_EQ(implementation_isa("ref:any"), "reference");
    EXPECT_EQ(implementation_isa("x64:gemm:jit"), "other");
    EXPECT_EQ(implementation_isa("simple:any"), "other");
    EXPECT_EQ(implementation_tier("ref:any"), 0);
    EXPECT_EQ(implementation_tier("x64:gemm:jit"), 1);
    EXPECT_EQ(implementation_tier("jit_bf16:avx512_core_bf16"), 1);
    EXPECT_EQ(implementation_tier("brgconv_1x1:avx512_core_amx_bf16"), 2);
}

// oneDNN 2.6.3 left to itself (format `any`): nChw16c for its AVX-512 convolutions, NHWC for its
// AMX ones, on every CPU (on an AMX host this checks the AMX half).
TEST(CpuConvolutionChoice, ChannelsLastExactlyWhereTheKernelIsAmx) {
    for (const DataType type : {DataType::fp32, DataType::bf16}) {
        if (type == DataType::bf16 && !cpu_has_native_bf16()) continue;
        const ConvolutionChoice choice = convolution_choice(16, 64, 56, type);
        const std::string isa = implementation_isa(choice.implementation);
        EXPECT_NE(std::find(std::begin(kKernelIsas), std::end(kKernelIsas), isa), std::end(kKernelIsas)) << isa;
        EXPECT_NE(isa, "reference") << choice.implementation;
        EXPECT_EQ(choice.layout == Layout::nhwc, isa == "avx512_core_amx") << choice.implementation;
        if (cpu_isa_name() != "avx512_core_amx") {
            EXPECT_NE(isa, "avx512_core_amx");
        }
    }
}

TEST_P(CpuLayer, Convolution1x1Stride1) {
    const OwnKernels own = convolution_kernels({{1, 1, 0}, 32, 48, 7});
    const bool expected = bf16() && GetParam().layout == Layout::blocked && !own.relaid &&
                          conv1x1_weight_gradient_applies(Conv1x1Geometry{2, 32, 48, 49});
    EXPECT_EQ(own.weight_gradient, expected) << "the own 1x1 weight-gradient kernel serves bf16 nChw16c, and only that";
}

// ---------------------------------------------------------------------------------------------
// Batch normalisation, training mode, alone, with the fused ReLU, and with the fused residual
// add and ReLU. In bf16 the reference takes x, dy and the shortcut rounded to bf16 as the layer
// sees them (CpuLayerBackend::as_seen).

BatchNormInputs inputs_as_seen(const CpuLayerBackend& backend) {
    BatchNormInputs in;
    in.x = backend.as_seen(in.x);
    in.dy = backend.as_seen(in.dy);
    in.shortcut = backend.as_seen(in.shortcut);
    return in;
}

bool own_batch_norm_expected(DataType type, Layout layout) {
    return type == DataType::bf16 && layout == Layout::blocked && cpu_has_avx512_bf16() && own_kernels_enabled();
}

TEST_P(CpuLayer, BatchNormTraining) {
    backend_.batch_norm(inputs_as_seen(backend_));
    EXPECT_EQ(backend_.last_batch_norm_on_own_kernels(), own_batch_norm_expected(type(), GetParam().layout));
}

TEST_P(CpuLayer, BatchNormTrainingWithFusedRelu) {
    if (!BatchNorm::fuses(activation_desc(2, Shape{16, 4, 4}, type(), GetParam().layout), BatchNorm::Then::relu)) {
        // Measured: oneDNN 2.6's bf16 batch norm with fuse_norm_relu gives dx off by 107% of its
        // rms and dgamma by 18% (fp32 and unfused bf16 are right), so bf16 fuses on our kernels only.
        EXPECT_TRUE(bf16());
        GTEST_SKIP() << "bf16 fuses BN+ReLU on our own kernels only (nChw16c, AVX512-BF16); oneDNN 2.6's bf16 fused "
                        "backward is wrong";
    }
    const BatchNormInputs in = inputs_as_seen(backend_);
    const testing::BatchNormOutputs out = backend_.batch_norm(in, BatchNorm::Then::relu);
    const double tolerance = backend_.sum_tolerance();
    const reference::BatchNormReference r =
        reference::batch_norm(in.x, in.gamma_beta, in.dy, BatchNorm::kEpsilon, true);
    EXPECT_LT(relative_error(out.y, r.y.data), tolerance) << "forward";
    EXPECT_LT(relative_error(out.dx, r.dx.data), tolerance) << "backward data";
    EXPECT_LT(relative_error(out.dgamma_beta, r.dgamma_beta), tolerance) << "backward gamma, beta";
    EXPECT_LT(relative_error(out.running_mean, r.running_mean), tolerance) << "running mean";
    EXPECT_LT(relative_error(out.running_var, r.running_variance), tolerance) << "running variance";
    EXPECT_EQ(backend_.last_batch_norm_on_own_kernels(), own_batch_norm_expected(type(), GetParam().layout));
}

/// y = relu(bn(x) + shortcut) through BatchNorm(Then::add_relu) + ResidualRelu, against the
/// reference batch norm, add and ReLU; the shortcut's gradient either shared or added to one
/// already written.
void check_residual_relu(Layout layout, bool shortcut_written, double tolerance) {
    Context context{kThreads};
    const BatchNormInputs in = inputs_as_seen(CpuLayerBackend(DataType::bf16, layout));
    const Tensor &x = in.x, &dy = in.dy, &s = in.shortcut;
    std::vector<float> gamma_beta = in.gamma_beta;
    std::vector<float> gradient(2 * in.channels, -1.0f);
    std::vector<float> running_mean(in.channels, 0.0f), running_var(in.channels, 1.0f);
    const Tensor earlier = random_tensor(in.batch, in.channels, in.side, in.side, 15);

    const dnnl::memory::desc desc = activation_desc(in.batch, shape_of(x), DataType::bf16, layout);
    Activation xa = make_activation(context, desc), shortcut = make_activation(context, desc);
    Activation ya = make_activation(context, desc);
    Activation bn_output;  // placeholder, as the network builds it
    BatchNorm bn(context, xa, bn_output, ParameterView{gamma_beta.data(), gradient.data()},
                 RunningStatistics{running_mean.data(), running_var.data()}, BatchNorm::Then::add_relu);
    ResidualRelu tail(context, bn, shortcut, ya);
    ya.diff = dnnl::memory(desc, context.engine());
    if (shortcut_written) shortcut.diff = dnnl::memory(desc, context.engine());
    tail.bind_backward(context);
    bn.bind_backward(context);
    context.finalize();
    write_plain(context, xa.value, x.floats().data());
    write_plain(context, shortcut.value, s.floats().data());
    write_plain(context, ya.diff, dy.floats().data());
    if (shortcut_written) write_plain(context, shortcut.diff, earlier.floats().data());
    bn.forward(context);
    tail.forward(context);
    tail.backward_inputs(context);
    bn.backward_parameters(context);
    bn.backward_inputs(context);

    // Reference: t = bn(x) + s, y = relu(t), g = dy where t > 0; the batch norm's backward takes g.
    const reference::BatchNormReference normalised =
        reference::batch_norm(x, gamma_beta, dy, BatchNorm::kEpsilon, false);
    Tensor y(x.n, x.c, x.h, x.w), g(x.n, x.c, x.h, x.w), shortcut_dx = earlier;
    for (std::size_t i = 0; i < y.data.size(); ++i) {
        const double t = normalised.y.data[i] + s.data[i];
        y.data[i] = std::max(t, 0.0);
        g.data[i] = t > 0 ? dy.data[i] : 0.0;
        shortcut_dx.data[i] = (shortcut_written ? earlier.data[i] : 0.0) + g.data[i];
    }
    const reference::BatchNormReference r = reference::batch_norm(x, gamma_beta, g, BatchNorm::kEpsilon, false);
    EXPECT_LT(relative_error(read_plain(context, ya.value), y.data), tolerance) << "forward";
    EXPECT_LT(relative_error(read_plain(context, xa.diff), r.dx.data), tolerance) << "backward data, branch";
    EXPECT_LT(relative_error(read_plain(context, shortcut.diff), shortcut_dx.data), tolerance)
        << "backward data, shortcut";
    EXPECT_LT(relative_error(gradient, r.dgamma_beta), tolerance) << "backward gamma, beta";
    EXPECT_LT(relative_error(running_mean, r.running_mean), tolerance) << "running mean";
    EXPECT_LT(relative_error(running_var, r.running_variance), tolerance) << "running variance";
}

TEST_P(CpuLayer, BatchNormAddReluFused) {
    if (!BatchNorm::fuses(activation_desc(2, Shape{16, 4, 4}, type(), GetParam().layout), BatchNorm::Then::add_relu)) {
        EXPECT_FALSE(own_batch_norm_expected(type(), GetParam().layout));
        GTEST_SKIP()
            << "the fused batch norm + residual add + ReLU runs on our own kernels only (bf16 nChw16c, AVX512-BF16)";
    }
    check_residual_relu(GetParam().layout, /*shortcut_written=*/false, backend_.sum_tolerance());
}

TEST_P(CpuLayer, BatchNormAddReluFusedAddsToAShortcutGradientAlreadyWritten) {
    if (!BatchNorm::fuses(activation_desc(2, Shape{16, 4, 4}, type(), GetParam().layout), BatchNorm::Then::add_relu)) {
        GTEST_SKIP()
            << "the fused batch norm + residual add + ReLU runs on our own kernels only (bf16 nChw16c, AVX512-BF16)";
    }
    check_residual_relu(GetParam().layout, /*shortcut_written=*/true, backend_.sum_tolerance());
}

INSTANTIATE_TEST_SUITE_P(Variants, CpuLayer,
                         ::testing::Values(Variant{DataType::fp32, Layout::nhwc},
                                           Variant{DataType::fp32, Layout::blocked},
                                           Variant{DataType::bf16, Layout::nhwc},
                                           Variant{DataType::bf16, Layout::blocked}),
                         variant_name);

}  // namespace
}  // namespace epochcast::cpu
