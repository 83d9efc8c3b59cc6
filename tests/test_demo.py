"""The command line demo."""

import re

import pytest

from sklearn_svi.__main__ import main


def test_demo_prints_recovered_topics_and_the_comparison(capsys):
    main(["demo"])
    output = capsys.readouterr().out
    matches = [float(value) for value in re.findall(r"match (\d\.\d\d)", output)]
    assert len(matches) == 8
    assert min(matches) > 0.8
    rows = re.findall(
        r"^\s+(1|10)\s+(\d\.\d+)\s+(-\d+\.\d+)\s+(\d+\.\d+)$", output, re.M
    )
    assert [row[0] for row in rows] == ["1", "10"]
    for _, mean_match, bound, seconds in rows:
        assert 0.8 < float(mean_match) <= 1.0
        assert float(bound) < 0
        assert float(seconds) > 0


def test_unknown_command_is_an_error():
    with pytest.raises(SystemExit):
        main(["train"])
