// The oneDNN layers of the CPU backend (see layers.hpp).
#include "executor/cpu/layers.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include "model/errors.hpp"

namespace epochcast::cpu {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

namespace {

constexpr std::size_t kBufferAlignmentBytes = 64;

/// Plain fp32 descriptor of the same dims: nchw for 4-D, nc for 2-D, a for 1-D.
memory::desc plain_f32(const memory::dims& dims) {
    const tag plain = dims.size() == 4 ? tag::nchw : dims.size() == 2 ? tag::nc : tag::a;
    return memory::desc(dims, dt::f32, plain);
}

/// A 1-D fp32 memory of `count` values over host storage owned elsewhere.
memory vector_over(const Context& context, memory::dim count, float* data) {
    return memory(memory::desc({count}, dt::f32, tag::a), context.engine(), data);
}

Call reorder_call(const memory& from, const memory& to) {
    return Call{dnnl::reorder(from, to), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}};
}

/// `tensor` as a primitive uses it, in `wanted`: the tensor itself when that is its layout; else a
/// new memory in `wanted`, and in `copy` the reorder between the two (tensor -> new memory when
/// `into_wanted`, new memory -> tensor otherwise).
memory in_layout(const Context& context, const memory& tensor, const memory::desc& wanted, bool into_wanted,
                 std::optional<Call>& copy) {
    copy.reset();
    if (tensor.get_desc() == wanted) return tensor;
    memory other(wanted, context.engine());
    copy = into_wanted ? reorder_call(tensor, other) : reorder_call(other, tensor);
    return other;
}

/// `fixed`, or `free` (the same primitive with the activations' layouts left to oneDNN) when that
/// runs a better tier of kernel.
template <typename PrimitiveDesc>
PrimitiveDesc better_tier(PrimitiveDesc fixed, PrimitiveDesc free) {
    return implementation_tier(free.impl_info_str()) > implementation_tier(fixed.impl_info_str()) ? free : fixed;
}

/// In place: target += addend (same descriptor).
Call add_into(Context& context, const memory& target, const memory& addend) {
    const auto desc =
        dnnl::binary::desc(dnnl::algorithm::binary_add, target.get_desc(), addend.get_desc(), target.get_desc());
    const auto pd = dnnl::binary::primitive_desc(desc, context.attributes(), context.engine());
    return context.bind(dnnl::binary(pd), pd,
                        {{DNNL_ARG_SRC_0, target}, {DNNL_ARG_SRC_1, addend}, {DNNL_ARG_DST, target}});
}

/// Pass the gradient `dy` on to `input`, as the residual add and the fused residual end do: an
/// input whose gradient nothing has bound yet shares dy (no copy); otherwise the returned call
/// adds dy to it.
std::optional<Call> pass_gradient(Context& context, Activation& input, const memory& dy) {
    if (!input.diff) {
        input.diff = dy;
        return std::nullopt;
    }
    return add_into(context, input.diff, dy);
}

memory::dims dims_of(const memory& m) { return m.get_desc().dims(); }

/// Whether desc is bf16 in nChw16c, the layout our own kernels (kernels.hpp,
/// batch_norm_kernels.hpp) read and write.
bool is_blocked_bf16(const memory::desc& desc) {
    return desc.dims().size() == 4 && desc == memory::desc(desc.dims(), dt::bf16, tag::nChw16c);
}

/// A bf16 memory's raw 16-bit words, as our kernels take them.
const std::uint16_t* bits_of(const memory& m) { return static_cast<const std::uint16_t*>(m.get_data_handle()); }
std::uint16_t* mutable_bits_of(const memory& m) { return static_cast<std::uint16_t*>(m.get_data_handle()); }

}  // namespace

std::optional<BlockedLayout> blocked_layout_of(const memory::desc& desc) {
    const dnnl_memory_desc_t& data = desc.data;
    if (data.format_kind != dnnl_blocked || data.extra.flags != 0) return std::nullopt;
    BlockedLayout layout;
    const dnnl_blocking_desc_t& blocking = data.format_desc.blocking;
    for (int d = 0; d < data.ndims; ++d) {
        if (data.padded_offsets[d] != 0) return std::nullopt;
        layout.dims.push_back(data.dims[d]);
        layout.padded_dims.push_back(data.padded_dims[d]);
        layout.strides.push_back(blocking.strides[d]);
    }
    for (int b = 0; b < blocking.inner_nblks; ++b) {
        layout.inner_blocks.push_back(static_cast<int>(blocking.inner_blks[b]));
        layout.inner_dims.push_back(static_cast<int>(blocking.inner_idxs[b]));
    }
    layout.offset0 = data.offset0;
    return layout;
}

// ---------------------------------------------------------------------------------------------
// Types, layouts, ISA

std::string implementation_isa(const std::string& implementation) {
    const std::size_t colon = implementation.rfind(':');
    const std::string isa = colon == std::string::npos ? implementation : implementation.substr(colon + 1);
    if (isa.find("amx") != std::string::npos) return "avx512_core_amx";
    if (isa == "any") return implementation.rfind("ref", 0) == 0 ? "reference" : "other";
    for (const char* known : kKernelIsas) {
        if (isa == known) return isa;
    }
    return "other";
}

int implementation_tier(const std::string& implementation) {
    const std::string isa = implementation_isa(implementation);
    return isa == "reference" ? 0 : isa == "avx512_core_amx" ? 2 : 1;
}

ConvolutionChoice convolution_choice(int batch, int channels, int side, DataType type) {
    const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const memory::desc x({batch, channels, side, side}, to_dnnl(type), tag::any);
    const memory::desc w({channels, channels, 3, 3}, to_dnnl(type), tag::any);
    const auto desc = dnnl::convolution_forward::desc(
        dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, x, w, x, {1, 1}, {1, 1}, {1, 1});
    const dnnl::convolution_forward::primitive_desc pd(desc, engine);
    const memory::desc chosen = pd.src_desc();
    const auto is = [&](tag layout) { return chosen == memory::desc(chosen.dims(), chosen.data_type(), layout); };
    const bool channels_last = is(tag::nhwc);
    return {pd.impl_info_str(), channels_last ? Layout::nhwc : Layout::blocked,
            channels_last      ? "NHWC"
            : is(tag::nChw16c) ? "nChw16c"
            : is(tag::nChw8c)  ? "nChw8c"
                               : "other"};
}

memory::data_type to_dnnl(DataType type) { return type == DataType::bf16 ? dt::bf16 : dt::f32; }

int blocked_channels() {
    switch (dnnl::get_effective_cpu_isa()) {
        case dnnl::cpu_isa::avx512_mic:
        case dnnl::cpu_isa::avx512_mic_4ops:
        case dnnl::cpu_isa::avx512_core:
        case dnnl::cpu_isa::avx512_core_vnni:
        case dnnl::cpu_isa::avx512_core_bf16:
        case dnnl::cpu_isa::avx512_core_amx:
            return 16;
        default:
            return 8;
    }
}

std::string layout_name(Layout layout) {
    return layout == Layout::nhwc ? "NHWC" : blocked_channels() == 16 ? "nChw16c" : "nChw8c";
}

memory::desc activation_desc(int batch, const Shape& shape, DataType type, Layout layout) {
    const memory::dims dims{batch, shape.channels, shape.height, shape.width};
    const tag blocked = blocked_channels() == 16 ? tag::nChw16c : tag::nChw8c;
    return memory::desc(dims, to_dnnl(type), layout == Layout::nhwc ? tag::nhwc : blocked);
}

bool cpu_has_native_bf16() {
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
}

std::string cpu_isa_name() {
    switch (dnnl::get_effective_cpu_isa()) {
        case dnnl::cpu_isa::sse41:
            return "sse41";
        case dnnl::cpu_isa::avx:
            return "avx";
        case dnnl::cpu_isa::avx2:
            return "avx2";
        case dnnl::cpu_isa::avx2_vnni:
            return "avx2_vnni";
        case dnnl::cpu_isa::avx512_mic:
            return "avx512_mic";
        case dnnl::cpu_isa::avx512_mic_4ops:
            return "avx512_mic_4ops";
        case dnnl::cpu_isa::avx512_core:
            return "avx512_core";
        case dnnl::cpu_isa::avx512_core_vnni:
            return "avx512_core_vnni";
        case dnnl::cpu_isa::avx512_core_bf16:
            return "avx512_core_bf16";
        case dnnl::cpu_isa::avx512_core_amx:
            return "avx512_core_amx";
        default:
            return "unknown";
    }
}

// ---------------------------------------------------------------------------------------------
// Context

Context::Context(int threads) : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_), threads_(threads) {
    if (threads < 1) throw InputError("thread count " + std::to_string(threads) + " is invalid; use at least 1");
    omp_set_num_threads(threads);
}

dnnl::primitive_attr Context::attributes() const {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
}

memory Context::shared_memory(const memory::desc& desc, Shared which) {
    if (finalized_) throw std::logic_error("cpu::Context: shared memory requested after finalize()");
    Buffer& buffer = buffers_[static_cast<int>(which)];
    buffer.bytes = std::max(buffer.bytes, desc.get_size());
    memory view(desc, engine_, DNNL_MEMORY_NONE);
    buffer.users.push_back(view);
    return view;
}

Call Context::bind(dnnl::primitive primitive, const dnnl::primitive_desc& pd, std::unordered_map<int, memory> args) {
    const memory::desc scratchpad = pd.scratchpad_desc();
    if (scratchpad.get_size() > 0) args[DNNL_ARG_SCRATCHPAD] = shared_memory(scratchpad, Shared::scratchpad);
    return Call{std::move(primitive), std::move(args)};
}

void Context::finalize() {
    for (Buffer& buffer : buffers_) {
        const std::size_t bytes =
            (buffer.bytes + kBufferAlignmentBytes - 1) / kBufferAlignmentBytes * kBufferAlignmentBytes;
        if (bytes > 0) {
            buffer.data = {static_cast<std::byte*>(std::aligned_alloc(kBufferAlignmentBytes, bytes)), std::free};
            if (!buffer.data) throw std::bad_alloc();
        }
        for (memory& user : buffer.users) user.set_data_handle(buffer.data.get());
    }
    finalized_ = true;
}

void Context::run(const Call& call) {
    if (!finalized_) throw std::logic_error("cpu::Context: run() before finalize()");
    call.primitive.execute(stream_, call.args);
}

Activation make_activation(const Context& context, const memory::desc& desc) {
    return Activation{memory(desc, context.engine()), memory()};
}

// ---------------------------------------------------------------------------------------------
// GradientSink

GradientSink GradientSink::bind(Context& context, Activation& x) {
    GradientSink sink;
    if (!x.diff) {
        x.diff = memory(x.value.get_desc(), context.engine());
        sink.target_ = x.diff;
    } else {
        sink.target_ = context.shared_memory(x.value.get_desc(), Context::Shared::gradient_scratch);
        sink.accumulate_ = add_into(context, x.diff, sink.target_);
    }
    return sink;
}

void GradientSink::finish(Context& context) const {
    if (accumulate_) context.run(*accumulate_);
}

// ---------------------------------------------------------------------------------------------
// Weights

Weights::Weights(const Context& context, memory::dims dims, ParameterView view)
    : master_(plain_f32(dims), context.engine(), view.value),
      master_grad_(plain_f32(dims), context.engine(), view.gradient) {}

memory Weights::working(const Context& context, const memory::desc& wanted) {
    if (wanted == master_.get_desc()) return master_;
    memory copy(wanted, context.engine());
    if (const std::optional<BlockedLayout> layout = blocked_layout_of(wanted);
        own_kernels_enabled() && wanted.data_type() == dt::bf16 && layout && Bf16WorkingCopies::applies(*layout) &&
        layout->dims == dims_of(master_)) {
        own_copies_.add(*layout, mutable_bits_of(copy));
        own_memories_.push_back(copy);
    } else {
        refreshes_.push_back(reorder_call(master_, copy));
    }
    return copy;
}

memory Weights::gradient(const Context& context, const memory::desc& produced) {
    if (produced == master_grad_.get_desc()) return master_grad_;
    memory written(produced, context.engine());
    publish_ = reorder_call(written, master_grad_);
    return written;
}

void Weights::refresh(Context& context) const {
    own_copies_.write(static_cast<const float*>(master_.get_data_handle()), context.threads());
    for (const Call& call : refreshes_) context.run(call);
}

void Weights::publish_gradient(Context& context) const {
    if (publish_) context.run(*publish_);
}

std::int64_t Weights::publish_as_bf16(std::uint16_t* target) {
    if (!publish_ && !own_kernel_gradient_) return 0;
    const memory::desc plain = master_grad_.get_desc();
    const memory::desc bf16(plain.dims(), dt::bf16, plain.dims().size() == 4 ? tag::nchw : tag::nc);
    if (publish_) {
        publish_ = reorder_call(publish_->args.at(DNNL_ARG_FROM), memory(bf16, master_grad_.get_engine(), target));
    } else {
        bf16_gradient_ = target;
    }
    return static_cast<std::int64_t>(bf16.get_size() / sizeof(std::uint16_t));
}

// ---------------------------------------------------------------------------------------------
// Convolution

Convolution::Convolution(Context& context, Window window, Activation& x, Activation& y, ParameterView weights,
                         DataType type, bool input_gradient)
    : window_(window),
      x_(x),
      y_(y),
      weights_(context, {dims_of(y.value)[1], dims_of(x.value)[1], window.kernel, window.kernel}, weights),
      type_(type),
      input_gradient_(input_gradient) {
    const memory::desc y_desc = y.value.get_desc();
    const memory::dims x_dims = dims_of(x.value);
    const memory::dims w_dims{y_desc.dims()[1], x_dims[1], window.kernel, window.kernel};
    const memory::dims strides{window.stride, window.stride}, padding{window.padding, window.padding};
    const auto make = [&](const memory::desc& x_desc, const memory::desc& y_desc_wanted) {
        const auto desc = dnnl::convolution_forward::desc(
            dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, x_desc,
            memory::desc(w_dims, to_dnnl(type), tag::any), y_desc_wanted, strides, padding, padding);
        return dnnl::convolution_forward::primitive_desc(desc, context.attributes(), context.engine());
    };
    // An input without gradient (the image) may take whatever layout the primitive prefers.
    const memory::desc free_x(x_dims, to_dnnl(type), tag::any);
    forward_pd_ = better_tier(make(input_gradient ? x.value.get_desc() : free_x, y_desc),
                              make(free_x, memory::desc(y_desc.dims(), to_dnnl(type), tag::any)));
    if (!input_gradient && forward_pd_.src_desc() != x.value.get_desc()) {
        x.value = memory(forward_pd_.src_desc(), context.engine());
    }
    x_compute_ = in_layout(context, x.value, forward_pd_.src_desc(), /*into_wanted=*/true, x_relaid_);
    y_compute_ = in_layout(context, y.value, forward_pd_.dst_desc(), /*into_wanted=*/false, y_relaid_);
    forward_ = context.bind(dnnl::convolution_forward(forward_pd_), forward_pd_,
                            {{DNNL_ARG_SRC, x_compute_},
                             {DNNL_ARG_WEIGHTS, weights_.working(context, forward_pd_.weights_desc())},
                             {DNNL_ARG_DST, y_compute_}});
}

void Convolution::forward(Context& context) {
    if (x_relaid_) context.run(*x_relaid_);
    context.run(forward_);
    if (y_relaid_) context.run(*y_relaid_);
}

void Convolution::bind_backward(Context& context) {
    // The primitives' layouts (the forward's): dy brought into it, dx written in it.
    const memory::desc x_desc = x_compute_.get_desc();
    const memory::desc y_desc = y_compute_.get_desc();
    dy_compute_ = in_layout(context, y_.diff, y_desc, /*into_wanted=*/true, dy_relaid_);
    const memory::dims w_dims{y_desc.dims()[1], x_desc.dims()[1], window_.kernel, window_.kernel};
    const memory::dims strides{window_.stride, window_.stride}, padding{window_.padding, window_.padding};

    // Backward-weights: our own kernel where it applies (1x1 stride 1, or 3x3 stride 1 padded by 1;
    // fp32 plain, straight into the arena),
    // else oneDNN's primitive with an fp32 gradient in whatever layout it prefers.
    const Conv1x1Geometry geometry{static_cast<int>(x_desc.dims()[0]), static_cast<int>(x_desc.dims()[1]),
                                   static_cast<int>(y_desc.dims()[1]),
                                   static_cast<int>(x_desc.dims()[2] * x_desc.dims()[3])};
    const Conv3x3Geometry geometry_3x3{static_cast<int>(x_desc.dims()[0]), static_cast<int>(x_desc.dims()[1]),
                                       static_cast<int>(y_desc.dims()[1]), static_cast<int>(x_desc.dims()[2]),
                                       static_cast<int>(x_desc.dims()[3])};
    const bool unit_window = window_.kernel == 1 && window_.stride == 1 && window_.padding == 0;
    const bool same_3x3 = window_.kernel == 3 && window_.stride == 1 && window_.padding == 1;
    const bool own =
        own_kernels_enabled() && type_ == DataType::bf16 && is_blocked_bf16(x_desc) && is_blocked_bf16(y_desc);
    std::size_t own_bytes = 0;
    if (own && unit_window && conv1x1_weight_gradient_applies(geometry)) {
        own_kernel_ = geometry;
        weights_.written_by_own_kernel();
        own_bytes = conv1x1_weight_gradient_scratch_bytes(geometry, context.threads());
    } else if (own && same_3x3 && conv3x3_weight_gradient_preferred(geometry_3x3)) {
        own_kernel_ = geometry_3x3;
        weights_.written_by_own_kernel();
        own_bytes = conv3x3_weight_gradient_scratch_bytes(geometry_3x3, context.threads());
    }
    if (own_weight_gradient()) {
        own_scratch_ = context.shared_memory(memory::desc({static_cast<memory::dim>(own_bytes)}, dt::u8, tag::a),
                                             Context::Shared::scratchpad);
    } else {
        const auto make = [&](const memory::desc& x_wanted, const memory::desc& dy_wanted) {
            const auto desc = dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, x_wanted,
                                                                       memory::desc(w_dims, dt::f32, tag::any),
                                                                       dy_wanted, strides, padding, padding);
            return dnnl::convolution_backward_weights::primitive_desc(desc, context.attributes(), context.engine(),
                                                                      forward_pd_);
        };
        // As the forward: the layouts left to oneDNN where they give it a better tier of kernel
        // (AVX2's JIT weight gradient refuses a 3x3 window on a 1 x 1 map, ResNet's last stage at
        // 32 px; gemm on plain layouts takes it), x and dy then copied into them.
        const auto weights_pd =
            better_tier(make(x_desc, y_desc), make(memory::desc(x_desc.dims(), x_desc.data_type(), tag::any),
                                                   memory::desc(y_desc.dims(), y_desc.data_type(), tag::any)));
        weight_gradient_implementation_ = weights_pd.impl_info_str();
        const memory x_read =
            in_layout(context, x_compute_, weights_pd.src_desc(), /*into_wanted=*/true, x_weights_relaid_);
        const memory dy_read =
            in_layout(context, dy_compute_, weights_pd.diff_dst_desc(), /*into_wanted=*/true, dy_weights_relaid_);
        backward_weights_ =
            context.bind(dnnl::convolution_backward_weights(weights_pd), weights_pd,
                         {{DNNL_ARG_SRC, x_read},
                          {DNNL_ARG_DIFF_DST, dy_read},
                          {DNNL_ARG_DIFF_WEIGHTS, weights_.gradient(context, weights_pd.diff_weights_desc())}});
    }
    if (!input_gradient_) return;

    // Backward-data into x's gradient (direct or accumulated).
    x_grad_ = GradientSink::bind(context, x_);
    dx_compute_ = in_layout(context, x_grad_.target(), x_desc, /*into_wanted=*/false, dx_relaid_);
    const auto data_desc = dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, x_desc,
                                                                 memory::desc(w_dims, to_dnnl(type_), tag::any), y_desc,
                                                                 strides, padding, padding);
    const auto data_pd =
        dnnl::convolution_backward_data::primitive_desc(data_desc, context.attributes(), context.engine(), forward_pd_);
    backward_data_ = context.bind(dnnl::convolution_backward_data(data_pd), data_pd,
                                  {{DNNL_ARG_DIFF_DST, dy_compute_},
                                   {DNNL_ARG_WEIGHTS, weights_.working(context, data_pd.weights_desc())},
                                   {DNNL_ARG_DIFF_SRC, dx_compute_}});
}

void Convolution::backward_parameters(Context& context) {
    if (dy_relaid_) context.run(*dy_relaid_);
    if (own_weight_gradient()) {
        const std::uint16_t* x = bits_of(x_compute_);
        const std::uint16_t* dy = bits_of(dy_compute_);
        auto* scratch = static_cast<std::byte*>(own_scratch_.get_data_handle());
        if (const auto* g = std::get_if<Conv1x1Geometry>(&own_kernel_)) {
            conv1x1_weight_gradient_bf16(*g, x, dy, weights_.gradient_arena(), scratch, context.threads(),
                                         weights_.bf16_gradient());
        } else {
            conv3x3_weight_gradient_bf16(std::get<Conv3x3Geometry>(own_kernel_), x, dy, weights_.gradient_arena(),
                                         scratch, context.threads(), weights_.bf16_gradient());
        }
        return;
    }
    if (x_weights_relaid_) context.run(*x_weights_relaid_);
    if (dy_weights_relaid_) context.run(*dy_weights_relaid_);
    context.run(backward_weights_);
    weights_.publish_gradient(context);
}

void Convolution::backward_inputs(Context& context) {
    if (!input_gradient_) return;
    context.run(backward_data_);
    if (dx_relaid_) context.run(*dx_relaid_);
    x_grad_.finish(context);
}

// ---------------------------------------------------------------------------------------------
// BatchNorm

bool BatchNorm::own_kernels_apply(const memory::desc& x) {
    if (!own_kernels_enabled() || !is_blocked_bf16(x)) return false;
    const memory::dims dims = x.dims();
    return batch_norm_applies(
        BatchNormGeometry{static_cast<int>(dims[0]), static_cast<int>(dims[1]), static_cast<int>(dims[2] * dims[3])});
}

bool BatchNorm::fuses(const memory::desc& x, Then then) {
    switch (then) {
        case Then::nothing:
            return true;
        case Then::relu:
            return x.data_type() == dt::f32 || own_kernels_apply(x);
        case Then::add_relu:
            return own_kernels_apply(x);
    }
    return false;
}

BatchNorm::BatchNorm(Context& context, Activation& x, Activation& y, ParameterView gamma_beta,
                     RunningStatistics running, Then then)
    : x_(x), y_(y), gamma_beta_(gamma_beta), running_(running), then_(then) {
    const memory::desc x_desc = x.value.get_desc();
    if (!fuses(x_desc, then)) {
        throw std::logic_error("BatchNorm: a " + std::string(x_desc.data_type() == dt::bf16 ? "bf16" : "fp32") +
                               " tensor in this layout cannot fuse the layers after it here");
    }
    const memory::dims dims = x_desc.dims();  // N x C x H x W
    values_per_channel_ = dims[0] * dims[2] * dims[3];
    if (own_kernels_apply(x_desc)) {
        const auto channels = static_cast<std::size_t>(dims[1]);
        own_ = Own{BatchNormGeometry{static_cast<int>(dims[0]), static_cast<int>(dims[1]),
                                     static_cast<int>(dims[2] * dims[3])},
                   std::vector<float>(channels), std::vector<float>(2 * channels), std::vector<float>(2 * channels)};
        const memory::desc channel_desc({dims[1]}, dt::f32, tag::a);
        mean_ = memory(channel_desc, context.engine());
        variance_ = memory(channel_desc, context.engine());
        return;
    }
    flags_ = dnnl::normalization_flags::use_scale_shift |
             (then == Then::relu ? dnnl::normalization_flags::fuse_norm_relu : dnnl::normalization_flags::none);
    const auto desc =
        dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, x_desc, kEpsilon, flags_);
    forward_pd_ = dnnl::batch_normalization_forward::primitive_desc(desc, context.attributes(), context.engine());
    // gamma (C) then beta (C): oneDNN's 2 x C scale-shift is exactly the arenas' layout.
    const memory::desc scale_shift_desc({2, dims[1]}, dt::f32, tag::nc);
    scale_shift_ = memory(scale_shift_desc, context.engine(), gamma_beta.value);
    scale_shift_grad_ = memory(scale_shift_desc, context.engine(), gamma_beta.gradient);
    mean_ = memory(forward_pd_.mean_desc(), context.engine());
    variance_ = memory(forward_pd_.variance_desc(), context.engine());
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, x.value},
                                         {DNNL_ARG_DST, y.value},
                                         {DNNL_ARG_SCALE_SHIFT, scale_shift_},
                                         {DNNL_ARG_MEAN, mean_},
                                         {DNNL_ARG_VARIANCE, variance_}};
    if (then == Then::relu) {
        workspace_ = memory(forward_pd_.workspace_desc(), context.engine());
        args[DNNL_ARG_WORKSPACE] = workspace_;
    }
    forward_ = context.bind(dnnl::batch_normalization_forward(forward_pd_), forward_pd_, std::move(args));
}

BatchNormChannels BatchNorm::channels() const {
    const std::size_t c = own_->inv_std.size();
    return {static_cast<const float*>(mean_.get_data_handle()), own_->inv_std.data(), own_->gamma_beta.data(),
            own_->gamma_beta.data() + c};
}

void BatchNorm::forward(Context& context) {
    if (own_) {
        const BatchNormGeometry& g = own_->geometry;
        auto* variance = static_cast<float*>(variance_.get_data_handle());
        batch_norm_statistics_bf16(g, bits_of(x_.value), static_cast<float*>(mean_.get_data_handle()), variance,
                                   context.threads());
        for (std::size_t c = 0; c < own_->inv_std.size(); ++c) {
            own_->inv_std[c] = static_cast<float>(1.0 / std::sqrt(double(variance[c]) + double(kEpsilon)));
        }
        // The parameters as this forward pass used them: the backward pass recomputes the ReLU's
        // gate from them, whatever the optimizer does to the arena meanwhile.
        std::copy_n(gamma_beta_.value, own_->gamma_beta.size(), own_->gamma_beta.begin());
        if (then_ != Then::add_relu) {
            batch_norm_forward_bf16(g, bits_of(x_.value), channels(), nullptr, then_ == Then::relu,
                                    mutable_bits_of(y_.value), context.threads());
        }
    } else {
        context.run(forward_);
    }
    update_running_statistics();
}

// r = (1 - momentum) r + momentum batch; the batch variance is biased (divides by n), the running
// one unbiased (n / (n - 1)); with one value per channel (n = 1) the batch variance 0 is kept.
void BatchNorm::update_running_statistics() const {
    const auto* mean = static_cast<const float*>(mean_.get_data_handle());
    const auto* variance = static_cast<const float*>(variance_.get_data_handle());
    const std::int64_t n = values_per_channel_;
    const float unbias = n > 1 ? static_cast<float>(n) / static_cast<float>(n - 1) : 1.0f;
    const auto channels = static_cast<std::int64_t>(mean_.get_desc().dims()[0]);
    for (std::int64_t c = 0; c < channels; ++c) {
        running_.mean[c] = (1 - kMomentum) * running_.mean[c] + kMomentum * mean[c];
        running_.variance[c] = (1 - kMomentum) * running_.variance[c] + kMomentum * variance[c] * unbias;
    }
}

void BatchNorm::bind_backward(Context& context) {
    x_grad_ = GradientSink::bind(context, x_);
    if (own_) {
        const memory::desc& x_desc = x_.value.get_desc();
        if (!y_.diff || y_.diff.get_desc() != x_desc || x_grad_.target().get_desc() != x_desc) {
            throw std::logic_error("BatchNorm: our kernels need dy and dx bound, in x's nChw16c bf16 layout");
        }
        return;
    }
    const auto desc = dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, y_.diff.get_desc(),
                                                               x_.value.get_desc(), kEpsilon, flags_);
    const auto pd =
        dnnl::batch_normalization_backward::primitive_desc(desc, context.attributes(), context.engine(), forward_pd_);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, x_.value},
                                         {DNNL_ARG_MEAN, mean_},
                                         {DNNL_ARG_VARIANCE, variance_},
                                         {DNNL_ARG_DIFF_DST, y_.diff},
                                         {DNNL_ARG_SCALE_SHIFT, scale_shift_},
                                         {DNNL_ARG_DIFF_SRC, x_grad_.target()},
                                         {DNNL_ARG_DIFF_SCALE_SHIFT, scale_shift_grad_}};
    if (workspace_) args[DNNL_ARG_WORKSPACE] = workspace_;
    backward_ = context.bind(dnnl::batch_normalization_backward(pd), pd, std::move(args));
}

// oneDNN: one primitive computes the gradients of gamma, beta and x; x's is finished in
// backward_inputs. Ours: the sums (dgamma, dbeta) here, dx in backward_inputs; with Then::add_relu
// the ResidualRelu's backward has computed the sums already.
void BatchNorm::backward_parameters(Context& context) {
    if (!own_) {
        context.run(backward_);
        return;
    }
    const std::size_t c = own_->inv_std.size();
    float* dgamma = own_->dgamma_beta.data();
    if (then_ != Then::add_relu) {
        batch_norm_backward_sums_bf16(own_->geometry, bits_of(x_.value), mutable_bits_of(y_.diff), channels(),
                                      then_ == Then::relu ? ReluGate::recompute : ReluGate::none, nullptr, dgamma,
                                      dgamma + c, context.threads());
    }
    std::copy_n(dgamma, 2 * c, gamma_beta_.gradient);
}

void BatchNorm::backward_inputs(Context& context) {
    if (own_) {
        const float* dgamma = own_->dgamma_beta.data();
        batch_norm_backward_data_bf16(own_->geometry, bits_of(x_.value), bits_of(y_.diff), channels(),
                                      then_ == Then::relu ? ReluGate::recompute : ReluGate::none, dgamma,
                                      dgamma + own_->inv_std.size(), mutable_bits_of(x_grad_.target()),
                                      context.threads());
    }
    x_grad_.finish(context);
}

// ---------------------------------------------------------------------------------------------
// ResidualRelu

ResidualRelu::ResidualRelu(Context& /*context*/, BatchNorm& branch, Activation& shortcut, Activation& y)
    : branch_(branch), shortcut_(shortcut), y_(y) {
    if (branch.then_ != BatchNorm::Then::add_relu || !branch.own_) {
        throw std::logic_error("ResidualRelu: the branch's batch norm must be built with Then::add_relu");
    }
    const memory::desc& x_desc = branch.x_.value.get_desc();
    if (shortcut.value.get_desc() != x_desc || y.value.get_desc() != x_desc) {
        throw std::logic_error("ResidualRelu: the shortcut and the output must have the branch's shape and layout");
    }
}

void ResidualRelu::forward(Context& context) {
    batch_norm_forward_bf16(branch_.own_->geometry, bits_of(branch_.x_.value), branch_.channels(),
                            bits_of(shortcut_.value), /*relu=*/true, mutable_bits_of(y_.value), context.threads());
}

void ResidualRelu::bind_backward(Context& context) {
    if (!y_.diff || y_.diff.get_desc() != y_.value.get_desc()) {
        throw std::logic_error("ResidualRelu: dy must be bound, in y's layout");
    }
    branch_.y_.diff = y_.diff;  // the gated dy, in place
    accumulate_ = pass_gradient(context, shortcut_, y_.diff);
}

void ResidualRelu::backward_inputs(Context& context) {
    BatchNorm::Own& own = *branch_.own_;
    float* dgamma = own.dgamma_beta.data();
    batch_norm_backward_sums_bf16(own.geometry, bits_of(branch_.x_.value), mutable_bits_of(y_.diff), branch_.channels(),
                                  ReluGate::output, bits_of(y_.value), dgamma, dgamma + own.inv_std.size(),
                                  context.threads());
    if (accumulate_) context.run(*accumulate_);
}

// ---------------------------------------------------------------------------------------------
// Relu

Relu::Relu(Context& context, Activation& x, Activation& y) : x_(x), y_(y) {
    // The "use dst" variant lets the backward pass read y, so the forward may run in place.
    const auto desc =
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::eltwise_relu_use_dst_for_bwd,
                                    x.value.get_desc(), 0.0f, 0.0f);
    forward_pd_ = dnnl::eltwise_forward::primitive_desc(desc, context.attributes(), context.engine());
    forward_ = context.bind(dnnl::eltwise_forward(forward_pd_), forward_pd_,
                            {{DNNL_ARG_SRC, x.value}, {DNNL_ARG_DST, y.value}});
}

void Relu::forward(Context& context) { context.run(forward_); }

void Relu::bind_backward(Context& context) {
    x_grad_ = GradientSink::bind(context, x_);
    const auto desc = dnnl::eltwise_backward::desc(dnnl::algorithm::eltwise_relu_use_dst_for_bwd, y_.diff.get_desc(),
                                                   y_.value.get_desc(), 0.0f, 0.0f);
    const auto pd = dnnl::eltwise_backward::primitive_desc(desc, context.attributes(), context.engine(), forward_pd_);
    backward_ =
        context.bind(dnnl::eltwise_backward(pd), pd,
                     {{DNNL_ARG_DST, y_.value}, {DNNL_ARG_DIFF_DST, y_.diff}, {DNNL_ARG_DIFF_SRC, x_grad_.target()}});
}

void Relu::backward_inputs(Context& context) {
    context.run(backward_);
    x_grad_.finish(context);
}

// ---------------------------------------------------------------------------------------------
// Pooling

Pooling::Pooling(Context& context, dnnl::algorithm algorithm, Window window, Activation& x, Activation& y)
    : window_(window), algorithm_(algorithm), x_(x), y_(y) {
    const memory::dims strides{window.stride, window.stride}, kernel{window.kernel, window.kernel},
        padding{window.padding, window.padding};
    const auto desc = dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, algorithm, x.value.get_desc(),
                                                  y.value.get_desc(), strides, kernel, padding, padding);
    forward_pd_ = dnnl::pooling_forward::primitive_desc(desc, context.attributes(), context.engine());
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, x.value}, {DNNL_ARG_DST, y.value}};
    if (forward_pd_.workspace_desc().get_size() > 0) {
        workspace_ = memory(forward_pd_.workspace_desc(), context.engine());
        args[DNNL_ARG_WORKSPACE] = workspace_;
    }
    forward_ = context.bind(dnnl::pooling_forward(forward_pd_), forward_pd_, std::move(args));
}

void Pooling::forward(Context& context) { context.run(forward_); }

void Pooling::bind_backward(Context& context) {
    x_grad_ = GradientSink::bind(context, x_);
    const memory::dims strides{window_.stride, window_.stride}, kernel{window_.kernel, window_.kernel},
        padding{window_.padding, window_.padding};
    const auto desc = dnnl::pooling_backward::desc(algorithm_, x_.value.get_desc(), y_.diff.get_desc(), strides, kernel,
                                                   padding, padding);
    const auto pd = dnnl::pooling_backward::primitive_desc(desc, context.attributes(), context.engine(), forward_pd_);
    std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, y_.diff}, {DNNL_ARG_DIFF_SRC, x_grad_.target()}};
    if (workspace_) args[DNNL_ARG_WORKSPACE] = workspace_;
    backward_ = context.bind(dnnl::pooling_backward(pd), pd, std::move(args));
}

void Pooling::backward_inputs(Context& context) {
    context.run(backward_);
    x_grad_.finish(context);
}

// ---------------------------------------------------------------------------------------------
// Add

Add::Add(Context& context, Activation& branch, Activation& shortcut, Activation& y)
    : branch_(branch), shortcut_(shortcut), y_(y) {
    const auto desc = dnnl::binary::desc(dnnl::algorithm::binary_add, branch.value.get_desc(),
                                         shortcut.value.get_desc(), y.value.get_desc());
    const auto pd = dnnl::binary::primitive_desc(desc, context.attributes(), context.engine());
    forward_ =
        context.bind(dnnl::binary(pd), pd,
                     {{DNNL_ARG_SRC_0, branch.value}, {DNNL_ARG_SRC_1, shortcut.value}, {DNNL_ARG_DST, y.value}});
}

void Add::forward(Context& context) { context.run(forward_); }

// d(branch) = d(shortcut) = dy: an input nothing has written yet shares dy's memory.
void Add::bind_backward(Context& context) {
    for (Activation* input : {&branch_, &shortcut_}) {
        if (std::optional<Call> call = pass_gradient(context, *input, y_.diff)) accumulate_.push_back(std::move(*call));
    }
}

void Add::backward_inputs(Context& context) {
    for (const Call& call : accumulate_) context.run(call);
}

// ---------------------------------------------------------------------------------------------
// FullyConnected

FullyConnected::FullyConnected(Context& context, Activation& x, memory logits, memory logits_grad,
                               ParameterView weight_and_bias, DataType type)
    : x_(x),
      logits_(std::move(logits)),
      logits_grad_(std::move(logits_grad)),
      params_(weight_and_bias),
      weights_(context, {dims_of(logits_)[1], dims_of(x.value)[1], 1, 1}, weight_and_bias),
      type_(type),
      classes_(static_cast<int>(dims_of(logits_)[1])) {
    const memory::dims w_dims{classes_, dims_of(x.value)[1], 1, 1};
    const auto make = [&](const memory::desc& x_desc) {
        const auto desc = dnnl::inner_product_forward::desc(
            dnnl::prop_kind::forward_training, x_desc, memory::desc(w_dims, to_dnnl(type), tag::any),
            memory::desc({classes_}, dt::f32, tag::a), logits_.get_desc());
        return dnnl::inner_product_forward::primitive_desc(desc, context.attributes(), context.engine());
    };
    forward_pd_ = better_tier(make(x.value.get_desc()), make(memory::desc(dims_of(x.value), to_dnnl(type), tag::any)));
    x_compute_ = in_layout(context, x.value, forward_pd_.src_desc(), /*into_wanted=*/true, x_relaid_);
    const std::int64_t weight_elements = std::int64_t{classes_} * w_dims[1];
    forward_ = context.bind(dnnl::inner_product_forward(forward_pd_), forward_pd_,
                            {{DNNL_ARG_SRC, x_compute_},
                             {DNNL_ARG_WEIGHTS, weights_.working(context, forward_pd_.weights_desc())},
                             {DNNL_ARG_BIAS, vector_over(context, classes_, params_.value + weight_elements)},
                             {DNNL_ARG_DST, logits_}});
}

void FullyConnected::forward(Context& context) {
    if (x_relaid_) context.run(*x_relaid_);
    context.run(forward_);
}

void FullyConnected::bind_backward(Context& context) {
    x_grad_ = GradientSink::bind(context, x_);
    const memory::desc x_desc = x_compute_.get_desc();
    dx_compute_ = in_layout(context, x_grad_.target(), x_desc, /*into_wanted=*/false, dx_relaid_);
    const memory::dims w_dims{classes_, x_desc.dims()[1], 1, 1};
    // bf16: the fp32 logits' gradient is converted once for the bf16 primitives.
    compute_grad_ = logits_grad_;
    if (type_ == DataType::bf16) {
        compute_grad_ = memory(memory::desc(dims_of(logits_grad_), dt::bf16, tag::nc), context.engine());
        convert_grad_ = reorder_call(logits_grad_, compute_grad_);
    }
    const auto data_desc = dnnl::inner_product_backward_data::desc(
        x_desc, memory::desc(w_dims, to_dnnl(type_), tag::any), compute_grad_.get_desc());
    const auto data_pd = dnnl::inner_product_backward_data::primitive_desc(data_desc, context.attributes(),
                                                                           context.engine(), forward_pd_);
    backward_data_ = context.bind(dnnl::inner_product_backward_data(data_pd), data_pd,
                                  {{DNNL_ARG_DIFF_DST, compute_grad_},
                                   {DNNL_ARG_WEIGHTS, weights_.working(context, data_pd.weights_desc())},
                                   {DNNL_ARG_DIFF_SRC, dx_compute_}});

    const auto weights_desc =
        dnnl::inner_product_backward_weights::desc(x_desc, memory::desc(w_dims, dt::f32, tag::any),
                                                   memory::desc({classes_}, dt::f32, tag::a), compute_grad_.get_desc());
    const auto weights_pd = dnnl::inner_product_backward_weights::primitive_desc(weights_desc, context.attributes(),
                                                                                 context.engine(), forward_pd_);
    const std::int64_t weight_elements = std::int64_t{classes_} * w_dims[1];
    backward_weights_ =
        context.bind(dnnl::inner_product_backward_weights(weights_pd), weights_pd,
                     {{DNNL_ARG_SRC, x_compute_},
                      {DNNL_ARG_DIFF_DST, compute_grad_},
                      {DNNL_ARG_DIFF_WEIGHTS, weights_.gradient(context, weights_pd.diff_weights_desc())},
                      {DNNL_ARG_DIFF_BIAS, vector_over(context, classes_, params_.gradient + weight_elements)}});
}

void FullyConnected::backward_parameters(Context& context) {
    if (convert_grad_) context.run(*convert_grad_);
    context.run(backward_weights_);
    weights_.publish_gradient(context);
}

void FullyConnected::backward_inputs(Context& context) {
    context.run(backward_data_);
    if (dx_relaid_) context.run(*dx_relaid_);
    x_grad_.finish(context);
}

// ---------------------------------------------------------------------------------------------
// Softmax cross-entropy

double softmax_cross_entropy(const float* logits, const std::int32_t* labels, int batch, int classes,
                             float* logits_grad) {
    double loss_sum = 0.0;
    const float inverse_batch = 1.0f / static_cast<float>(batch);
    for (int n = 0; n < batch; ++n) {
        const float* row = logits + std::int64_t{n} * classes;  // classes
        float* grad = logits_grad + std::int64_t{n} * classes;  // classes
        const std::int32_t label = labels[n];
        if (label < 0 || label >= classes) {
            throw InputError("label " + std::to_string(label) + " of image " + std::to_string(n) + " is outside [0, " +
                             std::to_string(classes) + ")");
        }
        const float max_logit = *std::max_element(row, row + classes);
        double sum = 0.0;
        for (int c = 0; c < classes; ++c) {
            grad[c] = std::exp(row[c] - max_logit);
            sum += grad[c];
        }
        const auto inverse_sum = static_cast<float>(1.0 / sum);
        for (int c = 0; c < classes; ++c) grad[c] = grad[c] * inverse_sum * inverse_batch;
        grad[label] -= inverse_batch;
        loss_sum += std::log(sum) - static_cast<double>(row[label] - max_logit);
    }
    return loss_sum / batch;
}

// ---------------------------------------------------------------------------------------------
// Plain fp32 host arrays <-> memories

void write_plain(const Context& context, memory& target, const float* values) {
    memory source(plain_f32(target.get_desc().dims()), context.engine(), const_cast<float*>(values));
    dnnl::stream stream(context.engine());
    dnnl::reorder(source, target).execute(stream, source, target);
    stream.wait();
}

std::vector<float> read_plain(const Context& context, const memory& source) {
    const memory::desc plain = plain_f32(source.get_desc().dims());
    std::vector<float> values(plain.get_size() / sizeof(float));
    memory target(plain, context.engine(), values.data());
    dnnl::stream stream(context.engine());
    dnnl::reorder(source, target).execute(stream, const_cast<memory&>(source), target);
    stream.wait();
    return values;
}

}  // namespace epochcast::cpu
