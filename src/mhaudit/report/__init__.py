"""What every audit returns (`AuditResult`: summary, verdicts, tables, figures, provenance) and its one renderer:
report.json, report.md and report.html."""

from mhaudit.report.render import write_report
from mhaudit.report.result import VERDICT_COLUMNS, AuditResult, Section, verdict, verdict_table

__all__ = ["AuditResult", "Section", "VERDICT_COLUMNS", "verdict", "verdict_table", "write_report"]
