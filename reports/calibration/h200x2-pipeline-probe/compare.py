#!/usr/bin/env python3
"""Prints the table of README.md from plain/ and sync/ (run from the repository root):
    python3 reports/calibration/h200x2-pipeline-probe/compare.py
The tiny carry: the tiny model's host time at 4 layers a stage plus 8/3 of its growth from 1 to 4
(8 micro-batches), i.e. carried to 12 layers a stage as the calibration carries it."""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
plain = json.load(open(os.path.join(HERE, "plain", "torch_pipeline_actions.json")))
sync = json.load(open(os.path.join(HERE, "sync", "torch_pipeline_actions.json")))


def per_rank(doc, schedule, model, layers):
    return next(r["per_rank"] for r in doc["runs"] if r["schedule"] == schedule and r["model"] == model
                and r["layers_per_stage"] == layers and r["micro_batches"] == 8)


for schedule in ("gpipe", "1f1b"):
    t1, t4 = per_rank(plain, schedule, "tiny", 1), per_rank(plain, schedule, "tiny", 4)
    real, synced = per_rank(plain, schedule, "L24-h1024", 12), per_rank(sync, schedule, "L24-h1024", 12)
    for rank in (0, 1):
        for call in ("forward_one_chunk", "backward_one_chunk"):
            carry = t4[rank][call] + 8 * (t4[rank][call] - t1[rank][call]) / 3
            print(f"{schedule} rank {rank} {call}: tiny carry {carry / 1e3:.1f} ms, real {real[rank][call] / 1e3:.1f} "
                  f"({100 * (real[rank][call] / carry - 1):+.1f}%), real with the GPU synchronized before each call "
                  f"{synced[rank][call] / 1e3:.1f} ({100 * (synced[rank][call] / carry - 1):+.1f}%)")
