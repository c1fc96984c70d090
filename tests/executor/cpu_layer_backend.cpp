#include "tests/executor/cpu_layer_backend.hpp"

#include <utility>

#include "executor/bf16.hpp"
#include "model/errors.hpp"

namespace epochcast::testing {

using namespace epochcast::cpu;

namespace {

constexpr int kThreads = 2;

Shape shape_of(const Tensor& t) { return Shape{t.c, t.h, t.w}; }

}  // namespace

std::string CpuLayerBackend::skip_reason() const {
    if (bf16() && !cpu_has_native_bf16()) return "no native bf16 on this CPU (oneDNN ISA " + cpu_isa_name() + ")";
    return "";
}

Tensor CpuLayerBackend::as_seen(Tensor t) const {
    if (!bf16()) return t;
    for (double& value : t.data) value = from_bf16_bits(to_bf16_bits(static_cast<float>(value)));
    return t;
}

Activation CpuLayerBackend::activation(const Context& context, const Shape& shape, int batch) const {
    return make_activation(context, activation_desc(batch, shape, type_, layout_));
}

/// Binds and fills dy (as the next layer would), writes x, runs forward and backward; y and dx.
LayerOutputs CpuLayerBackend::run_one_input(Context& context, LayerOp& layer, Activation& xa, Activation& ya,
                                            const Tensor& x, const Tensor& dy) {
    ya.diff = dnnl::memory(ya.value.get_desc(), context.engine());
    layer.bind_backward(context);
    context.finalize();
    write_plain(context, xa.value, x.floats().data());
    write_plain(context, ya.diff, dy.floats().data());
    layer.forward(context);
    layer.backward_parameters(context);
    layer.backward_inputs(context);
    return {read_plain(context, ya.value), read_plain(context, xa.diff)};
}

ConvolutionOutputs CpuLayerBackend::convolution(const ConvolutionCase& c, const ConvolutionInputs& in) {
    Context context{kThreads};
    const int batch = in.x.n;
    const int out_side = in.dy.h;
    std::vector<float> w = in.w;
    std::vector<float> dw(w.size(), -1.0f);
    Activation xa = activation(context, shape_of(in.x), batch);
    Activation ya = activation(context, Shape{c.out_channels, out_side, out_side}, batch);
    Convolution conv(context, Window{c.window.kernel, c.window.stride, c.window.padding}, xa, ya,
                     ParameterView{w.data(), dw.data()}, type_, true);
    ya.diff = dnnl::memory(ya.value.get_desc(), context.engine());
    if (in.previous_dx) xa.diff = dnnl::memory(xa.value.get_desc(), context.engine());
    conv.bind_backward(context);
    context.finalize();
    conv.refresh_parameters(context);
    write_plain(context, xa.value, in.x.floats().data());
    write_plain(context, ya.diff, in.dy.floats().data());
    if (in.previous_dx) write_plain(context, xa.diff, in.previous_dx->floats().data());

    conv.forward(context);
    conv.backward_parameters(context);
    conv.backward_inputs(context);
    last_convolution_ = {conv.own_weight_gradient(), conv.weights()->own_copies(), conv.implementation(), conv.relaid(),
                         conv.weight_gradient_implementation()};
    return {read_plain(context, ya.value), read_plain(context, xa.diff), dw, std::nullopt};
}

BatchNormOutputs CpuLayerBackend::batch_norm(const BatchNormInputs& in, BatchNorm::Then then) {
    Context context{kThreads};
    std::vector<float> gamma_beta = in.gamma_beta;
    std::vector<float> gradient(2 * in.channels, -1.0f);
    std::vector<float> running_mean(in.channels, 0.0f), running_var(in.channels, 1.0f);

    Activation xa = activation(context, shape_of(in.x), in.batch);
    Activation ya = activation(context, shape_of(in.x), in.batch);
    BatchNorm bn(context, xa, ya, ParameterView{gamma_beta.data(), gradient.data()},
                 RunningStatistics{running_mean.data(), running_var.data()}, then);
    ya.diff = dnnl::memory(ya.value.get_desc(), context.engine());
    bn.bind_backward(context);
    context.finalize();
    write_plain(context, xa.value, in.x.floats().data());
    write_plain(context, ya.diff, in.dy.floats().data());
    bn.forward(context);
    bn.backward_parameters(context);
    for (float& value : gamma_beta) value = -value;  // an exchange updating the arena (see the header)
    bn.backward_inputs(context);
    last_batch_norm_own_ = bn.own_kernels();
    return {
        read_plain(context, ya.value), read_plain(context, xa.diff), gradient, running_mean, running_var, std::nullopt};
}

LayerOutputs CpuLayerBackend::relu(const Tensor& x, const Tensor& dy) {
    Context context{kThreads};
    Activation xa = activation(context, shape_of(x), x.n);
    Activation ya{xa.value, dnnl::memory()};
    Relu relu(context, xa, ya);
    return run_one_input(context, relu, xa, ya, x, dy);
}

LayerOutputs CpuLayerBackend::max_pool(const Tensor& x, LayerWindow window, const Tensor& dy) {
    Context context{kThreads};
    Activation xa = activation(context, shape_of(x), x.n);
    Activation ya = activation(context, shape_of(dy), dy.n);
    Pooling pool(context, dnnl::algorithm::pooling_max, Window{window.kernel, window.stride, window.padding}, xa, ya);
    return run_one_input(context, pool, xa, ya, x, dy);
}

LayerOutputs CpuLayerBackend::global_average_pool(const Tensor& x, const Tensor& dy) {
    Context context{kThreads};
    Activation xa = activation(context, shape_of(x), x.n);
    Activation ya = activation(context, shape_of(dy), dy.n);
    Pooling pool(context, dnnl::algorithm::pooling_avg_exclude_padding, Window{x.h, 1, 0}, xa, ya);
    return run_one_input(context, pool, xa, ya, x, dy);
}

AddOutputs CpuLayerBackend::residual_add(const reference::AddInputs& in) {
    Context context{kThreads};
    const Tensor& a = in.a;
    Activation branch = activation(context, shape_of(a), a.n), shortcut = activation(context, shape_of(a), a.n);
    Activation y = activation(context, shape_of(a), a.n);
    Add add(context, branch, shortcut, y);
    y.diff = dnnl::memory(y.value.get_desc(), context.engine());
    shortcut.diff = dnnl::memory(shortcut.value.get_desc(), context.engine());  // written by a later reader
    add.bind_backward(context);
    context.finalize();
    write_plain(context, branch.value, a.floats().data());
    write_plain(context, shortcut.value, in.b.floats().data());
    write_plain(context, shortcut.diff, in.earlier.floats().data());
    write_plain(context, y.diff, in.dy.floats().data());
    add.forward(context);
    add.backward_inputs(context);
    return {read_plain(context, y.value), read_plain(context, branch.diff), read_plain(context, shortcut.diff)};
}

FullyConnectedOutputs CpuLayerBackend::fully_connected(const reference::FullyConnectedInputs& in) {
    Context context{kThreads};
    std::vector<float> params = in.params;
    std::vector<float> gradient(params.size(), -1.0f);
    Activation xa = activation(context, shape_of(in.x), in.batch);
    const dnnl::memory::desc logits_desc({in.batch, in.classes}, dnnl::memory::data_type::f32,
                                         dnnl::memory::format_tag::nc);
    dnnl::memory logits(logits_desc, context.engine()), logits_grad(logits_desc, context.engine());
    FullyConnected fc(context, xa, logits, logits_grad, ParameterView{params.data(), gradient.data()}, type_);
    fc.bind_backward(context);
    context.finalize();
    fc.refresh_parameters(context);
    write_plain(context, xa.value, in.x.floats().data());
    write_plain(context, logits_grad, in.dlogits.data());
    fc.forward(context);
    fc.backward_parameters(context);
    fc.backward_inputs(context);
    return {read_plain(context, logits), read_plain(context, xa.diff), gradient};
}

SoftmaxOutputs CpuLayerBackend::softmax_cross_entropy(const std::vector<float>& logits,
                                                      const std::vector<std::int32_t>& labels, int classes) {
    const int batch = static_cast<int>(labels.size());
    SoftmaxOutputs out;
    out.gradient.resize(logits.size());
    try {
        out.mean_loss = cpu::softmax_cross_entropy(logits.data(), labels.data(), batch, classes, out.gradient.data());
    } catch (const InputError&) {  // a label outside [0, classes); anything else fails the test
        out.refused = true;
    }
    return out;
}

std::unique_ptr<LayerBackend> make_cpu_layer_backend(LayerType type, LayerLayout layout) {
    return std::make_unique<CpuLayerBackend>(type == LayerType::bf16 ? DataType::bf16 : DataType::fp32,
                                             layout == LayerLayout::blocked ? Layout::blocked : Layout::nhwc);
}

}  // namespace epochcast::testing
