"""The reproduce kind (``arvo-poc``): write an input that crashes the vulnerable build only."""
