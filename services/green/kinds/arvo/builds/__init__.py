"""Judging on a task's builds in fresh containers, for the reproduce and fix kinds: one input on
one build (:mod:`.runs`), a judging container (:mod:`.box`), the vulnerable and fixed builds of
a task (:mod:`.task_builds`) and their settings (:mod:`.settings`)."""
