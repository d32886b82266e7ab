"""Green's A2A face: the agent card and the executor that routes every incoming message."""
