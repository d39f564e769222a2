#!/bin/bash
# Builds the profile that validation call 13's rows are costed on
# (reports/validation/measured/call13-h200x4/h200x4-call13.profile.json), from the repository root:
#   bash reports/calibration/h200x4-call13/build_profile.sh /tmp/h200x4-call13.profile.json
# The recipe is reports/calibration/pipeline_profile.sh's.
set -eu
bash reports/calibration/pipeline_profile.sh 13 2026-11-27 \
  "--pipe-layers 2 6 --pipe-micro-batches 8 16 at 4 ranks (4 stages, the rows' shape)" \
  reports/calibration/h200x4-call13/hd4 "$1"
