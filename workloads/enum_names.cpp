#include "enum_names.hpp"

namespace trainsim::wl {

std::string_view to_string(NormKind v) { return names::name_of(v, names::NORM); }
std::string_view to_string(MlpKind v) { return names::name_of(v, names::MLP); }
std::string_view to_string(PositionKind v) { return names::name_of(v, names::POSITION); }
std::string_view to_string(HeadKind v) { return names::name_of(v, names::HEAD); }
std::string_view to_string(Numerics v) { return names::name_of(v, names::NUMERICS); }
std::string_view to_string(AttentionImpl v) { return names::name_of(v, names::ATTENTION); }
std::string_view to_string(Schedule v) { return names::name_of(v, names::SCHEDULE); }
std::string_view to_string(OffloadTarget v) { return names::name_of(v, names::OFFLOAD); }
std::string_view to_string(ActivationOffload v) { return names::name_of(v, names::ACTIVATION_OFFLOAD); }
std::string_view to_string(Recompute v) { return names::name_of(v, names::RECOMPUTE); }

}  // namespace trainsim::wl
