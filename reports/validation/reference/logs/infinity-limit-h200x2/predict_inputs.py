# Writes the prediction inputs of predicted_before_call.txt (branch infinity-limit): copies of the committed rows
# h200x2_ref-infinity_L32-h2560_mb1x2 and h200x2_ref-infinity-storage_L24-h1024_mb4x2 with strategy.micro_batch and
# global_batch changed, nothing else. Run: python3 predict_inputs.py /tmp/ilim_pred (paths are /work/reference's).
import json, sys, os, shutil
R='/work/reference/reports/validation/reference/h200x2/'
out=sys.argv[1]; os.makedirs(out, exist_ok=True)
for base, stem, mbs in [('h200x2_ref-infinity_L32-h2560_mb1x2','p_h200x2_ref-infinity_L32-h2560',[8,9,10]),
                        ('h200x2_ref-infinity-storage_L24-h1024_mb4x2','p_h200x2_ref-infinity-storage_L24-h1024',[19,20,21])]:
    d=json.load(open(R+base+'.json'))
    for mb in mbs:
        e=json.loads(json.dumps(d)); n=f'{stem}_mb{mb}x2'
        e['name']=n; e['strategy']['micro_batch']=mb
        e['strategy']['global_batch']=mb*e['strategy']['dp']*e['stack']['details']['grad_accum']
        e['model']=n+'.model.json'
        shutil.copy(R+d['model'], os.path.join(out,n+'.model.json'))
        json.dump(e, open(os.path.join(out,n+'.json'),'w'), indent=1)
