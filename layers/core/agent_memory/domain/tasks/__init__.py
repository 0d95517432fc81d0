"""Model tasks: one module per thing a model is asked (API.md, "What a learning model
returns", "What the memory bot's model is asked", seed 003's model tasks).

`base.ModelTask` is the interface; each module holds the instances of its tasks:
`memory_changes.MEMORY_CHANGES` (seeds 000/004 consolidation), `learning_changes` and
`memory_bot_requests` (confide_answer, enrichment; seed 002), `observation` (title,
observation, reflection; seed 003).
Import a task's own module: this package imports none of them, so a cold start pays only
for the tasks it runs.
"""
