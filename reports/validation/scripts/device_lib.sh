# What the validation device scripts share (sourced by device_call_samehost.sh and
# device_call_hostcal.sh, which set R, the work folder, and OUT, the device tool's folder, first):
# NCCL's settings for the lent machines and packing the results so that the tool takes them back
# (JSON and logs in small.tgz; the profiler traces apart, in 12 MB parts: one 54 MB file was refused).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
pack() {
  rm -f "$OUT"/small.tgz "$OUT"/traces.tar.part*
  (cd "$R" && tar czf "$OUT/small.tgz" --exclude='*.trace.json.gz' .)
  (cd "$R" && find . -name '*.trace.json.gz' | sort | tar cf - -T - | split -b 12000000 -d - "$OUT/traces.tar.part")
}
stamp() { echo "== $1 $(date -u +%T) ($(( $(date +%s) - t0 )) s)" | tee -a "$R/phases.txt"; }
