# The storage-offload rows beside the replay and the two storage figures of the machine each ran
# on: where the time of the optimizer phase goes. Run from the repository root:
#   python3 reports/validation/reference/scripts/storage_rows.py
# (TS=path/to/trainsim; default build-ref-nocuda/trainsim). Output of branch ref-storage-mixed's build:
# logs/ref-storage2-h200x2/storage_rows.txt.
#
# Per row: the measured step, the reference's optimizer phase (cpu_optimizer_s: the whole
# chunked read / CPU-Adam / write-back loop, storage_states.cpp) and its wait for the storage
# (storage_busy_s), both ranks' bytes; what those bytes take read and written one after the
# other at the storage figures of the machine the row ran on (its own storage calibration, same
# call or same lease) and at the profile's (what `trainsim validate` replays on); then the replay
# (rank 0 of `trainsim simulate` on the profile) and what-ifs of the replay: the row's own machine's
# storage figures (what `trainsim validate` uses where the row has machine_storage), the
# reference's own chunk of 4 Mi parameters instead of DeepSpeed's sub_group_size (1e9), which the
# replay of this stack uses today, and (branch ref-storage-mixed) the mixed read+write figure of
# h200x2-measured, measured on another VM instance, so a what-if only.
import json, os, subprocess, collections, copy

BIN = os.environ.get('TS', 'build-ref-nocuda/trainsim')
HW = 'hwprofiles/h200x4-measured.json'
R = 'reports/validation/reference/'
# The machine each row ran on: its storage figures (trainsim-calibrate --quick --only storage).
ROWS = {
    'h200x2_ref-infinity-storage_L24-h1024_mb4x2': ('call 11 (4 x H200 VM)', R + 'logs/reference3-call2/storage_calibration/summary.json'),
    'h200x2_ref-infinity-storage_L32-h2560_mb1x2': ('ref-storage2 call 1 (2 x H200 VM)', R + 'logs/ref-storage2-h200x2/call1/storage_calibration/summary.json'),
}


def simulate(model, strategy, hw, sub_group=None):
    json.dump(strategy, open('/tmp/storage_rows.strategy.json', 'w'))
    args = [BIN, 'simulate', '--model', model, '--hw', hw, '--gpus', str(strategy['gpus']), '--stack', 'trainsim-reference',
            '--format', 'json', '-o', '/tmp/storage_rows.o.json', '--trace', '/tmp/storage_rows.t.json']
    if sub_group:
        ds = {'bf16': {'enabled': True}, 'zero_optimization': {'stage': 3, 'sub_group_size': sub_group,
              'offload_optimizer': {'device': 'nvme'}, 'offload_param': {'device': 'cpu'}}}
        json.dump(ds, open('/tmp/storage_rows.ds.json', 'w'))
        args += ['--deepspeed', '/tmp/storage_rows.ds.json']
    args += ['--strategy', '/tmp/storage_rows.strategy.json']
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


profile = json.load(open(HW))
MIXED = json.load(open('hwprofiles/h200x2-measured.json'))
print(f"mixed read+write figure (what-if rows only): hwprofiles/h200x2-measured.json {MIXED['storage']['mixed_read_GBps']} + "
      f"{MIXED['storage']['mixed_write_GBps']} GB/s, measured on another VM instance than either row's "
      f"(reports/calibration/h200x2/storage_mixed/)")
pr, pw = profile['storage']['read_GBps'], profile['storage']['write_GBps']
for name, (where, cal) in ROWS.items():
    d = json.load(open(R + 'h200x2/' + name + '.json'))
    model = R + 'h200x2/' + d['model']
    streams = d['stack']['details']['streams_per_rank']
    step = d['measured']['step_time_s']
    rd = sum(s['bytes_storage_read'] for s in streams) * 1e-9
    wr = sum(s['bytes_storage_written'] for s in streams) * 1e-9
    s = json.load(open(cal))
    mr, mw = s['storage_read_GBps'], s['storage_write_GBps']
    print(f"{name}: ran on {where}; its storage {mr:.3f} GB/s read, {mw:.3f} write; the profile's ({HW}) {pr:.3f}, {pw:.3f}")
    print(f"  measured: step {step:.3f} s; optimizer phase {' / '.join('%.3f' % x['cpu_optimizer_s'] for x in streams)} s, "
          f"storage wait {' / '.join('%.3f' % x['storage_busy_s'] for x in streams)} s (ranks 0 / 1); "
          f"both ranks read {rd:.2f} GB, write {wr:.2f} GB per step")
    seq_own, seq_prof = rd / mr + wr / mw, rd / pr + wr / pw
    opt = max(x['cpu_optimizer_s'] for x in streams)
    print(f"  read then written, one after the other: {seq_own:.3f} s at its machine's figures "
          f"(slowest rank's optimizer phase {opt / seq_own:.3f} x that), {seq_prof:.3f} s at the profile's")
    own = copy.deepcopy(profile)
    own['storage']['read_GBps'], own['storage']['write_GBps'] = round(mr, 3), round(mw, 3)
    json.dump(own, open('/tmp/storage_rows.hw.json', 'w'))
    # What-if only: the mixed read+write figure of h200x2-measured, measured on another VM instance
    # (reports/calibration/h200x2/storage_mixed/), not the machine either row ran on.
    mixed = copy.deepcopy(own)
    mixed['storage']['mixed_read_GBps'] = MIXED['storage']['mixed_read_GBps']
    mixed['storage']['mixed_write_GBps'] = MIXED['storage']['mixed_write_GBps']
    json.dump(mixed, open('/tmp/storage_rows.mixed.json', 'w'))
    for label, hw, sg in (('replay on the profile', HW, None), ("replay, its machine's storage", '/tmp/storage_rows.hw.json', None),
                          ('replay, 4 Mi-parameter sub-groups', HW, 4 << 20),
                          ("replay, its machine's storage and 4 Mi sub-groups", '/tmp/storage_rows.hw.json', 4 << 20),
                          ("  + another VM's mixed figure (what-if)", '/tmp/storage_rows.mixed.json', None),
                          ("  + another VM's mixed figure and 4 Mi sub-groups", '/tmp/storage_rows.mixed.json', 4 << 20)):
        t, r, w, u = simulate(model, d['strategy'], hw, sg)
        print(f"  {label:52s} step {t:7.3f} s ({100 * (t / step - 1):+6.1f}%); storage read {r:6.3f} s, write {w:6.3f} s, "
              f"busy {u:6.3f} s (read and write overlapped {r + w - u:6.3f} s)")
