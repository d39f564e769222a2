# Per-stream busy times: the replay (trainsim simulate, rank 0, trace summed by stream) beside each
# reference row's streams_per_rank[0]. Run from the repository root: python3 reports/validation/reference/scripts/stream_busy.py
# (TS=path/to/trainsim; default build-ref-nocuda/trainsim). Columns: replayed/measured, ms.
import json,glob,subprocess,sys,os,collections
hw=sys.argv[1] if len(sys.argv)>1 else "hwprofiles/h200x4-measured.json"
binary=os.environ.get('TS','build/trainsim')
for f in sorted(glob.glob('reports/validation/reference/h200x*/*_ref-*[0-9].json')):
    d=json.load(open(f)); name=d['name']
    s=d['stack']['details']['streams_per_rank'][0]
    st='/tmp/stream_busy_'+name+'.strategy.json'
    json.dump(d['strategy'],open(st,'w'))
    model=os.path.join(os.path.dirname(f),d['model'])
    subprocess.run([binary,'simulate','--model',model,'--hw',hw,'--gpus',str(d['strategy']['gpus']),'--strategy',st,'--stack','trainsim-reference','--format','json','-o','/tmp/stream_busy_o.json','--trace','/tmp/stream_busy_t.json'],check=True,stdout=subprocess.DEVNULL)
    o=json.load(open('/tmp/stream_busy_o.json'))
    b=o['per_gpu'][0]['busy_s']
    t=json.load(open('/tmp/stream_busy_t.json')); ev=t['traceEvents'] if isinstance(t,dict) else t
    by=collections.defaultdict(float)
    for e in ev:
        if e.get('ph')=='X' and e['pid']==0: by[(e['cat'],e['tid'])]+=e['dur']*1e-6
    comm=sum(v for (c,tid),v in by.items() if c=='communication')
    m=d['measured']['step_time_s']
    mc=s['compute_busy_s']-s['optimizer_s']
    print(f"{name:44s} step {o['step_time_s']*1e3:7.1f}/{m*1e3:7.1f} {100*(o['step_time_s']/m-1):+5.1f}% | comp {b['compute']*1e3:7.1f}/{mc*1e3:7.1f} {100*(b['compute']/mc-1):+5.1f}% | opt {b['optimizer']*1e3:5.1f}/{s['optimizer_s']*1e3:5.1f} | coll {comm*1e3:6.1f}/{s['collective_busy_s']*1e3:6.1f} | expc {b['exposed_communication']*1e3:6.1f}/{s['exposed_collective_s']*1e3:6.1f} io {b['exposed_offload_io']*1e3:6.1f}")
