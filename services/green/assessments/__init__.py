"""Work over many tasks: assessments and runs against one purple, and the datasets' tools."""
