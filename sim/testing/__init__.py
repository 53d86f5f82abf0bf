"""Test support that ships with the library (closed-form results, state machines).

Importing this package imports none of its modules: they pull in Hypothesis.
"""
