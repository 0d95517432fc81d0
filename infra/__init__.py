"""Infrastructure helpers: the SAM template loader and build-time generators."""
