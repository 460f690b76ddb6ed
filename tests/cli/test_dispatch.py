"""`mhaudit`'s entry point builds only the command group it is asked for (typer builds every command of the app
it runs): the same help, usage and errors as the whole app, and the whole app, its audits listed without their
flags, where no group is named."""

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from mhaudit import __version__
from mhaudit.cli import _app_for, app
from mhaudit.cli.options import OptionsCommand


def test_a_group_alone_where_one_is_named_else_the_whole_app():
    one = _app_for(["audit", "cpfe", "--help"])
    assert [g.name for g in one.registered_groups] == ["audit"] and one.registered_commands == []
    assert len(app.registered_groups) > 1 and app.registered_commands  # the app itself is untouched
    for argv in ([], ["--help"], ["demo"], ["no-such-group"]):  # nothing, an option, a root command, a typo
        whole = _app_for(argv)  # every group, its audits listed without their flags
        assert [g.name for g in whole.registered_groups] == [g.name for g in app.registered_groups]
        assert not any(
            isinstance(c.callback, OptionsCommand)
            for g in whole.registered_groups
            for c in g.typer_instance.registered_commands
        )


def test_a_listing_imports_no_audit():
    """`mhaudit --help` and `mhaudit audit --help` list the audits without importing them (their flags would:
    ~1 s); `mhaudit audit cpfe --help` imports the CPFE audit alone."""
    code = (
        "import sys; from mhaudit.cli import main; sys.argv = ['mhaudit', *sys.argv[1:]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted({m.split('.')[2] for m in sys.modules if m.startswith('mhaudit.audits.')}))"
    )
    for argv, audits in (
        [["--help"], "[]"],
        [["--version"], "[]"],
        [["audit", "--help"], "[]"],
        [["audit", "cpfe", "--help"], "['cpfe']"],
    ):
        run = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True)
        assert run.stdout.strip().splitlines()[-1] == audits, run.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["audit", "cpfe", "--help"],
        ["audit"],
        ["audit", "bogus"],
        ["labels", "llm", "--help"],
        ["audit", "cpfe", "--predictions", "x.csv", "--reference", "r", "--out", "o", "--n-boot-significance", "many"],
    ],
)
def test_the_same_output_and_exit_code_as_the_whole_app(argv):
    runner = CliRunner()
    whole = runner.invoke(app, argv, prog_name="mhaudit")
    alone = runner.invoke(_app_for(argv), argv, prog_name="mhaudit")
    assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output)
    assert whole.output.strip()


def test_version_prints_the_package_version_and_nothing_else():
    for argv in (["--version"], ["--version", "audit"]):  # eager: before any command is looked at
        run = CliRunner().invoke(_app_for(argv), argv, prog_name="mhaudit")
        assert (run.exit_code, run.output) == (0, f"mhaudit {__version__}\n")
