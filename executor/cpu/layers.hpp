// The oneDNN layers the CPU network is built from (executor/cpu/network.cpp), usable one at a time
// by the tests (tests/executor/test_layer_conformance.cpp and test_cpu_layers.cpp), so the code a
// test checks is the code that trains.
//
// Notation in the comments: N batch, C channels, H x W a feature map, O output channels, K kernel
// side, "classes" the fc outputs. Activations are N x C x H x W in the network's layout (NHWC or
// oneDNN's blocked nChw16c) and data type (fp32 or bf16); parameters are plain fp32 in the
// arenas of executor/network.hpp, working copies in whatever layout a primitive prefers.
//
// Life of a layer: construct it in forward order (it builds its forward primitive), then call
// bind_backward() in backward order (it builds the backward primitives and binds the gradient of
// its inputs, see GradientSink), then Context::finalize() once, refresh_parameters(), and run
// forward() / backward_parameters() / backward_inputs() every step. Nothing is allocated after
// finalize().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "executor/cpu/batch_norm_kernels.hpp"
#include "executor/cpu/kernels.hpp"
#include "model/resnet.hpp"

namespace epochcast::cpu {

/// Storage type of activations and of convolution / fully-connected compute.
enum class DataType { fp32, bf16 };
/// Memory layout of activations: channels last (NHWC) or oneDNN's blocked layout, whose block of
/// channels is as wide as this CPU's vectors (blocked_channels(): nChw16c, or nChw8c below AVX-512).
enum class Layout { nhwc, blocked };

dnnl::memory::data_type to_dnnl(DataType type);
/// Channels per block of Layout::blocked on this CPU: 16 where oneDNN's effective ISA has AVX-512
/// (avx512_core and up: 16 fp32 lanes), 8 below it (AVX2, AVX and SSE4.1: 8 fp32 lanes, two
/// registers). It is the block oneDNN 2.6.3 chooses itself (format `any`) for its convolutions
/// there: its AVX2 kernels take nChw8c, and on nChw16c its AVX2 batch norm and pooling step aside
/// for reference kernels (ResNet-50 at 0.63 img/s instead of several on a Zen 3, mostly in
/// bnorm_ref). ONEDNN_MAX_CPU_ISA moves it with the effective ISA.
int blocked_channels();
/// The layout's name as the trainer and the host description print it: "NHWC", "nChw16c" or
/// "nChw8c".
std::string layout_name(Layout layout);
/// N x C x H x W activation descriptor.
dnnl::memory::desc activation_desc(int batch, const Shape& shape, DataType type, Layout layout);
/// True when oneDNN runs bf16 natively on this CPU (AVX512-BF16 or AMX), not emulated.
bool cpu_has_native_bf16();
/// oneDNN's name of the instruction set it uses here, e.g. "avx512_core_bf16".
std::string cpu_isa_name();
/// How good a oneDNN implementation is, by its name (primitive_desc::impl_info_str(), e.g.
/// "jit_bf16:avx512_core_bf16", "brgconv:avx512_core_amx_bf16", "ref:any"): 0 for a reference
/// kernel, 2 for an AMX one, 1 for any other (JIT or gemm). A layer whose activations' layout
/// leaves oneDNN only a lower tier than the layout it would choose itself (format `any`) computes
/// in oneDNN's layout and reorders (Convolution, FullyConnected).
int implementation_tier(const std::string& implementation);
/// The instruction set of a oneDNN implementation name, one of kKernelIsas: the part after its
/// last ':' ("jit_bf16:avx512_core_bf16" -> "avx512_core_bf16"), any AMX kernel
/// ("avx512_core_amx_bf16", "avx512_core_amx") "avx512_core_amx", a reference kernel ("ref:any")
/// "reference", a name without a known ISA ("x64:gemm:jit") "other".
std::string implementation_isa(const std::string& implementation);
/// Every value implementation_isa() returns.
inline constexpr const char* kKernelIsas[] = {"avx512_core_amx",
                                              "avx512_core_bf16",
                                              "avx512_core_vnni",
                                              "avx512_core",
                                              "avx512_mic_4ops",
                                              "avx512_mic",
                                              "avx2_vnni",
                                              "avx2",
                                              "avx",
                                              "sse41",
                                              "uni",
                                              "reference",
                                              "other"};

/// What oneDNN picks on this CPU for a training convolution (stride 1, 3x3, padded by 1, as many
/// channels in as out) when the activations' layout is left to it (format `any`).
struct ConvolutionChoice {
    std::string implementation;       ///< the forward primitive's impl_info_str()
    Layout layout = Layout::blocked;  ///< nhwc when oneDNN chose channels-last, else blocked
    /// The source layout oneDNN chose, by name: "NHWC", "nChw16c", "nChw8c", or "other".
    std::string chosen_layout;
};
/// oneDNN 2.6.3 chooses nChw16c for its AVX-512 bf16 and fp32 kernels, nChw8c for its AVX2 ones
/// (both Layout::blocked, at blocked_channels()) and NHWC for its AMX ones (brgemm and jit AMX
/// convolutions take channels-last only). Any other layout counts as blocked.
ConvolutionChoice convolution_choice(int batch, int channels, int side, DataType type);

/// A blocked oneDNN descriptor in kernels.hpp's terms; none for other kinds (any, wino, ...) or
/// descriptors with extra flags (int8 compensation) or padded offsets.
std::optional<BlockedLayout> blocked_layout_of(const dnnl::memory::desc& desc);

/// One primitive with its arguments, bound once.
struct Call {
    dnnl::primitive primitive;
    std::unordered_map<int, dnnl::memory> args;
};

/// The engine, the stream, the thread count and buffers shared by every layer (oneDNN's
/// scratchpad, the scratch of gradient accumulation).
class Context {
public:
    enum class Shared { scratchpad, gradient_scratch };

    /// threads >= 1: OpenMP threads oneDNN runs on.
    explicit Context(int threads);

    const dnnl::engine& engine() const { return engine_; }
    int threads() const { return threads_; }
    /// Attributes every primitive is built with (user-managed scratchpad).
    dnnl::primitive_attr attributes() const;
    /// A memory of `desc` in the shared buffer `which` (its contents are valid only within one
    /// layer call); it points at real storage after finalize().
    dnnl::memory shared_memory(const dnnl::memory::desc& desc, Shared which);
    /// Binds a primitive with the scratchpad its descriptor asks for.
    Call bind(dnnl::primitive primitive, const dnnl::primitive_desc& pd, std::unordered_map<int, dnnl::memory> args);
    /// Allocates the shared buffers; call once, after every layer is built and bound.
    void finalize();
    /// Runs a call on the stream (synchronously: the CPU stream is in order).
    void run(const Call& call);

private:
    struct Buffer {
        std::size_t bytes = 0;
        std::unique_ptr<std::byte, void (*)(void*)> data{nullptr, nullptr};
        std::vector<dnnl::memory> users;
    };
    dnnl::engine engine_;
    dnnl::stream stream_;
    int threads_ = 1;
    Buffer buffers_[2];
    bool finalized_ = false;
};

/// One N x C x H x W tensor of the network: its value (forward) and its gradient (backward).
/// `diff` stays empty until the first layer in backward order binds it (GradientSink::bind or
/// Add's alias).
struct Activation {
    dnnl::memory value;
    dnnl::memory diff;
};

/// An activation with its value allocated in `desc`, gradient unbound.
Activation make_activation(const Context& context, const dnnl::memory::desc& desc);

/// Where a layer's backward pass writes the gradient of one of its inputs. A tensor read by two
/// layers (a block's input, read by the branch and the shortcut) gets the sum: the first layer in
/// backward order writes x.diff directly; a later one writes into shared scratch, then adds it.
class GradientSink {
public:
    GradientSink() = default;
    /// Binds x.diff (allocating it, in x.value's descriptor, if nothing has yet).
    static GradientSink bind(Context& context, Activation& x);
    /// The memory the layer's backward primitive writes.
    const dnnl::memory& target() const { return target_; }
    /// Adds the scratch into x.diff when accumulating; nothing otherwise.
    void finish(Context& context) const;

private:
    dnnl::memory target_;
    std::optional<Call> accumulate_;
};

/// A layer's learnable tensor inside the arenas: plain fp32 values and gradient.
struct ParameterView {
    float* value = nullptr;
    float* gradient = nullptr;
};

/// Convolution or fc weights: fp32 plain master values and gradient in the arenas, a working
/// copy in each (layout, type) a primitive asks for, and the gradient copied from the layout the
/// backward-weights primitive writes into the arena. Blocked bf16 working copies are refreshed by
/// our own writer (kernels.hpp's Bf16WorkingCopies) when own kernels are enabled and it applies,
/// by oneDNN's reorder otherwise.
class Weights {
public:
    /// dims: O x I x K x K (fc: classes x C x 1 x 1), plain in the arena.
    Weights(const Context& context, dnnl::memory::dims dims, ParameterView view);
    /// Working weights in `wanted` (the arena itself when it is plain fp32).
    dnnl::memory working(const Context& context, const dnnl::memory::desc& wanted);
    /// Where backward-weights writes in `produced` (the arena itself when it is plain fp32).
    dnnl::memory gradient(const Context& context, const dnnl::memory::desc& produced);
    /// The plain fp32 gradient in the arena (O x I x K x K), where publish_gradient() copies to.
    float* gradient_arena() const { return static_cast<float*>(master_grad_.get_data_handle()); }
    /// Master values -> every working copy.
    void refresh(Context& context) const;
    /// How many working copies our own writer refreshes (the rest: oneDNN's reorder).
    std::size_t own_copies() const { return own_copies_.size(); }
    /// Backward-weights output -> arena (nothing when it wrote the arena directly).
    void publish_gradient(Context& context) const;
    /// From now on publish the gradient rounded to bf16 (nearest even) into `target`, plain like
    /// the arena: by the same reorder, instead of into the fp32 arena; or, for a gradient our own
    /// kernel writes (written_by_own_kernel()), by that kernel beside the fp32 arena. Returns the
    /// elements it covers: all of them, or 0 when backward-weights writes the fp32 arena directly
    /// (no reorder).
    std::int64_t publish_as_bf16(std::uint16_t* target);
    /// The gradient is written into the arena by our own kernel, which can round it into
    /// bf16_gradient() as well.
    void written_by_own_kernel() { own_kernel_gradient_ = true; }
    /// Where our kernel writes the gradient rounded to bf16 (publish_as_bf16), or null.
    std::uint16_t* bf16_gradient() const { return bf16_gradient_; }

private:
    dnnl::memory master_;                     ///< O x I x K x K fp32 plain, the values arena
    dnnl::memory master_grad_;                ///< O x I x K x K fp32 plain, the gradient arena
    std::vector<Call> refreshes_;             ///< oneDNN reorders master -> working copy
    Bf16WorkingCopies own_copies_;            ///< the bf16 working copies our writer refreshes
    std::vector<dnnl::memory> own_memories_;  ///< their buffers
    std::optional<Call> publish_;
    bool own_kernel_gradient_ = false;        ///< written_by_own_kernel()
    std::uint16_t* bf16_gradient_ = nullptr;  ///< publish_as_bf16's target for our kernel
};

/// One layer of the network.
class LayerOp {
public:
    virtual ~LayerOp() = default;
    /// Reads its inputs' values, writes its output's value.
    virtual void forward(Context& context) = 0;
    /// Builds the backward primitives once every consumer of its output has bound the output's
    /// gradient (call in backward order).
    virtual void bind_backward(Context& context) = 0;
    /// Gradient of its parameters into the gradient arena (nothing for layers without).
    virtual void backward_parameters(Context& /*context*/) {}
    /// Gradient of its inputs from its output's gradient.
    virtual void backward_inputs(Context& context) = 0;
    /// The convolution or fc weights the layer keeps working copies of (its first parameter
    /// tensor), or none. The network refreshes them when the values arena changes and may have
    /// their gradient published as bf16.
    virtual Weights* weights() { return nullptr; }
    /// The values arena changed: refresh the working copies of weights() (nothing without).
    void refresh_parameters(Context& context) {
        if (Weights* kept = weights()) kept->refresh(context);
    }
};

/// Square kernel geometry of a convolution or pooling layer.
struct Window {
    int kernel = 1;   ///< side, in pixels
    int stride = 1;   ///< in pixels
    int padding = 0;  ///< zeros on each side, in pixels
};

/// Convolution without bias. x: N x I x H x W, y: N x O x H' x W' (y.value allocated by the
/// caller); weights O x I x K x K. input_gradient = false (the image) skips backward-data and
/// lets the primitive pick x's layout: x.value is then replaced if the primitive prefers another.
/// Weights are always in the layout the primitives choose. The activations stay in x's and y's
/// layout unless oneDNN has a better tier of kernel (implementation_tier) for the layouts it
/// would choose itself: then the layer computes in those, with reorders around the primitives
/// (x and dy in, y and dx out), as the network's first convolution does on NHWC.
/// A 1x1 stride-1, or 3x3 stride-1 padded-by-1, bf16 convolution on nChw16c tensors takes its weight
/// gradient from our own kernels (kernels.hpp), written straight into the gradient arena; oneDNN
/// computes everything else.
class Convolution : public LayerOp {
public:
    Convolution(Context& context, Window window, Activation& x, Activation& y, ParameterView weights, DataType type,
                bool input_gradient);
    void forward(Context& context) override;
    void bind_backward(Context& context) override;
    void backward_parameters(Context& context) override;
    void backward_inputs(Context& context) override;
    Weights* weights() override { return &weights_; }
    /// oneDNN's implementation of the forward primitive, e.g. "jit_bf16:avx512_core_bf16".
    std::string implementation() const { return forward_pd_.impl_info_str(); }
    /// True when backward_parameters() runs our own kernel instead of oneDNN's (after
    /// bind_backward()).
    bool own_weight_gradient() const { return !std::holds_alternative<std::monostate>(own_kernel_); }
    /// True when the primitives compute in other layouts than x's or y's (reorders around them).
    bool relaid() const { return x_relaid_.has_value() || y_relaid_.has_value(); }
    /// oneDNN's implementation of the weight-gradient primitive (after bind_backward()), or "" where
    /// our own kernel computes it.
    std::string weight_gradient_implementation() const { return weight_gradient_implementation_; }

private:
    Window window_;
    Activation& x_;
    Activation& y_;
    Weights weights_;
    DataType type_;
    bool input_gradient_;
    dnnl::convolution_forward::primitive_desc forward_pd_;
    /// x and dy as the primitives read them (x.value and y.diff, or copies in their layout), y as
    /// the forward writes it, dx as backward-data writes it (the gradient sink's target, or a copy).
    dnnl::memory x_compute_, y_compute_, dy_compute_, dx_compute_;
    std::optional<Call> x_relaid_, y_relaid_, dy_relaid_, dx_relaid_;  ///< the reorders, where copies
    /// x and dy copied into the layouts of oneDNN's weight-gradient primitive, where those differ
    /// from the forward's (a better tier of kernel there, implementation_tier).
    std::optional<Call> x_weights_relaid_, dy_weights_relaid_;
    std::string weight_gradient_implementation_;
    Call forward_;
    Call backward_data_;
    Call backward_weights_;
    /// The geometry of our kernel that computes the weight gradient, or none (oneDNN's primitive).
    std::variant<std::monostate, Conv1x1Geometry, Conv3x3Geometry> own_kernel_;
    dnnl::memory own_scratch_;  ///< its scratch, in the shared scratchpad
    GradientSink x_grad_;
};

/// Running statistics of a batch norm: C each, fp32, updated by forward().
struct RunningStatistics {
    float* mean = nullptr;
    float* variance = nullptr;  ///< unbiased, as PyTorch keeps it
};

/// Batch normalisation in training mode (batch statistics), optionally followed by a fused ReLU:
/// y = [relu](gamma * (x - mean) / sqrt(var + eps) + beta), x and y N x C x H x W. Parameters:
/// gamma (C) then beta (C), contiguous in the arenas. Running statistics updated with momentum
/// 0.1: r = 0.9 r + 0.1 batch (variance unbiased, n / (n - 1) with n = N x H x W).
///
/// bf16 nChw16c tensors run on our own kernels (batch_norm_kernels.hpp) when own kernels are
/// enabled and the CPU has AVX512-BF16; everything else on oneDNN's primitive. Fusions:
///   Then::relu      fp32 (oneDNN's fuse_norm_relu) or own kernels; oneDNN 2.6's bf16 fused
///                   backward is wrong, so bf16 without our kernels cannot fuse.
///   Then::add_relu  own kernels only: the residual add and ReLU after the batch norm are a
///                   ResidualRelu layer, which writes the block's output. This layer then only
///                   computes the statistics forward and dx backward; its y is a placeholder
///                   whose value is never written (y.diff: bound by the ResidualRelu).
class BatchNorm : public LayerOp {
public:
    static constexpr float kEpsilon = 1e-5f;
    static constexpr float kMomentum = 0.1f;

    enum class Then { nothing, relu, add_relu };

    /// Whether a batch norm over x (its value's descriptor) can fuse `then` here.
    static bool fuses(const dnnl::memory::desc& x, Then then);

    /// Throws std::logic_error when !fuses(x.value's descriptor, then).
    BatchNorm(Context& context, Activation& x, Activation& y, ParameterView gamma_beta, RunningStatistics running,
              Then then);
    void forward(Context& context) override;
    void bind_backward(Context& context) override;
    void backward_parameters(Context& context) override;
    void backward_inputs(Context& context) override;

    /// Whether our own kernels run it (else oneDNN's primitive).
    bool own_kernels() const { return own_.has_value(); }

private:
    friend class ResidualRelu;
    /// Our kernels' state: the geometry and per-channel values (mean_ and variance_ hold the
    /// statistics, as with oneDNN).
    struct Own {
        BatchNormGeometry geometry;
        std::vector<float> inv_std;      ///< C: 1 / sqrt(variance + epsilon)
        std::vector<float> gamma_beta;   ///< 2 C: the parameters the forward pass used
        std::vector<float> dgamma_beta;  ///< 2 C: their gradient, copied to the arena
    };
    static bool own_kernels_apply(const dnnl::memory::desc& x);
    BatchNormChannels channels() const;
    void update_running_statistics() const;

    Activation& x_;
    Activation& y_;
    ParameterView gamma_beta_;
    RunningStatistics running_;
    Then then_;
    std::int64_t values_per_channel_;  ///< N x H x W
    std::optional<Own> own_;
    dnnl::normalization_flags flags_ = dnnl::normalization_flags::none;  ///< oneDNN's
    dnnl::batch_normalization_forward::primitive_desc forward_pd_;       ///< oneDNN's
    dnnl::memory scale_shift_, scale_shift_grad_;                        ///< 2 x C fp32 over the arenas (oneDNN)
    dnnl::memory mean_, variance_;                                       ///< C fp32, this batch's (variance biased)
    dnnl::memory workspace_;                                             ///< oneDNN's fused ReLU's mask
    Call forward_;
    Call backward_;
    GradientSink x_grad_;
};

/// The end of a residual block, fused on our own kernels (bf16 nChw16c): y = relu(bn(x) +
/// shortcut), where bn is a BatchNorm built with Then::add_relu (the branch). Forward: the
/// normalisation, the add and the ReLU in one pass. Backward: y.diff gated by the ReLU in place
/// (it is then the gradient of both the branch and the shortcut), and the batch norm's dgamma
/// and dbeta from the same pass; the batch norm's own backward computes dx. The shortcut shares
/// y.diff when nothing has bound its gradient yet; otherwise y.diff is added to it.
class ResidualRelu : public LayerOp {
public:
    ResidualRelu(Context& context, BatchNorm& branch, Activation& shortcut, Activation& y);
    void forward(Context& context) override;
    void bind_backward(Context& context) override;
    void backward_inputs(Context& context) override;

private:
    BatchNorm& branch_;
    Activation& shortcut_;
    Activation& y_;
    std::optional<Call> accumulate_;
};

/// ReLU, y = max(x, 0); in place when y.value is x.value (the backward pass reads y).
class Relu : public LayerOp {
public:
    Relu(Context& context, Activation& x, Activation& y);
    void forward(Context& context) override;
    void bind_backward(Context& context) override;
    void backward_inputs(Context& context) override;

private:
    Activation& x_;
    Activation& y_;
    dnnl::eltwise_forward::primitive_desc forward_pd_;
    Call forward_;
    Call backward_;
    GradientSink x_grad_;
};

/// Max pooling (training, with its workspace) or average pooling (excluding padding).
/// x: N x C x H x W, y: N x C x H' x W'.
class Pooling : public LayerOp {
public:
    Pooling(Context& context, dnnl::algorithm algorithm, Window window, Activation& x, Activation& y);
    void forward(Context& context) override;
    void bind_backward(Context& context) override;
    void backward_inputs(Context& context) override;

private:
    Window window_;
    dnnl::algorithm algorithm_;
    Activation& x_;
    Activation& y_;
    dnnl::pooling_forward::primitive_desc forward_pd_;
    dnnl::memory workspace_;
    Call forward_;
    Call backward_;
    GradientSink x_grad_;
};

/// Residual add, y = branch + shortcut, all N x C x H x W. Backward passes y's gradient to both
/// inputs: an input whose gradient nothing has bound yet shares y.diff (no copy); otherwise
/// y.diff is added to it.
class Add : public LayerOp {
public:
    Add(Context& context, Activation& branch, Activation& shortcut, Activation& y);
    void forward(Context& context) override;
    void bind_backward(Context& context) override;
    void backward_inputs(Context& context) override;

private:
    Activation& branch_;
    Activation& shortcut_;
    Activation& y_;
    Call forward_;
    std::vector<Call> accumulate_;
};

/// Fully connected layer with bias: logits = x W^T + b. x: N x C x 1 x 1 (the pooled features),
/// W: classes x C, b: classes (contiguous after W in the arenas), logits and their gradient:
/// N x classes fp32 plain (given by the caller). W in the layout the primitives choose; x in
/// its own, or in oneDNN's with reorders where that has a better tier of kernel (as Convolution).
class FullyConnected : public LayerOp {
public:
    FullyConnected(Context& context, Activation& x, dnnl::memory logits, dnnl::memory logits_grad,
                   ParameterView weight_and_bias, DataType type);
    void forward(Context& context) override;
    void bind_backward(Context& context) override;
    void backward_parameters(Context& context) override;
    void backward_inputs(Context& context) override;
    Weights* weights() override { return &weights_; }

private:
    Activation& x_;
    dnnl::memory logits_, logits_grad_;
    dnnl::memory compute_grad_;  ///< logits' gradient in the compute type (bf16 copy or logits_grad_)
    ParameterView params_;
    Weights weights_;
    DataType type_;
    int classes_;
    dnnl::inner_product_forward::primitive_desc forward_pd_;
    dnnl::memory x_compute_, dx_compute_;       ///< x and dx as the primitives use them
    std::optional<Call> x_relaid_, dx_relaid_;  ///< the reorders, where copies
    Call forward_;
    std::optional<Call> convert_grad_;
    Call backward_data_;
    Call backward_weights_;
    GradientSink x_grad_;
};

/// Softmax cross-entropy, mean over the batch, in fp32 with an fp64 sum.
///   logits: batch x classes, labels: batch in [0, classes)
///   logits_grad (out): batch x classes, d(mean loss)/d(logits) = (softmax - onehot) / batch
/// Returns the mean loss. Throws InputError for a label outside [0, classes).
double softmax_cross_entropy(const float* logits, const std::int32_t* labels, int batch, int classes,
                             float* logits_grad);

/// Plain fp32 N x C x H x W (nchw, or nc for 2-D) <-> a memory in any layout and type. For tests
/// and set-up only (they allocate).
void write_plain(const Context& context, dnnl::memory& memory, const float* values);
std::vector<float> read_plain(const Context& context, const dnnl::memory& memory);

}  // namespace epochcast::cpu
