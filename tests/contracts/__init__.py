"""One contract suite a port, run against every set of adapters.

Each suite has one fixture with a param per adapter set; another set (the single-machine
adapters of a later issue) runs the same suite by adding one param to it.
"""
