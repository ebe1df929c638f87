"""Helpers shared by test modules (conftest.py makes its fixtures with them): tiny data (data.py), configs
composed from conf/ and a tiny run (config.py), strict JSON (files.py), a classifier's settings from loose
values (classifier.py), a server started as a real process (server.py), a real browser (browser.py)."""
