"""trainsim_capture: record one training step's dispatched ATen ops without a GPU (fake tensors),
for trainsim's C++ costing and memory replay. See workloads/capture/README.md and SCHEMA.md."""
__version__ = "0.1.0"
SCHEMA_VERSION = 1
