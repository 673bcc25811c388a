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


BROKEN_MJCF = '<mujoco><worldbody><body><joint type="hinge"/><geom size="0.1" typo="1"/></body></worldbody></mujoco>'


@pytest.mark.parametrize("command", ["verify", "check"])
def test_a_path_to_an_mjcf_file_is_a_model(capsys, tmp_path, command):
    from physai import models

    path = tmp_path / "pendulum.xml"
    path.write_text(models.model_path("double_pendulum").read_text())
    assert main([command, str(path), "--states", "3"]) == 0
    assert f"physai {command} {path}: nq = 2, nv = 2" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["verify", "check"])
def test_a_malformed_mjcf_file_is_one_clear_line_and_exit_2(capsys, tmp_path, command):
    path = tmp_path / "broken.xml"
    path.write_text(BROKEN_MJCF)
    assert main([command, str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"physai {command}: error: MuJoCo cannot compile the MJCF file {str(path)!r}: ")
    assert "unrecognized attribute: 'typo'" in err and "Traceback" not in err
    assert len(err.splitlines()) == 1, err                               # MuJoCo's "Element 'geom', line 1" joined
    assert main([command, str(tmp_path / "missing.xml")]) == 2
    assert f"error: no MJCF file {str(tmp_path / 'missing.xml')!r}" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["verify", "check"])
def test_help_says_a_path_to_an_mjcf_file_is_accepted(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    assert "or path to an MJCF file" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("argv", [[], ["verify", "--bogus"], ["nosuchcommand"], ["check", "arm2", "--states"],
                                  ["lesson", "open", "x.md", "--port"], ["verify", "double_pendulum", "--seed", "x"]])
def test_usage_errors_are_one_line_on_stderr_and_exit_2(capsys, argv):
    """argparse's errors (its usage block dropped), as physai's own: one line naming the command, exit status 2."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("physai") and ": error: " in err, err
