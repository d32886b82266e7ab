"""The ReAct agent: the loop (:mod:`.loop`) and what only it uses: config and prompt templates,
limits, the conversation and its compaction, the call parser, the run's record."""
