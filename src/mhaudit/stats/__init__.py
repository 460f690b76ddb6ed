"""Statistics for the audits: plain functions on arrays; imports nothing from the rest of mhaudit."""
