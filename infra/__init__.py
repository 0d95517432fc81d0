"""Outside the Lambda layer: the SAM template loader and build-time generators, the local
runtime (`infra.local`) and the operator's move tool (`infra.move`)."""
