"""Command line: ``python -m sklearn_svi demo``, ``... topics PATH...`` and
``... transform MODEL PATH...``."""

import argparse

from ._demo import run_demo
from ._topics import METHODS, fit_topics, transform_texts


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
        help="fit topics to text files: one text per line of a file, or one "
        "per file of a folder",
    )
    topics.add_argument("paths", nargs="+", help="UTF-8 text files and folders")
    topics.add_argument("--column", help="the column of texts of TSV files")
    topics.add_argument("--method", choices=sorted(METHODS), default="smoothed")
    topics.add_argument("--n-components", type=int, default=20)
    topics.add_argument("--passes", type=int, default=5)
    topics.add_argument("--batch-size", type=int, default=256)
    topics.add_argument("--min-df", type=int, default=5)
    topics.add_argument("--n-words", type=int, default=10)
    topics.add_argument("--output", help="save the fitted pipeline here (joblib)")
    topics.add_argument(
        "--report", help="write an HTML report of the topics here (TopicReport)"
    )
    topics.add_argument("--seed", type=int, default=0)
    transform = commands.add_parser(
        "transform", help="write the topic proportions of text files as CSV"
    )
    transform.add_argument("model", help="a pipeline saved by topics --output")
    transform.add_argument("paths", nargs="+", help="UTF-8 text files and folders")
    transform.add_argument("--column", help="the column of texts of TSV files")
    transform.add_argument("--output", required=True, help="the CSV file to write")
    arguments = parser.parse_args(argv)
    try:
        if arguments.command == "demo":
            run_demo(seed=arguments.seed)
        elif arguments.command == "topics":
            fit_topics(
                arguments.paths,
                column=arguments.column,
                method=arguments.method,
                n_components=arguments.n_components,
                passes=arguments.passes,
                batch_size=arguments.batch_size,
                min_df=arguments.min_df,
                n_words=arguments.n_words,
                output=arguments.output,
                report=arguments.report,
                random_state=arguments.seed,
            )
        else:
            transform_texts(
                arguments.model,
                arguments.paths,
                arguments.output,
                column=arguments.column,
            )
            print(f"Wrote the topic proportions to {arguments.output}.")
    except ValueError as error:
        # A clear message for bad input, as argparse gives for bad options.
        parser.exit(2, f"{parser.prog} {arguments.command}: error: {error}\n")


if __name__ == "__main__":
    main()
