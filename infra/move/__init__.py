"""The operator's `agent-memory-admin`: a whole deployment moved, sealed for its target
(docs/adr/0085). It runs on an operator's machine, never in a function, so it lives
outside the Lambda layer and imports the core as any caller would."""
