"""Bring your own agent: run a third-party agent that runs shell commands as a purple against
green (docs/own-agent.md). :mod:`.green_shell` is the synchronous shell a foreign agent calls,
:mod:`.server` the small A2A service around it, :mod:`.minisweagent` the mini-swe-agent adapter.
Depends on ``services.shared`` only."""
