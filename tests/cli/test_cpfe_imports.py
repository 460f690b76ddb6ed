"""What the whole `mhaudit audit cpfe` command imports, in a fresh interpreter: none of scipy (~0.3 s),
matplotlib (the figures are SVG text) or pydantic (typer 0.29 parses options through it, ~0.06 s). These are
start-up costs a CPFE run pays for nothing (docs/benchmarks.md, `benchmarks/cpfe_process.py`)."""

import json
import subprocess
import sys

from tests.audits.test_cpfe_imports import write_two_platforms

RUN = """
import json, pathlib, sys
from mhaudit.cli import main
listing, sys.argv = pathlib.Path(sys.argv[1]), ["mhaudit", *sys.argv[2:]]
try:
    main()
finally:
    listing.write_text(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""


def test_the_cpfe_command_imports_no_scipy_matplotlib_or_pydantic(tmp_path):
    write_two_platforms(tmp_path)
    listing = tmp_path / "modules.json"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            RUN,
            str(listing),
            "audit",
            "cpfe",
            "--predictions",
            *sorted(map(str, tmp_path.glob("*.csv"))),
            "--name-pattern",
            "{model}_seed{seed}_{platform}",
            "--reference",
            "reddit",
            "--n-boot-significance",
            "200",
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "report.html").is_file()
    modules = set(json.loads(listing.read_text()))
    assert {"mhaudit", "typer", "numpy", "pandas"} <= modules  # the command did run
    assert not modules & {"scipy", "matplotlib", "pydantic"}, sorted(modules & {"scipy", "matplotlib", "pydantic"})
