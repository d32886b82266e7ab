"""The fix kind (``arvo-fix``): a patch that builds, stops the crash and keeps the behaviour."""
