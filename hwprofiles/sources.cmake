# The loader sources, in lists that the main build (hwprofiles/CMakeLists.txt) and the clang fuzz
# build (tests/fuzz/CMakeLists.txt) both include, so neither can miss a new file.
# io/: generic input and output (strict JSON, bounded reading, output files, ConfigError), which
# every loader shares; the profile loader proper is the rest.
set(TRAINSIM_STRICT_SOURCES io/config_error.cpp io/strict_json.cpp io/strict_json_parse.cpp io/input_file.cpp io/output_files.cpp)
set(TRAINSIM_PROFILE_SOURCES profile_loader.cpp profile_writer.cpp profile_ranges.cpp calibration_extras.cpp torch_offload_calibration.cpp
  reference_kernel_table.cpp)
