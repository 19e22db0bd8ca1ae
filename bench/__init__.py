"""Benchmarks: run them as scripts (``.venv/bin/python bench/<name>.py``); they set up what they need."""
