"""Request and response models of the HTTP contract (API.md). Never reach the domain."""
