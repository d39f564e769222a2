#pragma once
// What one StorageStates::probe_stream moved and how long it took: a calibration of the disk the
// optimizer states stream through, taken beside each timed step (--storage-probe-chunks). Its own
// header so the CUDA-free result (reference_result.hpp) carries it without the I/O headers.

namespace trainsim::calibrate::ref {

struct StorageProbe {
  double bytes_read = 0, bytes_written = 0;
  double seconds = 0;  // wall time from its first request to its last completion
};

}  // namespace trainsim::calibrate::ref
