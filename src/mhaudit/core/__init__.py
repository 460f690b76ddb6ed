"""Shared plumbing with no domain knowledge: the one user-facing error type, pseudonymisation, checks of packaged
model weights, and the executor seam that runs jobs in-process, in local processes or on Ray."""
