"""Pure rules of the memory service: no I/O, no AWS, no web framework."""
