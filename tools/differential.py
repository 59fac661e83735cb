"""Long runs of the differential suite: random programs against JAX until the time is up.

    python tools/differential.py --minutes 10 --stage 4

Each round draws a new program (``tests/differential/random_programs.py``) and runs it through
every transformation the stage offers, with the stage's library and with JAX 0.10.2; at stage
4 it also draws a program over sides that split (2, 4, 8) and runs it under ``set_mesh`` on
both meshes with its inputs split on each dim. Every mismatch is printed as its smallest
reproducer, a script with the program's source, its inputs, and our result beside JAX's; a
reduced program seen already (under another transformation, or from another program) is
listed at the end, not printed again. The exit status is 1 when a mismatch was found.

The suite in ``tests/differential`` runs a fixed set of these seeds; this tool starts where it
stops (``--seed``) so a long run explores programs CI does not.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "differential"))

from oracle import TRANSFORMS, Mismatch, check, prepare_jax, shrink  # noqa: E402
from random_programs import COMPLEX, FEATURES, draw_program  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="how long to run")
    parser.add_argument("--stage", type=int, choices=(1, 2, 3, 4), default=4,
                        help="the library stage (and its transformations) to check")
    parser.add_argument("--seed", type=int, default=100_000,
                        help="the first program's seed (the CI suite uses those below 10,000)")
    parser.add_argument("--length", type=int, nargs=2, default=(4, 20), metavar=("MIN", "MAX"),
                        help="lines per program, before the unused ones are dropped")
    parser.add_argument("--out-of-bounds", action="store_true",
                        help="also draw indices and updates past either end")
    parser.add_argument("--complex", action="store_true",
                        help="also draw complex values, their ops, and floats made from them")
    parser.add_argument("--transforms", default="",
                        help="comma-separated names (default: every one the stage offers)")
    return parser.parse_args(argv)


def transforms_for(args: argparse.Namespace) -> list:
    wanted = set(filter(None, args.transforms.split(",")))
    chosen = [t for t in TRANSFORMS if t.stage <= args.stage and (not wanted or t.name in wanted)]
    unknown = wanted - {t.name for t in TRANSFORMS}
    if unknown:
        raise SystemExit(f"unknown transformations {sorted(unknown)}; the names are "
                         f"{[t.name for t in TRANSFORMS]}")
    return chosen


class Report:
    """The mismatches found so far: each reduced program printed once, with the first
    transformation it was seen under; the others are listed at the end."""

    def __init__(self) -> None:
        self.seen: dict[str, list[str]] = {}
        self.cases = 0

    def add(self, mismatch: Mismatch, seed: int) -> None:
        key = f"{mismatch.program.source()}\n{mismatch.setup}"
        under = self.seen.setdefault(key, [])
        under.append(f"{mismatch.transform.name} (program {seed})")
        if len(under) > 1:
            return
        print(f"\n{'=' * 100}\nmismatch {len(self.seen)}: {mismatch.transform.name}, "
              f"program {seed} (stage {mismatch.stage})\n{'=' * 100}")
        print(mismatch.reproducer(), flush=True)

    def summary(self) -> str:
        lines = [f"mismatch {k}: {', '.join(under)}"
                 for k, under in enumerate(self.seen.values(), start=1)]
        return "\n".join(lines)


def run_round(seed: int, args: argparse.Namespace, transforms: list, report: Report) -> None:
    features = tuple(f for f in FEATURES if args.stage >= 2 or f != "control")
    features += (COMPLEX,) * (3 * args.complex)  # (weighted: a chain of complex lines)
    program = draw_program(seed, features=features, length=tuple(args.length),
                           out_of_bounds=args.out_of_bounds)
    for transform in transforms:
        report.cases += 1
        found = check(program, transform, args.stage)
        if found is not None:
            report.add(shrink(found), seed)
    if args.stage == 4:
        run_sharded_round(seed, args, report)


def run_sharded_round(seed: int, args: argparse.Namespace, report: Report) -> None:
    from sharded import (
        MESHES,
        SHARDED_EAGER,
        SHARDED_JIT,
        check_sharded,
        placements,
        shrink_sharded,
    )
    program = draw_program(seed, sides=(2, 4, 8), length=tuple(args.length),
                           out_of_bounds=args.out_of_bounds)
    for mesh in MESHES:
        for placement in placements(program, mesh):
            for transform in (SHARDED_JIT, SHARDED_EAGER):
                report.cases += 1
                found = check_sharded(program, placement, transform)
                if found is not None:
                    report.add(shrink_sharded(found, placement), seed)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not prepare_jax():
        raise SystemExit("JAX is not installed: python -m pip install -e '.[oracle]'")
    transforms = transforms_for(args)
    deadline = time.monotonic() + 60.0 * args.minutes
    report, seed = Report(), args.seed
    print(f"stage {args.stage}: {[t.name for t in transforms]}"
          f"{' and split inputs on two meshes' if args.stage == 4 else ''}, "
          f"from program {seed}, for {args.minutes:g} minutes", flush=True)
    while time.monotonic() < deadline:
        run_round(seed, args, transforms, report)
        seed += 1
    print(f"\n{seed - args.seed} programs, {report.cases} cases: {len(report.seen)} "
          f"mismatches; next time start at --seed {seed}\n{report.summary()}")
    return 1 if report.seen else 0


if __name__ == "__main__":
    sys.exit(main())
