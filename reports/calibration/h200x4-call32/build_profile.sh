#!/bin/bash
# Builds the profile that validation call 32's rows are costed on
# (reports/validation/measured/call32-h200x4/h200x4-call32.profile.json), from the repository root:
#   bash reports/calibration/h200x4-call32/build_profile.sh /tmp/h200x4-call32.profile.json
# The recipe is reports/calibration/pipeline_profile.sh's, as call 13's is, with this host's figures.
set -eu
bash reports/calibration/pipeline_profile.sh 32 2026-11-28 \
  "--pipe-layers 2 6 --pipe-micro-batches 8 16 at 4 ranks (4 stages, the rows' shape)" \
  reports/calibration/h200x4-call32/hd4 "$1"
