"""What both services share: the wire protocol, the loc.json schema, command results, logging."""
