"""trainsim-calibrate's framework driver: the PyTorch parts of a calibration (calibrate/README.md,
"Framework parts"). The C++ tool starts it as `python3 -m framework COMMAND` with calibrate/ on
PYTHONPATH; see __main__.py for the commands and their protocol."""
