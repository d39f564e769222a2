"""What the probes' analysis scripts read from a pipeline run's host call timing (run_step.py's
stack.details.host_call_timing): each rank's backward and forward calls a micro-batch."""
import statistics


def per_rank_call_seconds(run):
    """[(backward, forward)] per rank: the host's wall time in the stage's backward_one_chunk and
    forward_one_chunk calls a micro-batch, the median over the timed steps, in seconds."""
    m = run["strategy"]["global_batch"] // run["strategy"]["micro_batch"]
    out = []
    for r in run["stack"]["details"]["host_call_timing"]["per_rank"]:
        bwd = statistics.median(s["backward_one_chunk"][0] for s in r["per_step"]) / m
        fwd = statistics.median(s["forward_one_chunk"][0] for s in r["per_step"]) / m
        out.append((bwd, fwd))
    return out
