"""Test helpers shared by the test suites (fake LLM server, local shell environment)."""
