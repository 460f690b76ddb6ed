"""`mhaudit`'s entry point builds only the command group it is asked for (typer builds every command of the app
it runs): the same help, usage and errors as the whole app, and the whole app where no group is named."""

import pytest
from typer.testing import CliRunner

from mhaudit.cli import _app_for, app


def test_a_group_alone_where_one_is_named_else_the_whole_app():
    one = _app_for(["audit", "cpfe", "--help"])
    assert [g.name for g in one.registered_groups] == ["audit"] and one.registered_commands == []
    assert len(app.registered_groups) > 1 and app.registered_commands  # the app itself is untouched
    for argv in ([], ["--help"], ["demo"], ["no-such-group"]):  # nothing, an option, a root command, a typo
        assert _app_for(argv) is app


@pytest.mark.parametrize("argv", [["audit", "cpfe", "--help"], ["audit"], ["audit", "bogus"], ["labels", "llm", "--help"],
                                  ["audit", "cpfe", "--predictions", "x.csv", "--reference", "r", "--out", "o",
                                   "--n-boot-significance", "many"]])
def test_the_same_output_and_exit_code_as_the_whole_app(argv):
    runner = CliRunner()
    whole, alone = runner.invoke(app, argv, prog_name="mhaudit"), runner.invoke(_app_for(argv), argv, prog_name="mhaudit")
    assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output)
    assert whole.output.strip()
