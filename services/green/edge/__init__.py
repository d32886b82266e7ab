"""Who may reach green: its HTTP server, the bounds on every request, the operator token, the intake bounds, and what of a record a caller may see."""
