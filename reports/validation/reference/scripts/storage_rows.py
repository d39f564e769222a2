# The storage-offload rows beside the replay and the storage figures of the machine each ran on:
# where the time of the optimizer phase goes. Run from the repository root:
#   python3 reports/validation/reference/scripts/storage_rows.py
# (TS=path/to/trainsim; default build-ref-nocuda/trainsim). Output of branch ref-probe's build:
# logs/ref-probe-h200x2/storage_rows.txt. The earlier outputs (logs/ref-storage4-h200x2/,
# ref-storage3-h200x2/, ref-storage2-h200x2/storage_rows.txt) came from this script's earlier
# versions (git history), on the rows those calls ran.
#
# Per row: the measured step, the reference's optimizer phase (cpu_optimizer_s: the whole chunked
# read / CPU-Adam / write-back loop, storage_states.cpp) and its wait for the storage
# (storage_busy_s), both ranks' bytes and the rate they moved at together, beside the storage
# probes taken before each timed step; what those bytes take read and written one after the other
# at the storage figures of the machine the row ran on and at the profile's (what `trainsim
# validate` replays on); then the replay (rank 0 of `trainsim simulate` on the profile, the stack's
# own storage chunking: 4 Mi parameters, lock step, whole chunks; StackStates in
# workloads/stacks/training_stack.cpp) on the profile's storage and on the row's machine_storage (what
# `trainsim validate` uses), and, as comparisons that feed nothing, on each step's probe alone and
# on the mixed figure taken as before ref-probe (the benches' storage_mixed records).
import json, os, re, subprocess, collections, copy, importlib.util

BIN = os.environ.get('TS', 'build-ref-nocuda/trainsim')
HW = 'hwprofiles/h200x4-measured.json'
R = 'reports/validation/reference/'
spec = importlib.util.spec_from_file_location('machine_storage', R + 'scripts/machine_storage.py')
ms = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ms)


def simulate(model, strategy, hw):
    json.dump(strategy, open('/tmp/storage_rows.strategy.json', 'w'))
    args = [BIN, 'simulate', '--model', model, '--hw', hw, '--gpus', str(strategy['gpus']), '--stack', 'trainsim-reference',
            '--format', 'json', '-o', '/tmp/storage_rows.o.json', '--trace', '/tmp/storage_rows.t.json',
            '--strategy', '/tmp/storage_rows.strategy.json']
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    o = json.load(open('/tmp/storage_rows.o.json'))
    t = json.load(open('/tmp/storage_rows.t.json'))
    ev = t['traceEvents'] if isinstance(t, dict) else t
    io = collections.defaultdict(list)
    for e in ev:
        if e.get('ph') == 'X' and e['name'].startswith('nvme_'):
            io[e['name'].split(' ')[0]].append((e['ts'] * 1e-6, (e['ts'] + e['dur']) * 1e-6))
    spans = sorted(io['nvme_read_optimizer'] + io['nvme_write_optimizer'])
    union, end = 0.0, -1.0
    for a, b in spans:
        if b > end:
            union += b - max(a, end)
            end = b
    busy = {k: sum(b - a for a, b in v) for k, v in io.items()}
    return o['step_time_s'], busy.get('nvme_read_optimizer', 0.0), busy.get('nvme_write_optimizer', 0.0), union


def with_storage(fig, path):
    """The profile with a machine's storage figures (read, write, mixed read or None, mixed write)."""
    p = copy.deepcopy(profile)
    p['storage']['read_GBps'], p['storage']['write_GBps'] = fig[0], fig[1]
    p['storage'].pop('mixed_read_GBps', None)
    p['storage'].pop('mixed_write_GBps', None)
    if fig[2] is not None:
        p['storage']['mixed_read_GBps'], p['storage']['mixed_write_GBps'] = fig[2], fig[3]
    json.dump(p, open(path, 'w'))
    return path


def fmt(fig):
    return f"read {fig[0]:.3f}, write {fig[1]:.3f}" + (f", mixed {fig[2]:.3f} + {fig[3]:.3f}" if fig[2] is not None else ", no mixed figure")


def replays(model, strategy, step, cases):
    for label, hw in cases:
        t, r, w, u = simulate(model, strategy, hw)
        print(f"  {label:58s} step {t:7.3f} s ({100 * (t / step - 1):+6.1f}%); storage read {r:6.3f} s, write {w:6.3f} s, "
              f"busy {u:6.3f} s (read and write overlapped {r + w - u:6.3f} s)")


profile = json.load(open(HW))
prof = (profile['storage']['read_GBps'], profile['storage']['write_GBps'], profile['storage'].get('mixed_read_GBps'),
        profile['storage'].get('mixed_write_GBps'))
for name, path in ms.ROWS.items():
    d = json.load(open(path))
    model = R + 'h200x2/' + d['model']
    streams = d['stack']['details']['streams_per_rank']
    step = d['measured']['step_time_s']
    rd = sum(s['bytes_storage_read'] for s in streams) * 1e-9
    wr = sum(s['bytes_storage_written'] for s in streams) * 1e-9
    m = d['machine_storage']
    own = (m['read_GBps'], m['write_GBps'], m.get('mixed_read_GBps'), m.get('mixed_write_GBps'))
    print(f"{name}: machine_storage {fmt(own)} GB/s ({m['source']}); the profile's ({HW}) {fmt(prof)}")
    print(f"  measured: step {step:.3f} s (steps {', '.join('%.3f' % x for x in d['measured']['step_times_s'])}); "
          f"optimizer phase {' / '.join('%.3f' % x['cpu_optimizer_s'] for x in streams)} s, "
          f"storage wait {' / '.join('%.3f' % x['storage_busy_s'] for x in streams)} s (ranks 0 / 1); "
          f"both ranks read {rd:.2f} GB, write {wr:.2f} GB per step")
    opt = max(x['cpu_optimizer_s'] for x in streams)
    _, _, reads, writes = ms.probe_mixed(d)
    print(f"  read + write together over the slowest rank's optimizer phase: {(rd + wr) / opt:.3f} GB/s; the probes before "
          f"each timed step: {', '.join('%.3f' % (2 * x) for x in reads)} GB/s together")
    seq_own, seq_prof = rd / own[0] + wr / own[1], rd / prof[0] + wr / prof[1]
    line = (f"  read then written, one after the other: {seq_own:.3f} s at its machine's figures "
            f"(slowest rank's optimizer phase {opt / seq_own:.3f} x that), {seq_prof:.3f} s at the profile's")
    if own[2] is not None:
        line += f"; at its machine's mixed figure {(rd + wr) / (own[2] + own[3]):.3f} s"
    print(line)
    cases = [('replay on the profile', HW), ("replay, its machine_storage (what validate does)", with_storage(own, '/tmp/storage_rows.own.json'))]
    # Comparisons, none of which feeds the row: each step's probe alone, and the mixed figure as
    # the calls before ref-probe took it (the benches' 2-stream storage_mixed records), their mean
    # and each bench alone.
    for i, (r, w) in enumerate(zip(reads, writes)):
        cases.append((f"replay, the probe before timed step {i + 1} alone", with_storage((own[0], own[1], r, w), f'/tmp/storage_rows.p{i}.json')))
    runs = ms.benches_that_ran()
    b = [ms.bench(r) for r in runs]
    old = tuple(ms.sig4(sum(x[i] for x in b) / len(b)) for i in range(4))
    cases.append(("replay, the benches' mixed records (the rule before)", with_storage(old, '/tmp/storage_rows.old.json')))
    for i, r in enumerate(runs):
        cases.append((f"replay, bench {i + 1} alone ({os.path.basename(r)})", with_storage(b[i], f'/tmp/storage_rows.b{i}.json')))
    replays(model, d['strategy'], step, cases)
