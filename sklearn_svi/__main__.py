"""Command line entry point: ``python -m sklearn_svi demo``."""

import argparse

from ._demo import run_demo


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_svi",
        description="Smoothed, annealed and filtered SVI for scikit-learn.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo",
        help="fit every estimator to a stream whose topics change half-way",
    )
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    arguments = parser.parse_args(argv)
    if arguments.command == "demo":
        run_demo(seed=arguments.seed)


if __name__ == "__main__":
    main()
