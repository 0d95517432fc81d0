"""Use cases, one module per capability. They talk to ports (through persistence) only."""
