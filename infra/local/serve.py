"""`make run`: the embedded AWS and the API in one process, on loopback.

Environment: PORT (API, default 8080), AWS_LOCAL_PORT (embedded AWS, default 4566; a free
port is taken when it is busy), MEMORY_ADMIN_TOKEN (generated and printed when unset),
DEFAULT_MODEL (default local/rules), OPENAI_BASE_URL / OPENAI_API_KEY.
"""

from __future__ import annotations

import os
import secrets
import socket

from infra.local import aws


def _free_port(preferred: int) -> int:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", preferred))
            return preferred
        except OSError:
            probe.bind(("127.0.0.1", 0))
            return int(probe.getsockname()[1])


def configure_environment() -> tuple[str, int]:
    """Start the embedded AWS, provision it, and set the service's environment."""
    from agent_memory.domain.identity import hash_token

    aws_port = _free_port(int(os.environ.get("AWS_LOCAL_PORT", "4566")))
    aws.start_server(aws_port)
    import boto3

    local = aws.provision(boto3.session.Session(region_name=aws.REGION))
    os.environ.update(local.environment())
    admin_token = os.environ.get("MEMORY_ADMIN_TOKEN") or f"amk_admin_{secrets.token_hex(20)}"
    os.environ["MEMORY_ADMIN_TOKEN_SHA256"] = hash_token(admin_token)
    os.environ.setdefault("DEFAULT_MODEL", "local/rules")
    os.environ.setdefault("OFFLOAD_BLOCKING_CALLS", "true")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", os.environ.get("LOG_LEVEL", "WARNING"))
    return admin_token, aws_port


def main() -> None:
    import uvicorn

    port = int(os.environ.get("PORT", "8080"))
    admin_token, aws_port = configure_environment()

    from agent_memory.api.app import create_app
    from agent_memory.bootstrap import services_from_environment

    app = create_app(services_from_environment())
    print(
        f"agent-memory on http://127.0.0.1:{port}\n"
        f"  admin token: {admin_token}\n"
        f"  embedded AWS: http://127.0.0.1:{aws_port} (aws --endpoint-url ... dynamodb scan "
        f"--table-name {aws.TABLE_NAME})\n"
        f"  default model: {os.environ['DEFAULT_MODEL']}",
        flush=True,
    )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
