"""A stand-in for calibrate/framework/ that needs no torch and no GPU (tests/calibrate/framework_run_test.cpp)."""
