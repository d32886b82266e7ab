"""One task's life on this replica: intake and the claim, the run and its runtime, serving the agent, purple's side, the outcome and its end, the dispatcher."""
