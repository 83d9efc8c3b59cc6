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
        "SmoothedLDA(), plain SVI",
        "AnnealedLDA()",
        "FilteredLDA()",
    ]
    plain, filtered = rows["SmoothedLDA(), plain SVI"], rows["FilteredLDA()"]
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
    with pytest.raises(SystemExit) as exit_:
        main(["topics", str(corpus), "--column", "summary"])
    assert exit_.value.code == 2
    assert "error: " in capsys.readouterr().err


def write_folder(folder, n_texts=300, seed=0):
    """One text per file, over two vocabularies, in a folder and a sub-folder."""
    rng = np.random.default_rng(seed)
    (folder / "more").mkdir(parents=True)
    for d in range(n_texts):
        words = (
            [f"fruit{i}" for i in range(20)]
            if d % 2
            else [f"engine{i}" for i in range(20)]
        )
        place = folder / "more" if d % 3 == 0 else folder
        (place / f"doc{d:03d}.txt").write_text(
            "\n".join(" ".join(rng.choice(words, size=5)) for _ in range(3)),
            encoding="utf-8",
        )


def test_topics_and_transform_of_a_folder_of_files(tmp_path, capsys):
    folder = tmp_path / "texts"
    write_folder(folder)
    model = tmp_path / "model.joblib"
    main(
        [
            "topics",
            str(folder),
            "--method",
            "filtered",
            "--n-components",
            "2",
            "--passes",
            "2",
            "--batch-size",
            "50",
            "--output",
            str(model),
        ]
    )
    printed = capsys.readouterr().out
    assert "300 texts" in printed
    assert type(joblib.load(model)[-1]).__name__ == "FilteredLDA"
    csv_path = tmp_path / "proportions.csv"
    main(["transform", str(model), str(folder), "--output", str(csv_path)])
    rows = csv_path.read_text(encoding="utf-8").splitlines()
    assert rows[0] == "source,topic0,topic1"
    assert len(rows) == 301
    # A file of the sub-folder, and proportions that sum to one.
    source, *values = next(row for row in rows if "more" in row).split(",")
    assert source.endswith(".txt")
    assert sum(map(float, values)) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["topics", "{missing}"], "cannot read"),
        (["topics", "{empty}"], "every file is empty"),
        (["topics", "{one}"], "at least 2 texts"),
        (["topics", "{texts}", "--min-df", "1000"], "no words left"),
        (["transform", "{one}", "{texts}"], "cannot load a model"),
        (["transform", "{missing}", "{texts}"], "cannot load a model"),
    ],
)
def test_bad_input_is_a_clear_error_and_writes_nothing(
    tmp_path, capsys, arguments, message
):
    paths = {
        "missing": tmp_path / "no such file",
        "empty": tmp_path / "empty",
        "one": tmp_path / "one.txt",
        "texts": tmp_path / "texts",
    }
    paths["empty"].mkdir()
    (paths["empty"] / "blank.txt").write_text("  \n", encoding="utf-8")
    paths["one"].write_text("a single text\n", encoding="utf-8")
    write_folder(paths["texts"], n_texts=30)
    output = tmp_path / "out"
    command = [argument.format(**paths) for argument in arguments]
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--output", str(output)])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
    assert not output.exists()
    assert not list(tmp_path.glob("*.partial"))
