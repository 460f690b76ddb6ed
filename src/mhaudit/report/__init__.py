"""One renderer for every audit's Result: report.json, report.md and report.html."""

from mhaudit.report.render import Result, Section, write_report

__all__ = ["Result", "Section", "write_report"]
