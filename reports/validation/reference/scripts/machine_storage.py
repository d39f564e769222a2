# Writes `machine_storage` (reports/validation/README.md, "The measured-run JSON") into a reference
# row's measured-run JSON: the storage figures trainsim-calibrate's storage bench measured on the
# machine the row ran on, in the same device call. Run from the repository root:
#   python3 reports/validation/reference/scripts/machine_storage.py
# Idempotent: the key is (re)written in place, just before "measured"; the rest of the file is kept
# byte for byte (logs/.../runs.sha256 records the file as it came back, before this key).
import json, sys
R = 'reports/validation/reference/'
# row -> (its JSON, the storage bench's summary.json of the same device call, how that call is named)
ROWS = {
    'h200x2_ref-infinity-storage_L32-h2560_mb1x2': (
        R + 'h200x2/h200x2_ref-infinity-storage_L32-h2560_mb1x2.json',
        R + 'logs/ref-storage2-h200x2/call1/storage_calibration/summary.json',
        'ref-storage2 call 1, the storage bench right after the row: '
        'logs/ref-storage2-h200x2/call1/storage_calibration/summary.json'),
}
def sig4(x):
    return float(f'{x:.4g}')
def main():
    for name, (path, summary_path, where) in ROWS.items():
        s = json.load(open(summary_path))
        entry = {
            'read_GBps': sig4(s['storage_read_GBps']),
            'write_GBps': sig4(s['storage_write_GBps']),
            'source': where,
        }
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
