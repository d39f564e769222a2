#!/bin/bash
# The device tool copies the tracked working tree, at most 64 MiB; the committed profiler traces
# (*.trace.json.gz, about 52 MB) took it past that on 2026-11-27. No device command reads them, so
# before a device call they can leave the copy and come back right after:
#   bash reports/validation/scripts/device_tree.sh slim      # before the call: untrack and ignore them
#   bash reports/validation/scripts/device_tree.sh restore   # right after: track them again
# `slim` stages their removal in the index (the files stay on disk): restore before any commit, or
# `git add -A` would commit their deletion. `status` says which state the tree is in.
set -eu
cd "$(git rev-parse --show-toplevel)"
LIST=.git/info/trainsim-slim-traces
EXCLUDE=.git/info/exclude
case ${1:-status} in
  slim)
    [ -f "$LIST" ] && { echo "already slim (restore first)"; exit 1; }
    git ls-files '*.trace.json.gz' >"$LIST"
    grep -qx '\*.trace.json.gz' "$EXCLUDE" 2>/dev/null || echo '*.trace.json.gz' >>"$EXCLUDE"
    xargs -a "$LIST" git rm --cached -q
    echo "slim: $(wc -l <"$LIST") traces out of the copy; tracked now $(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1) bytes"
    echo "run 'bash reports/validation/scripts/device_tree.sh restore' right after the device call" ;;
  restore)
    [ -f "$LIST" ] || { echo "not slim"; exit 0; }
    xargs -a "$LIST" git reset -q --
    sed -i '/^\*\.trace\.json\.gz$/d' "$EXCLUDE"
    rm -f "$LIST"
    echo "restored: $(git ls-files '*.trace.json.gz' | wc -l) traces tracked" ;;
  status)
    if [ -f "$LIST" ]; then echo "slim (restore before committing)"; else echo "normal"; fi ;;
  *) echo "usage: $0 slim|restore|status" >&2; exit 2 ;;
esac
