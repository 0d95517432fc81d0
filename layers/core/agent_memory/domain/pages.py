"""Page sizes of the change logs (agent memory, bot memory): the default and the largest
`limit` a log read takes. Here, not in the services, so a route's module reads them without
loading its service (a cold start imports the routes, the first request the services)."""

from __future__ import annotations

DEFAULT_LOG_LIMIT = 100
MAX_LOG_LIMIT = 1000
