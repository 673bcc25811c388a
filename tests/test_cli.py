"""The physai command line: shared argument types and error handling of every subcommand."""

import pytest

from physai.cli import main


@pytest.mark.parametrize("command", [["check", "arm2"], ["verify", "double_pendulum"]])
@pytest.mark.parametrize("option, value, message", [
    ("--states", "0", "expected a whole number >= 1, got 0"),
    ("--states", "-2", "expected a whole number >= 1, got -2"),
    ("--states", "abc", "expected a whole number >= 1, got 'abc'"),
    ("--seed", "-1", "expected a whole number >= 0, got -1"),
    ("--seed", "1.5", "expected a whole number >= 0, got '1.5'"),
])
def test_bad_counts_and_seeds_are_usage_errors(capsys, command, option, value, message):
    """argparse's exit 2 with a clear message, not a numpy traceback (--seed -1) or "invalid _positive_int value"."""
    with pytest.raises(SystemExit) as exit_info:
        main([*command, option, value])
    assert exit_info.value.code == 2
    assert f"argument {option}: {message}" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["verify", "check"])
def test_unknown_model_is_one_clear_line_and_exit_2(capsys, command):
    assert main([command, "no_such_robot"]) == 2
    assert "unknown model 'no_such_robot'" in capsys.readouterr().err
