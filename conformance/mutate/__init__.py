"""Mutation testing of the generated suites (docs/mutation.md)."""
