#!/bin/bash
# Builds the profile that validation call 33's rows are costed on
# (reports/validation/measured/call33-h200x4/h200x4-call33.profile.json), from the repository root:
#   bash reports/calibration/h200x4-call33/build_profile.sh /tmp/h200x4-call33.profile.json
# The recipe is reports/calibration/pipeline_profile.sh's, as call 12's is, with this host's figures.
set -eu
bash reports/calibration/pipeline_profile.sh 33 2026-11-28 \
  "--pipe-layers 4 12 --pipe-micro-batches 4 8 at 2 ranks (GPUs 0-1, the rows' shape)" \
  reports/calibration/h200x4-call33/hd "$1"
