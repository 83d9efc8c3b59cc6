"""Command line: ``python -m sklearn_svi demo`` and ``... topics FILE``."""

import argparse

from ._demo import run_demo
from ._topics import fit_topics


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
    topics = commands.add_parser(
        "topics",
        help="fit topics to a text file (one text per line, or a TSV column)",
    )
    topics.add_argument("path", help="a UTF-8 text file")
    topics.add_argument("--column", help="the column of texts of a TSV file")
    topics.add_argument("--n-components", type=int, default=20)
    topics.add_argument("--passes", type=int, default=5)
    topics.add_argument("--batch-size", type=int, default=256)
    topics.add_argument("--min-df", type=int, default=5)
    topics.add_argument("--n-words", type=int, default=10)
    topics.add_argument("--output", help="save the fitted pipeline here (joblib)")
    topics.add_argument("--seed", type=int, default=0)
    arguments = parser.parse_args(argv)
    if arguments.command == "demo":
        run_demo(seed=arguments.seed)
    else:
        fit_topics(
            arguments.path,
            column=arguments.column,
            n_components=arguments.n_components,
            passes=arguments.passes,
            batch_size=arguments.batch_size,
            min_df=arguments.min_df,
            n_words=arguments.n_words,
            output=arguments.output,
            random_state=arguments.seed,
        )


if __name__ == "__main__":
    main()
