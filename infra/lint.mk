# SAM / CloudFormation tooling. Included by the Makefile: `include infra/lint.mk`.
# aws-sam-cli pins its own boto3/pydantic/click, so it lives in its own venv (.venv-sam),
# never in the app's .venv; checkov pins others again (boto3, pydantic, networkx...), so it
# has a third (.venv-checkov).

SAM_VENV ?= .venv-sam
SAM_PYTHON ?= $(PYTHON)
SAM_CLI_VERSION := 1.170.0
CFN_LINT_VERSION := 1.58.0
SAM_STAMP := $(SAM_VENV)/.installed-sam-$(SAM_CLI_VERSION)-cfn-lint-$(CFN_LINT_VERSION)
SAM := SAM_CLI_TELEMETRY=0 $(SAM_VENV)/bin/sam
CFN_LINT := $(SAM_VENV)/bin/cfn-lint
CHECKOV_VENV ?= .venv-checkov
CHECKOV_VERSION := 3.3.30
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed-checkov-$(CHECKOV_VERSION)
# samconfig.toml profile: default (the dev stack) or prod.
ENV ?= default
# Only for a first deploy or to change a secret parameter; replaces samconfig's list,
# parameters not named keep their previous value. See docs/operations.md#deploy.
PARAMETER_OVERRIDES ?=

.PHONY: sam-venv cfn-lint sam-validate sam-build deploy deploy-check admin-token \
	admin-token-hash checkov-venv checkov \
	layer-requirements layer-requirements-check

$(SAM_STAMP):
	$(SAM_PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install aws-sam-cli==$(SAM_CLI_VERSION) cfn-lint==$(CFN_LINT_VERSION)
	touch $@

sam-venv: $(SAM_STAMP)

$(CHECKOV_STAMP):
	$(SAM_PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install --quiet --disable-pip-version-check checkov==$(CHECKOV_VERSION)
	touch $@

checkov-venv: $(CHECKOV_STAMP)

# Offline (skip-download); the checks that do not apply, and why: infra/checkov.yaml.
checkov: checkov-venv
	$(CHECKOV_VENV)/bin/checkov -f template.yaml --config-file infra/checkov.yaml

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

# Refuses a malformed AdminTokenSha256, the hash of a known weak token, and a first deploy
# without one (infra/admin_token.py); runs before anything is built or uploaded.
deploy-check: sam-venv
	$(SAM_VENV)/bin/python infra/admin_token.py check --env $(ENV) --overrides '$(PARAMETER_OVERRIDES)'

deploy: deploy-check
	$(MAKE) --no-print-directory sam-build
	$(SAM) deploy --config-env $(ENV) $(if $(PARAMETER_OVERRIDES),--parameter-overrides "$(PARAMETER_OVERRIDES)")

# A new admin token and its SHA-256 ("<token> <hash>"); docs/operations.md#the-admin-token.
admin-token:
	@$(SAM_PYTHON) infra/admin_token.py new

# The SHA-256 of the token on stdin; refuses one under 32 characters.
admin-token-hash:
	@$(SAM_PYTHON) infra/admin_token.py hash
