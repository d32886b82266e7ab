"""Purple: the agent under test, a ReAct root-cause analyst that works through green."""
