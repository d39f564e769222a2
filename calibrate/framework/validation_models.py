"""The validation rows' own model and stack builders (reports/validation/scripts/: model.py,
model_llama.py, run_step.py, run_step_stacks.py), which the stack and in-step parts run so that
what they time is what the measured rows ran. They live in the source tree beside calibrate/; a
driver copied without it fails those parts with this message (the other parts are kept).
"""
import os
import sys

SCRIPTS = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "reports",
                                        "validation", "scripts"))


def on_path():
    """Puts the validation scripts on sys.path; raises naming the folder when it is not there."""
    if not os.path.isfile(os.path.join(SCRIPTS, "model.py")):
        raise FileNotFoundError(f"{SCRIPTS}/model.py: this part runs the validation rows' model, which is in the source "
                                "tree beside calibrate/ (run the driver from a checkout)")
    if SCRIPTS not in sys.path:
        sys.path.insert(0, SCRIPTS)
