#include "model/types.hpp"

#include <array>
#include <string>
#include <utility>

#include "model/errors.hpp"
#include "model/text_io.hpp"

namespace epochcast {
namespace {

template <typename Enum, std::size_t N>
Enum parse_enum(const std::array<std::pair<std::string_view, Enum>, N>& names, std::string_view text,
                std::string_view what) {
    for (const auto& [name, value] : names) {
        if (name == text) return value;
    }
    std::string accepted;
    for (const auto& [name, value] : names) {
        if (!accepted.empty()) accepted += ", ";
        accepted += name;
    }
    throw InputError(std::string(what) + ": unknown value '" + escape_for_message(text) + "' (expected one of " +
                     accepted + ")");
}

constexpr std::array<std::pair<std::string_view, Precision>, 5> kPrecisions{{{"fp32", Precision::fp32},
                                                                             {"tf32", Precision::tf32},
                                                                             {"amp", Precision::amp},
                                                                             {"bf16", Precision::bf16},
                                                                             {"fp16", Precision::amp}}};
constexpr std::array<std::pair<std::string_view, MemoryFormat>, 2> kMemoryFormats{
    {{"channels_last", MemoryFormat::channels_last}, {"nchw", MemoryFormat::nchw}}};
constexpr std::array<std::pair<std::string_view, Loader>, kLoaderCount> kLoaders{
    {{"default", Loader::framework_default},
     {"synthetic", Loader::synthetic},
     {"cpu", Loader::cpu},
     {"dali-cpu", Loader::dali_cpu},
     {"dali", Loader::dali}}};
constexpr std::array<std::pair<std::string_view, Store>, kStoreCount> kStores{{{"none", Store::none},
                                                                               {"local-nvme", Store::local_nvme},
                                                                               {"fsx-lustre", Store::fsx_lustre},
                                                                               {"s3", Store::s3},
                                                                               {"efs", Store::efs}}};
constexpr std::array<std::pair<std::string_view, Strategy>, 5> kStrategies{{{"nccl", Strategy::nccl},
                                                                            {"ring", Strategy::ring},
                                                                            {"hierarchical", Strategy::hierarchical},
                                                                            {"tree", Strategy::tree},
                                                                            {"ps", Strategy::ps}}};
constexpr std::array<std::pair<std::string_view, Framework>, kFrameworkCount> kFrameworks{
    {{"mxnet", Framework::mxnet},
     {"tensorflow", Framework::tensorflow},
     {"pytorch", Framework::pytorch},
     {"epochcast", Framework::epochcast}}};
constexpr std::array<std::pair<std::string_view, Pricing>, kPricingCount> kPricings{
    {{"on-demand", Pricing::on_demand},
     {"spot", Pricing::spot},
     {"capacity-block", Pricing::capacity_block},
     {"reserved-1y", Pricing::reserved_1y},
     {"reserved-3y", Pricing::reserved_3y}}};
constexpr std::array<std::pair<std::string_view, SoftwareStack>, kSoftwareStackCount> kSoftwareStacks{
    {{"current", SoftwareStack::current}, {"legacy", SoftwareStack::legacy}}};
constexpr std::array<std::pair<std::string_view, DeviceKind>, 2> kDeviceKinds{
    {{"gpu", DeviceKind::gpu}, {"cpu", DeviceKind::cpu}}};
constexpr std::array<std::pair<std::string_view, Algorithm>, 6> kAlgorithms{{{"none", Algorithm::none},
                                                                             {"ring", Algorithm::ring},
                                                                             {"tree", Algorithm::tree},
                                                                             {"nvls", Algorithm::nvls},
                                                                             {"hierarchical", Algorithm::hierarchical},
                                                                             {"push-pull", Algorithm::push_pull}}};
constexpr std::array<std::pair<std::string_view, Interconnect>, kInterconnectCount> kInterconnects{
    {{"tcp", Interconnect::tcp},
     {"efa", Interconnect::efa},
     {"infiniband", Interconnect::infiniband},
     {"roce", Interconnect::roce},
     {"tcpx", Interconnect::tcpx}}};
constexpr std::array<std::pair<std::string_view, IntraLink>, kIntraLinkCount> kIntraLinks{
    {{"pcie", IntraLink::pcie}, {"nvlink", IntraLink::nvlink}, {"nvswitch", IntraLink::nvswitch}}};
constexpr std::array<std::pair<std::string_view, ComparisonQuantity>, 2> kComparisonQuantities{
    {{"speedup", ComparisonQuantity::speedup}, {"epoch_time_ratio", ComparisonQuantity::epoch_time_ratio}}};

template <typename Enum, std::size_t N>
std::string_view name_of(const std::array<std::pair<std::string_view, Enum>, N>& names, Enum value) {
    for (const auto& [name, v] : names) {
        if (v == value) return name;
    }
    return "?";
}

}  // namespace

std::string_view to_string(Precision precision) { return name_of(kPrecisions, precision); }
std::string_view to_string(MemoryFormat format) { return name_of(kMemoryFormats, format); }
std::string_view to_string(Loader loader) { return name_of(kLoaders, loader); }
std::string_view to_string(Store store) { return name_of(kStores, store); }
std::string_view to_string(Strategy strategy) { return name_of(kStrategies, strategy); }
std::string_view to_string(Framework framework) { return name_of(kFrameworks, framework); }
std::string_view to_string(Pricing pricing) { return name_of(kPricings, pricing); }
std::string_view to_string(SoftwareStack stack) { return name_of(kSoftwareStacks, stack); }
std::string_view to_string(DeviceKind kind) { return name_of(kDeviceKinds, kind); }
std::string_view to_string(Algorithm algorithm) { return name_of(kAlgorithms, algorithm); }
std::string_view to_string(Interconnect interconnect) { return name_of(kInterconnects, interconnect); }
std::string_view to_string(IntraLink link) { return name_of(kIntraLinks, link); }
std::string_view to_string(ComparisonQuantity quantity) { return name_of(kComparisonQuantities, quantity); }

Precision parse_precision(std::string_view text, std::string_view what) { return parse_enum(kPrecisions, text, what); }
MemoryFormat parse_memory_format(std::string_view text, std::string_view what) {
    return parse_enum(kMemoryFormats, text, what);
}
Loader parse_loader(std::string_view text, std::string_view what) { return parse_enum(kLoaders, text, what); }
Store parse_store(std::string_view text, std::string_view what) { return parse_enum(kStores, text, what); }
Strategy parse_strategy(std::string_view text, std::string_view what) { return parse_enum(kStrategies, text, what); }
Framework parse_framework(std::string_view text, std::string_view what) { return parse_enum(kFrameworks, text, what); }
Pricing parse_pricing(std::string_view text, std::string_view what) { return parse_enum(kPricings, text, what); }
SoftwareStack parse_software_stack(std::string_view text, std::string_view what) {
    return parse_enum(kSoftwareStacks, text, what);
}
DeviceKind parse_device_kind(std::string_view text, std::string_view what) {
    return parse_enum(kDeviceKinds, text, what);
}
Interconnect parse_interconnect(std::string_view text, std::string_view what) {
    return parse_enum(kInterconnects, text, what);
}
ComparisonQuantity parse_comparison_quantity(std::string_view text, std::string_view what) {
    return parse_enum(kComparisonQuantities, text, what);
}

PrecisionFamily family_of(Precision precision) {
    switch (precision) {
        case Precision::fp32:
            return PrecisionFamily::fp32;
        case Precision::tf32:
            return PrecisionFamily::tf32;
        case Precision::amp:
        case Precision::bf16:
            return PrecisionFamily::half;
    }
    return PrecisionFamily::fp32;
}

Loader default_loader(Framework framework, SoftwareStack stack) {
    return framework == Framework::mxnet && stack == SoftwareStack::current ? Loader::dali : Loader::cpu;
}

double gradient_element_bytes(Precision precision) { return family_of(precision) == PrecisionFamily::half ? 2.0 : 4.0; }
double activation_element_bytes(Precision precision) {
    return family_of(precision) == PrecisionFamily::half ? 2.0 : 4.0;
}

}  // namespace epochcast
