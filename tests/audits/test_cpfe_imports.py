"""What a whole CPFE run imports: scipy costs ~0.3 s of start-up (scipy.special, scipy.optimize) and the audit needs
none of it (stats.normal, stats.brent). Run in a fresh interpreter, since this test process has scipy loaded."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd

RUN = """
import json, sys
from pathlib import Path
from mhaudit.audits.cpfe import CPFEInputs, CPFEOptions, audit_cpfe
from mhaudit.report import write_report
from mhaudit.tables.prediction_files import read_predictions

folder = Path(sys.argv[1])
preds = read_predictions(sorted(map(str, folder.glob("*.csv"))), name_pattern="{model}_seed{seed}_{platform}")
write_report(audit_cpfe(CPFEInputs(preds), CPFEOptions(reference="reddit", n_boot_significance=200, n_boot_ece=100)),
             folder / "out")
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""


def write_two_platforms(folder) -> None:
    """SYNTHETIC prediction files of one model on two platforms, as researchers publish them."""
    rng = np.random.default_rng(0)
    for platform, n in (("reddit", 300), ("twitter", 200)):
        y = rng.integers(0, 4, n)
        z = rng.normal(size=(n, 4))
        z[np.arange(n), y] += 1.5
        p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
        pd.DataFrame({"label": y, **{f"prob_{c}": p[:, c].round(6) for c in range(4)}}).to_csv(
            folder / f"bert_seed0_{platform}.csv", index=False
        )


def modules_after_a_cpfe_run(folder) -> set[str]:
    """The top-level packages a fresh interpreter holds after an API run of the CPFE audit (figures and the report
    included) on `write_two_platforms`' files."""
    write_two_platforms(folder)
    done = subprocess.run([sys.executable, "-c", RUN, str(folder)], capture_output=True, text=True, check=True)
    assert (folder / "out" / "report.html").is_file()
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_an_api_cpfe_run_imports_no_scipy(tmp_path):
    modules = modules_after_a_cpfe_run(tmp_path)
    assert {"mhaudit", "numpy", "pandas"} <= modules  # the run did run
    assert "scipy" not in modules
