"""Audits: functions from tables (+ options) to a Result of tidy tables."""
