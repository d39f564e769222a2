# Writes `machine_storage` (reports/validation/README.md, "The measured-run JSON") into a reference
# row's measured-run JSON: the storage figures of the machine the row ran on, measured in the same
# device call. Run from the repository root:
#   python3 reports/validation/reference/scripts/machine_storage.py
# Idempotent: the key is (re)written in place, just before "measured"; the rest of the file is kept
# byte for byte (logs/.../runs.sha256 records the file as it came back, before this key).
#
# Reads alone and writes alone (read_GBps, write_GBps) come from runs of
# `trainsim-calibrate --quick --only storage` in the row's own device call, given as the tool's
# printed output (its "headline figures" are summary.json's storage_read_GBps / storage_write_GBps
# to 4 digits): the mean over the runs of that call whose files are the size of the larger row's
# per-rank state file (16 GiB; one before the rows and one after, as in ref-storage3/4: the rows ran
# between them and the disk drifts; a run that did not happen or did not finish is left out and the
# source says which ran).
#
# Reads and writes at once (mixed_read_GBps, mixed_write_GBps), the figure that costs nearly all of
# a storage row's optimizer phase (the replay keeps a read and a write in flight from its second
# chunk to its last), come from the row's own storage probes (branch ref-probe, calls before it
# took the storage bench's 2-stream storage_mixed record): `--storage-probe-chunks N` makes every
# rank, right before each timed step and all at once after a barrier, stream the first N chunks of
# its own state file through the step's read/write pattern (StorageStates::probe_stream). The bench
# ran minutes away from the row, and this disk moved by more than the 10% target within one call
# (logs/ref-storage4-h200x2/storage_rows.txt: the bench before the row gave +15.1%, after it
# +7.0%); the probes measure the same files on the same disk seconds before each measured step.
#
# THE RULE (set on branch ref-probe before its device call, before any probe was seen):
#   per timed step i:  mixed_read_i  = (sum over ranks of the probe's bytes_read)    / (max over ranks of its seconds)
#                      mixed_write_i = (sum over ranks of the probe's bytes_written) / (max over ranks of its seconds)
#   the row's figure:  the median over the timed steps of mixed_read_i, and of mixed_write_i.
# Why the sum over ranks: both ranks' state files are on the machine's one disk (profile count 1),
# and the replay's mixed figure caps what all reads and writes in flight on the node move together
# (sim/README.md, "Storage"), as the bench's 2-stream record summed its streams. Why the slowest
# rank's seconds: the ranks start their probes at one barrier and the disk has moved all those
# bytes only when the last rank is done; the step is lock-step in the same way (its time is the
# slowest rank's, its optimizer phase ends when the slower rank's last chunk is written), and a
# rank that finishes early leaves the disk to the other, which a sum of per-rank rates would
# count as if both still shared it. Why the median over the timed steps: measured.step_time_s is
# the median over the same steps of the slowest rank's time, each probe taken right before its step.
import json, os, re, statistics, sys
R = 'reports/validation/reference/'
WHERE_BENCH = ('read_GBps, write_GBps: the storage bench with 16 GiB files (the test file and each storage_mixed '
               'file) in the same device call ({which}; {call}{files})')
WHERE_PROBE = ('; mixed_read_GBps, mixed_write_GBps: the row\'s own storage probes (stack.details.storage_probes: '
               'the first {chunks} chunks of 48 MiB of each rank\'s state file through the step\'s read/write pattern, '
               'all ranks at once, right before each timed step): per step the bytes of all ranks over the slowest '
               'rank\'s seconds, median over the {steps} timed steps ({per_step} GB/s each way); the benches\' '
               'storage_mixed records feed nothing')
# row -> (its JSON, the folder of its machine's output, that machine's name). The two first storage rows
# ran on one machine with the probe; the near-limit one (micro-batch 20) on another,
# with the same benches (16 GiB, before and after the rows) and the same probe: one method for all.
PROBE_MACHINE = ('logs/storage-probe-rows-h200x2/', "the probe rows' machine")
LIMIT_MACHINE = ('logs/storage-near-limit-row-h200x2/', "the near-limit row's machine")
ROWS = {
    'h200x2_ref-infinity-storage_L32-h2560_mb1x2': (R + 'h200x2/h200x2_ref-infinity-storage_L32-h2560_mb1x2.json',) + PROBE_MACHINE,
    'h200x2_ref-infinity-storage_L24-h1024_mb4x2': (R + 'h200x2/h200x2_ref-infinity-storage_L24-h1024_mb4x2.json',) + PROBE_MACHINE,
    'h200x2_ref-infinity-storage_L24-h1024_mb20x2': (R + 'h200x2/h200x2_ref-infinity-storage_L24-h1024_mb20x2.json',) + LIMIT_MACHINE,
}


def benches_of(call):
    """The call's two 16 GiB bench outputs: before the rows, after them."""
    return [R + call + 'storage_16g_1.txt', R + call + 'storage_16g_2.txt']


def sig4(x):
    return float(f'{x:.4g}')


def bench(path):
    """(read, write, mixed read or None, mixed write or None) of one storage bench run's printed output."""
    text = open(path).read()
    head = lambda k: float(re.search(r'^  ' + k + r'\s+([0-9.]+) GB/s', text, re.M).group(1))
    def mixed(what):
        m = re.search(r'^  storage_mixed ' + what + r'\s+\{"streams":2,.*?\s([0-9.]+) GBps', text, re.M)
        return float(m.group(1)) if m else None
    return head('storage_read_GBps'), head('storage_write_GBps'), mixed('read'), mixed('write')


def benches_that_ran(BENCHES):
    """The bench runs of BENCHES whose output has both headline figures (one that timed out has not)."""
    ran = []
    for path in BENCHES:
        if not os.path.exists(path):
            continue
        try:
            bench(path)
        except AttributeError:  # no headline figure: the run did not finish
            continue
        ran.append(path)
    if not ran:
        raise SystemExit('machine_storage.py: no storage bench of the call finished: ' + ', '.join(BENCHES))
    return ran


def probe_mixed(d):
    """THE RULE above: (mixed read, mixed write, per-step reads, per-step writes) in GB/s."""
    per_rank = d['stack']['details']['storage_probes']['per_rank']
    steps = len(d['measured']['step_times_s'])
    if any(len(r) != steps for r in per_rank):
        raise SystemExit(f"{d['name']}: a rank has not one probe per timed step")
    reads, writes = [], []
    for i in range(steps):
        slowest = max(r[i]['seconds'] for r in per_rank)
        reads.append(sum(r[i]['bytes_read'] for r in per_rank) / slowest / 1e9)
        writes.append(sum(r[i]['bytes_written'] for r in per_rank) / slowest / 1e9)
    return statistics.median(reads), statistics.median(writes), reads, writes


def figures(path, call, label):
    """The row's machine_storage entry."""
    d = json.load(open(path))
    BENCHES = benches_of(call)
    runs = benches_that_ran(BENCHES)
    b = [bench(r) for r in runs]
    which = 'before the rows and after them on the same machine, mean of the two' if len(runs) == 2 else \
        'the one before the rows; the one after did not finish' if runs[0] == BENCHES[0] else \
        'the one after the rows; the one before did not finish'
    entry = {'read_GBps': sig4(sum(x[0] for x in b) / len(b)), 'write_GBps': sig4(sum(x[1] for x in b) / len(b))}
    mr, mw, reads, _ = probe_mixed(d)
    entry['mixed_read_GBps'] = sig4(mr)
    entry['mixed_write_GBps'] = sig4(mw)
    entry['source'] = (label + ': ' + WHERE_BENCH.format(which=which, call=call, files=', '.join(os.path.basename(r) for r in runs)) +
                       WHERE_PROBE.format(chunks=d['stack']['details']['storage_probes']['chunks'], steps=len(reads),
                                          per_step=', '.join(f'{x:.3f}' for x in reads)))
    return entry


def main():
    for name, (path, call, label) in ROWS.items():
        entry = figures(path, call, label)
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
