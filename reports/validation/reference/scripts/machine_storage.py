# Writes `machine_storage` (reports/validation/README.md, "The measured-run JSON") into a reference
# row's measured-run JSON: the storage figures trainsim-calibrate's storage bench measured on the
# machine the row ran on, in the same device call. Run from the repository root:
#   python3 reports/validation/reference/scripts/machine_storage.py
# Idempotent: the key is (re)written in place, just before "measured"; the rest of the file is kept
# byte for byte (logs/.../runs.sha256 records the file as it came back, before this key).
#
# A row's figures come from one or more runs of `trainsim-calibrate --quick --only storage` in its
# own device call, each given as its summary.json or, where only the tool's printed output came
# back, that text (its "headline figures" are summary.json's storage_read_GBps / storage_write_GBps
# to 4 digits, and its storage_mixed lines the records of raw_results.json). With several runs (one
# before the rows, one after: logs/ref-storage3-h200x2/) each figure is the mean over them: the
# row ran between them, and the disk drifted. The mixed read+write figure, where measured, is the
# 2-stream record (storage_mixed: one 48 MiB chunk read and one written in flight per stream;
# two streams are the row's two ranks, each running StorageStates::adam_step on its own file).
# Where a call ran the bench at more than one file size (logs/ref-storage4-h200x2/: 16 GiB and the
# default 1 GiB), the runs whose files are the size of the row's per-rank state file feed it: each
# rank streams its own state file (12 bytes a parameter) front to back once a step, and a file of
# that size is what that working set looks like to the device. The rule was set before any replay.
import json, re, sys
R = 'reports/validation/reference/'
S3 = R + 'logs/ref-storage3-h200x2/call1/'
S4 = R + 'logs/ref-storage4-h200x2/call1/'
# row -> (its JSON, the storage bench runs of the same device call, how that call is named)
ROWS = {
    'h200x2_ref-infinity-storage_L32-h2560_mb1x2': (
        R + 'h200x2/h200x2_ref-infinity-storage_L32-h2560_mb1x2.json',
        [S4 + 'storage_16g_1.txt', S4 + 'storage_16g_2.txt'],
        'ref-storage4 call 1, the storage bench with row-sized files (16 GiB: the test file and each storage_mixed '
        'file) before the row and after it on the same machine, mean of the two (logs/ref-storage4-h200x2/call1/'
        'storage_16g_1.txt, storage_16g_2.txt); mixed: their 2-stream storage_mixed records; the same call\'s 1 GiB '
        'benches (storage_1g_*.txt) feed nothing'),
    'h200x2_ref-infinity-storage_L24-h1024_mb4x2': (
        R + 'h200x2/h200x2_ref-infinity-storage_L24-h1024_mb4x2.json',
        [S3 + 'storage1.txt', S3 + 'storage2.txt'],
        'ref-storage3 call 1, the storage bench before the rows and after them on the same machine, mean of the two '
        '(logs/ref-storage3-h200x2/call1/storage1.txt, storage2.txt); mixed: their 2-stream storage_mixed records'),
}
def sig4(x):
    return float(f'{x:.4g}')
def bench(path):
    """(read, write, mixed read or None, mixed write or None) of one storage bench run."""
    if path.endswith('.json'):
        s = json.load(open(path))
        return s['storage_read_GBps'], s['storage_write_GBps'], None, None
    text = open(path).read()
    head = lambda k: float(re.search(r'^  ' + k + r'\s+([0-9.]+) GB/s', text, re.M).group(1))
    mixed = lambda what: float(re.search(r'^  storage_mixed ' + what + r'\s+\{"streams":2,.*?\s([0-9.]+) GBps', text, re.M).group(1))
    return head('storage_read_GBps'), head('storage_write_GBps'), mixed('read'), mixed('write')
def main():
    for name, (path, runs, where) in ROWS.items():
        b = [bench(r) for r in runs]
        mean = lambda i: sum(x[i] for x in b) / len(b)
        entry = {'read_GBps': sig4(mean(0)), 'write_GBps': sig4(mean(1))}
        if all(x[2] is not None for x in b):
            entry['mixed_read_GBps'] = sig4(mean(2))
            entry['mixed_write_GBps'] = sig4(mean(3))
        entry['source'] = where
        text = open(path).read()
        lines = text.split('\n')
        lines = [l for l in lines if not l.startswith(' "machine_storage": ')]
        at = lines.index(' "measured": {')
        lines.insert(at, ' "machine_storage": ' + json.dumps(entry) + ',')
        out = '\n'.join(lines)
        json.loads(out)  # still JSON
        open(path, 'w').write(out)
        print(name, entry)
if __name__ == '__main__':
    sys.exit(main())
