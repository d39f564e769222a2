#pragma once
// The calibration sections that describe a training stack on a machine rather than the machine
// alone: interference between overlapping compute and communication, host dispatch per stack,
// flash attention per shape, and a framework's CPU optimizer (schema: hwprofiles/README.md, the
// `calibration.*` rows of its table). Read and written beside the rest of `calibration`.

#include <nlohmann/json.hpp>

#include "cluster_profile.hpp"
#include "strict_json.hpp"

namespace trainsim::hw {

// Reads the optional keys interference, host_dispatch, attention and cpu_optimizers of `o` (the
// calibration object) into `cal`.
void read_calibration_extras(StrictObject& o, Calibration& cal);
// Adds them to `cal` (the calibration object being written), when present.
void calibration_extras_to_json(const Calibration& c, nlohmann::ordered_json& cal);

}  // namespace trainsim::hw
