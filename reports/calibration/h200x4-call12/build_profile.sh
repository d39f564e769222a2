#!/bin/bash
# Builds the profile that validation call 12's rows are costed on
# (reports/validation/measured/call12-h200x4/h200x4-call12.profile.json), from the repository root:
#   bash reports/calibration/h200x4-call12/build_profile.sh /tmp/h200x4-call12.profile.json
# The recipe is reports/calibration/pipeline_profile.sh's.
set -eu
bash reports/calibration/pipeline_profile.sh 12 2026-11-27 \
  "--pipe-layers 4 12 --pipe-micro-batches 4 8 at 2 ranks" \
  reports/calibration/h200x4-call12/hd "$1"
