"""The console: the one rule for repeatable flags (mhaudit.cli.console.spread), and what a command prints."""

from mhaudit.cli.console import spread

MANY = {"--target", "--reference"}


def test_values_after_a_repeatable_flag_each_get_the_flag():
    args = ["--reference", "r1", "r2", "--target", "a", "b", "c", "--out", "dir"]
    assert spread(args, MANY) == [
        "--reference",
        "r1",
        "--reference",
        "r2",
        "--target",
        "a",
        "--target",
        "b",
        "--target",
        "c",
        "--out",
        "dir",
    ]


def test_other_flags_positional_arguments_and_double_dash_are_left_alone():
    assert spread(["corpus.parquet", "--out", "x", "--seed", "-1"], MANY) == [
        "corpus.parquet",
        "--out",
        "x",
        "--seed",
        "-1",
    ]
    assert spread(["--target", "a", "--", "b"], MANY) == ["--target", "a", "--", "b"]
    assert spread(["--target", "a", "--target", "b"], MANY) == ["--target", "a", "--target", "b"]


def test_a_commands_summary_is_followed_by_the_results_notes(capsys):
    from mhaudit.cli.console import print_summary
    from mhaudit.report import AuditResult

    print_summary(
        AuditResult(
            "t", [], summary="Two of three targets fail.", notes=["the reference's debiased ECE is 0.140, above 0.10"]
        )
    )
    shown = " ".join(capsys.readouterr().out.split())
    assert shown == "Two of three targets fail. note: the reference's debiased ECE is 0.140, above 0.10"
