# The loader sources, in lists that the main build (hwprofiles/CMakeLists.txt) and the clang fuzz
# build (tests/fuzz/CMakeLists.txt) both include, so neither can miss a new file.
set(TRAINSIM_STRICT_SOURCES config_error.cpp strict_json.cpp strict_json_parse.cpp input_file.cpp output_files.cpp)
set(TRAINSIM_PROFILE_SOURCES profile_loader.cpp profile_writer.cpp profile_ranges.cpp calibration_extras.cpp torch_offload_calibration.cpp
  reference_kernel_table.cpp)
