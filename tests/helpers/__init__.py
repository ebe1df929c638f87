"""Helpers shared by test modules: a server started as a real process, a real browser, a classifier's
settings from loose values."""
