"""How the framework sections round: 4 significant digits, the precision of trainsim-calibrate's own
figures (calibrate/profile_writer.cpp). Needs no torch."""


def sig4(x):
    if x == 0:
        return 0.0
    return float(f"{x:.4g}")
