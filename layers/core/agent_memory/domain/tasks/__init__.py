"""Model tasks: one module per thing a model is asked (API.md, "What a learning model
returns", "What the memory bot's model is asked", seed 003's model tasks); `base.ModelTask`
is the interface. Import a task's own module: this package imports none of them, so a cold
start pays only for the tasks it runs.
"""
