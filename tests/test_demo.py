"""The command line: the demo and the topics of a text file."""

import re

import joblib
import numpy as np
import pytest

from sklearn_svi.__main__ import main

NUMBER = r"(-?\d+\.\d+)"


def test_demo_table_and_its_conclusion_agree(capsys):
    main(["demo"])
    output = capsys.readouterr().out
    rows = {
        name.strip(): [float(value) for value in values]
        for name, *values in re.findall(
            rf"^(\S.*?)\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}$",
            output,
            re.M,
        )
    }
    assert list(rows) == [
        "SmoothedLDA(L=1), plain SVI",
        "SmoothedLDA()",
        "AnnealedLDA()",
        "FilteredLDA()",
    ]
    plain, filtered = rows["SmoothedLDA(L=1), plain SVI"], rows["FilteredLDA()"]
    for fit_first, fit_second, step_before, step_after, seconds in rows.values():
        assert fit_first < 0 and fit_second < 0
        assert 0 < step_before <= 1 and 0 < step_after <= 1
        assert seconds > 0
    # The filter's step rises when the topics change; the schedule's cannot.
    assert filtered[3] > 5 * filtered[2]
    assert plain[3] <= plain[2]
    # The conclusion states the table's own differences.
    (second, first) = re.findall(r"(\d\.\d{3}) nats per word (better|worse)", output)
    for (amount, direction), column in zip([second, first], [1, 0]):
        difference = filtered[column] - plain[column]
        assert float(amount) == pytest.approx(abs(difference), abs=2e-3)
        assert direction == ("better" if difference > 0 else "worse")
    assert f"step was {plain[2]:.4f}" in output


def test_unknown_command_is_an_error():
    with pytest.raises(SystemExit):
        main(["train"])


def write_corpus(path, n_texts=600, seed=0):
    """Texts over two vocabularies, one per line: two topics to find."""
    rng = np.random.default_rng(seed)
    fruit = [f"fruit{i}" for i in range(20)]
    engine = [f"engine{i}" for i in range(20)]
    lines = [
        " ".join(rng.choice(fruit if d % 2 else engine, size=15))
        for d in range(n_texts)
    ]
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")


def test_topics_of_a_text_file(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    write_corpus(corpus)
    output = tmp_path / "model.joblib"
    main(
        [
            "topics",
            str(corpus),
            "--n-components",
            "2",
            "--passes",
            "3",
            "--batch-size",
            "64",
            "--output",
            str(output),
        ]
    )
    printed = capsys.readouterr().out
    progress = re.findall(rf"held-out log predictive per word {NUMBER}", printed)
    assert len(progress) == 3 * 4
    topics = re.findall(r"^topic +\d+: (.*)$", printed, re.M)
    assert len(topics) == 2
    # Each topic is one of the two vocabularies.
    assert {words.split()[0].rstrip("0123456789") for words in topics} == {
        "fruit",
        "engine",
    }
    pipeline = joblib.load(output)
    assert pipeline.transform(["fruit1 fruit2 fruit3"]).shape == (1, 2)


def test_topics_of_a_tsv_column(tmp_path, capsys):
    corpus = tmp_path / "corpus.tsv"
    corpus.write_text("id\ttext\n1\tapples pears\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no column 'summary'"):
        main(["topics", str(corpus), "--column", "summary"])
