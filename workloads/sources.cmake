# The workloads library's sources, in one list that the main build (workloads/CMakeLists.txt) and
# the clang fuzz build (tests/fuzz/CMakeLists.txt) both include, so neither can miss a new file.
set(TRAINSIM_WORKLOADS_SOURCES
  enum_names.cpp
  limits.cpp
  model_loader.cpp
  huggingface_config.cpp
  model_params.cpp
  strategy_sources.cpp
  megatron_args.cpp
  strategy_resolve.cpp
  strategy_rules.cpp
  strategy_identity.cpp
  activation_memory.cpp
  memory_model.cpp
  layer_costs.cpp
  stage_partition.cpp
  stacks/training_stack.cpp
  stacks/stack_models.cpp
  stacks/idealized_stack.cpp
  stacks/megatron_stack.cpp
  stacks/deepspeed_stack.cpp
  stacks/deepspeed_v03_stack.cpp
  stacks/deepspeed_v03_zero3.cpp
  stacks/pytorch_stack.cpp
  stacks/pytorch_ddp_stack.cpp
  stacks/pytorch_fsdp_stack.cpp
  stacks/pytorch_pipelining_stack.cpp
  stacks/trainsim_reference_stack.cpp
  stacks/stack_capabilities.cpp
  stacks/stack_layer.cpp
  stacks/torch_kernels.cpp
  stacks/reference_stack.cpp
  capture_expr.cpp capture_document.cpp capture_scale.cpp capture_memory.cpp captured_layer_cost.cpp captured_model.cpp
  committed_captures.cpp)
