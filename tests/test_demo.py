"""The command line demo."""

import re

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
