"""`make aws-local`: the embedded AWS alone on loopback, provisioned from template.yaml.

Inspect it with the AWS CLI (`aws --endpoint-url http://127.0.0.1:4566 dynamodb scan
--table-name agent-memory`), or point `sam local start-api --env-vars
infra/local/sam-local-env.json` at it (docs/operations.md).
"""

from __future__ import annotations

import os
import threading

from infra.local import aws


def main() -> None:
    import boto3

    port = int(os.environ.get("AWS_LOCAL_PORT", "4566"))
    host = os.environ.get("AWS_LOCAL_HOST", "127.0.0.1")
    aws.start_server(port, host)
    local = aws.provision(boto3.session.Session(region_name=aws.REGION))
    print(f"embedded AWS on http://{host}:{port}", flush=True)
    for name, value in {**local.environment(), "AWS_ENDPOINT_URL": f"http://{host}:{port}"}.items():
        print(f"  {name}={value}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
