# SAM / CloudFormation tooling. Included by the Makefile: `include infra/lint.mk`.
# aws-sam-cli pins its own boto3/pydantic/click, so it lives in its own venv (.venv-sam),
# never in the app's .venv.

SAM_VENV ?= .venv-sam
SAM_PYTHON ?= $(PYTHON)
SAM_CLI_VERSION := 1.170.0
CFN_LINT_VERSION := 1.58.0
SAM_STAMP := $(SAM_VENV)/.installed-sam-$(SAM_CLI_VERSION)-cfn-lint-$(CFN_LINT_VERSION)
SAM := SAM_CLI_TELEMETRY=0 $(SAM_VENV)/bin/sam
CFN_LINT := $(SAM_VENV)/bin/cfn-lint
# samconfig.toml profile: default (the dev stack) or prod.
ENV ?= default
# Only for a first deploy or to change a secret parameter; replaces samconfig's list,
# parameters not named keep their previous value. See docs/operations.md#deploy.
PARAMETER_OVERRIDES ?=

.PHONY: sam-venv cfn-lint sam-validate sam-build deploy layer-requirements layer-requirements-check

$(SAM_STAMP):
	$(SAM_PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install aws-sam-cli==$(SAM_CLI_VERSION) cfn-lint==$(CFN_LINT_VERSION)
	touch $@

sam-venv: $(SAM_STAMP)

# Generated from pyproject.toml [project].dependencies (stdlib only: no venv needed).
layer-requirements:
	$(SAM_PYTHON) infra/gen_layer_requirements.py

layer-requirements-check:
	$(SAM_PYTHON) infra/gen_layer_requirements.py --check

cfn-lint: sam-venv
	$(CFN_LINT) template.yaml

sam-validate: sam-venv
	AWS_DEFAULT_REGION=$${AWS_DEFAULT_REGION:-us-east-1} $(SAM) validate --lint

sam-build: sam-venv layer-requirements
	$(SAM) build --config-env $(ENV)

deploy: sam-build
	$(SAM) deploy --config-env $(ENV) $(if $(PARAMETER_OVERRIDES),--parameter-overrides "$(PARAMETER_OVERRIDES)")
