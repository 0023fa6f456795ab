# Paygate: a Kubernetes-native merchant payment gateway.
# `make help` lists the targets.

IMG ?= paygate:dev
GOFLAGS_TEST ?= -count=1 -timeout 40m
# The local control plane (`paygate dev`) is compiled only with this tag; the image never has it.
DEV_TAGS ?= -tags dev

# Tools are pinned and installed into ./bin.
LOCALBIN ?= $(shell pwd)/bin
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen
CONTROLLER_TOOLS_VERSION ?= v0.23.0
HELM ?= $(LOCALBIN)/helm
HELM_VERSION ?= v3.22.0
PROMTOOL ?= $(LOCALBIN)/promtool
# The Go module version of Prometheus whose promtool test/alerts runs (v0.316.0 is Prometheus 3.16.0).
PROMETHEUS_VERSION ?= v0.316.0
# Redocly CLI (the OpenAPI linter), pinned in hack/install-redocly.sh, installed into bin/redocly.
REDOCLY ?= $(LOCALBIN)/redocly/bin/redocly
ETCD_VERSION ?= v3.6.16
KUBE_VERSION ?= v1.37.0

# envtest finds etcd and kube-apiserver here (built from the Go module proxy by hack/).
export KUBEBUILDER_ASSETS = $(LOCALBIN)

SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate CRDs and RBAC (manager, apiserver) from the Go markers.
	$(CONTROLLER_GEN) rbac:roleName=paygate-manager crd paths="./api/..." paths="./controllers/..." output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	rm -f charts/paygate/crds/*.yaml
	cp config/crd/bases/*.yaml charts/paygate/crds/
	{ cat hack/clusterrole-header.yaml.tpl; sed -n '/^rules:/,$$p' config/rbac/role.yaml; } > charts/paygate/templates/clusterrole.yaml
	$(CONTROLLER_GEN) rbac:roleName=paygate-apiserver paths="./apiserver/..." output:rbac:artifacts:config=config/rbac/apiserver
	{ cat hack/apiserver-clusterrole-header.yaml.tpl; sed -n '/^rules:/,$$p' config/rbac/apiserver/role.yaml; echo '{{- end }}'; } > charts/paygate/templates/apiserver-clusterrole.yaml

.PHONY: generate
generate: controller-gen ## Generate DeepCopy methods.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: fmt
fmt: ## Run gofmt on the code.
	gofmt -s -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet (production build and the dev build).
	go vet ./...
	go vet $(DEV_TAGS) ./cmd/...

.PHONY: verify
verify: manifests generate ## Fail when generated files, go.mod or formatting drift from what is committed.
	@hack/check-headers.sh
	go mod tidy
	@git diff --exit-code -- go.mod go.sum || { echo "go.mod/go.sum are not tidy: run 'go mod tidy' and commit."; exit 1; }
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	@git diff --exit-code -- api config charts/paygate/crds charts/paygate/templates/clusterrole.yaml charts/paygate/templates/apiserver-clusterrole.yaml || { echo "Generated files drifted: run 'make manifests generate' and commit."; exit 1; }
	@test -z "$$(git status --porcelain -- api config charts/paygate/crds charts/paygate/templates/clusterrole.yaml charts/paygate/templates/apiserver-clusterrole.yaml)" || { echo "Untracked generated files:"; git status --porcelain -- api config charts/paygate/crds charts/paygate/templates/clusterrole.yaml charts/paygate/templates/apiserver-clusterrole.yaml; exit 1; }
	@diff <(sed -n '/^rules:/,$$p' config/rbac/role.yaml) <(sed -n '/^rules:/,$$p' charts/paygate/templates/clusterrole.yaml) >/dev/null \
		|| { echo "charts/paygate/templates/clusterrole.yaml: rules differ from config/rbac/role.yaml"; exit 1; }
	@diff <(sed -n '/^rules:/,$$p' config/rbac/apiserver/role.yaml) <(sed -n '/^rules:/,$$p' charts/paygate/templates/apiserver-clusterrole.yaml | grep -v '^{{') >/dev/null \
		|| { echo "charts/paygate/templates/apiserver-clusterrole.yaml: rules differ from config/rbac/apiserver/role.yaml"; exit 1; }

# helm: test/install renders and lints the chart with bin/helm; promtool: test/alerts runs the
# alert rules' unit tests with bin/promtool (both fail without them when CI=true).
# lint-openapi: Redocly CLI lints the OpenAPI document.
.PHONY: test
test: verify vet lint-openapi controlplane helm promtool ## Run every test: unit, envtest integration, install path (Helm, kustomize), fuzz seeds.
	go test $(GOFLAGS_TEST) $(DEV_TAGS) ./... -coverprofile cover.out

# How long `make fuzz` runs each fuzz target, and flags for `go test -fuzz` (e.g. -parallel 2).
FUZZTIME ?= 3m
FUZZFLAGS ?=

.PHONY: fuzz
fuzz: ## Run every fuzz target (func Fuzz...) of the repository, one after another, each for FUZZTIME (default 3m).
	@set -e; for dir in $$(git grep --untracked -l '^func Fuzz' -- '*_test.go' | xargs -n1 dirname | sort -u); do \
		pkg=./$$dir; \
		for name in $$(go test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "=== fuzz $$pkg $$name for $(FUZZTIME)"; \
			start=$$(date +%s); \
			go test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS) $$pkg; \
			echo "--- clean: $$pkg $$name ($$(( $$(date +%s) - start )) s with the build)"; \
		done; \
	done

# The benchmark table (docs/performance.md): the real paygate binary against etcd and kube-apiserver,
# load from a separate process, every figure next to the floor measured in the same run. BENCH_*
# variables size it (test/bench/driver/settings.go); BENCH_OUT keeps the logs and profiles.
.PHONY: bench
bench: controlplane ## The benchmark table (docs/performance.md): every row, its ratio to the raw Kubernetes API, its target (~15-30 min); then the rate limiter.
	go run ./test/bench/cmd/paygate-bench
	go test ./internal/ratelimit/ -run '^$$' -bench . -benchmem

.PHONY: bench-quick
bench-quick: controlplane ## The benchmark table with tiny counts (BENCH_QUICK=1, ~3 min): a smoke test of every row.
	BENCH_QUICK=1 go run ./test/bench/cmd/paygate-bench

# The archive's scale run (docs/performance.md): a million archived payments and ten thousand live
# ones of one merchant on a real PostgreSQL, the manager and the merchant API.
ARCHIVE_SCALE_ARCHIVED ?= 1000000
ARCHIVE_SCALE_LIVE ?= 10000

.PHONY: bench-archive
bench-archive: controlplane ## Archive scale run: archived-record reads and balance absorption with 1M archived payments.
	ARCHIVE_SCALE=1 ARCHIVE_SCALE_ARCHIVED=$(ARCHIVE_SCALE_ARCHIVED) ARCHIVE_SCALE_LIVE=$(ARCHIVE_SCALE_LIVE) \
		go test ./test/archivescale/ -run TestArchiveScale -count=1 -v -timeout 60m

# The fault harness (docs/reliability.md): `make chaos` runs it with CHAOS_KILLS kills; `make test`
# runs its short version (8 kills, every kind once) with every other test.
CHAOS_KILLS ?= 120

.PHONY: chaos
chaos: controlplane ## Fault harness: SIGKILL managers and apiservers under load (CHAOS_KILLS=120), print the figures.
	CHAOS_KILLS=$(CHAOS_KILLS) go test -count=1 -timeout 60m ./test/chaos/ -run TestChaos -v

# The attempt engine's simulation (docs/reliability.md): seeded random schedules of provider answers,
# crashes, clock jumps and operator verdicts, the invariants checked after every step. `make test`
# runs 2000 seeds; `make simulate SEEDS=100000` runs long; `make simulate SEED=n` replays one seed.
SEEDS ?= 20000
SEED ?= 0
SIM_STEPS ?= 120

.PHONY: simulate
simulate: ## Attempt-engine simulation: SEEDS seeds (default 20000), or replay SEED=n with its steps.
	@if [ "$(SEED)" != "0" ]; then \
		go test -count=1 ./internal/attempt/ -run '^TestSimulation$$' -v -args -seed=$(SEED) -steps=$(SIM_STEPS); \
	else \
		go test -count=1 -timeout 60m ./internal/attempt/ -run '^TestSimulation$$' -v -args -seeds=$(SEEDS) -steps=$(SIM_STEPS); \
	fi

# The controllers' simulation: the payment and payout Reconcile methods over a simulated API server,
# cache, clock and provider (docs/reliability.md). `make test` runs 200 seeds.
CTRL_SEEDS ?= 2000

.PHONY: simulate-controllers
simulate-controllers: ## Controllers' simulation: CTRL_SEEDS seeds (default 2000), or replay SEED=n with its steps.
	@if [ "$(SEED)" != "0" ]; then \
		go test -count=1 ./controllers/ -run '^TestControllersSimulation$$' -v -args -ctrl-seed=$(SEED); \
	else \
		go test -count=1 -timeout 60m ./controllers/ -run '^TestControllersSimulation$$' -v -args -ctrl-seeds=$(CTRL_SEEDS) | grep -v '^        '; \
	fi

.PHONY: test-short
test-short: ## Unit tests only (no control plane).
	go test $(GOFLAGS_TEST) $(DEV_TAGS) -short ./...

.PHONY: helm-lint
helm-lint: $(HELM) ## Lint and render the Helm chart (default values and every ci/*-values.yaml).
	$(HELM) lint --strict charts/paygate
	$(HELM) template paygate charts/paygate --namespace paygate-system > /dev/null
	@for f in charts/paygate/ci/*-values.yaml; do \
		echo "== $$f"; \
		$(HELM) lint --strict charts/paygate -f $$f && \
		$(HELM) template paygate charts/paygate --namespace paygate-system -f $$f > /dev/null || exit 1; \
	done

# The OpenAPI document the API serves must pass Redocly CLI's recommended rules with every warning
# an error (redocly.yaml). Without bin/redocly (no npm, no root) it skips, and fails when CI=true.
.PHONY: lint-openapi
lint-openapi: redocly ## Lint apiserver/openapi.json with Redocly CLI (recommended rules, warnings are errors; redocly.yaml).
	@if [ ! -x $(REDOCLY) ]; then \
		if [ "$$CI" = true ]; then echo "lint-openapi: $(REDOCLY) is missing (hack/install-redocly.sh)"; exit 1; fi; \
		echo "lint-openapi: SKIPPED: $(REDOCLY) is missing (hack/install-redocly.sh)"; exit 0; \
	fi; \
	REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true $(REDOCLY) lint --config redocly.yaml apiserver/openapi.json

.PHONY: alerts-test
alerts-test: helm promtool ## Check and unit-test the alert rules (promtool) and the Grafana dashboard's queries.
	go test -count=1 ./test/alerts/

.PHONY: prometheus-rules
prometheus-rules: $(HELM) ## Render config/prometheus/rules.yaml (kustomize) from the chart's PrometheusRule.
	{ echo '# Generated by `make prometheus-rules` from charts/paygate/rules/paygate.rules.yaml (the chart'"'"'s'; \
	  echo '# PrometheusRule with its default thresholds): do not edit. test/install checks that they agree.'; \
	  $(HELM) template paygate charts/paygate --namespace paygate-system --set prometheusRule.enabled=true \
	    --show-only templates/prometheusrule.yaml \
	  | sed -e '/^# Source:/d' -e '/^---$$/d' -e '/helm.sh\/chart:/d' -e '/app.kubernetes.io\/instance:/d' \
	    -e '/app.kubernetes.io\/version:/d' -e '/app.kubernetes.io\/managed-by:/d'; } > config/prometheus/rules.yaml

.PHONY: kustomize-lint
kustomize-lint: ## Render every kustomization (kubectl kustomize).
	@for d in config/default config/prometheus config/samples test/install/testdata/kustomize-archive; do kubectl kustomize $$d > /dev/null && echo "$$d renders"; done

##@ Build

.PHONY: build
build: ## Build the production paygate binary (manager, apiserver) into bin/.
	go build -o $(LOCALBIN)/paygate ./cmd/paygate

.PHONY: build-dev
build-dev: ## Build paygate with the local control plane (`paygate dev`) into bin/.
	go build $(DEV_TAGS) -o $(LOCALBIN)/paygate ./cmd/paygate

# `make run` builds the control plane first (hack/build-controlplane.sh says how long the first
# build takes and shows its progress), then bin/paygate, then runs it in the foreground.
.PHONY: run
run: controlplane build-dev ## Start the local control plane, demo config, controllers in the foreground (Ctrl-C stops all); state is kept in .paygate/dev. First run ~10-30 min (builds bin/), later runs seconds.
	$(LOCALBIN)/paygate dev --assets $(LOCALBIN) --state-dir .paygate/dev

.PHONY: run-clean
run-clean: controlplane build-dev ## Like run, but from nothing: the kept etcd data and archive database are removed first.
	$(LOCALBIN)/paygate dev --assets $(LOCALBIN) --state-dir .paygate/dev --clean

.PHONY: deploy
deploy: ## Install CRDs, RBAC, the manager and the apiserver into the current kubectl context.
	kubectl apply --server-side -k config/default

.PHONY: docker-build
docker-build: ## Build the container image.
	docker build -t $(IMG) .

##@ Dependencies

.PHONY: controlplane
controlplane: ## Build etcd, kube-apiserver and kube-controller-manager into bin/ with progress (skipped when present).
	@ETCD_VERSION=$(ETCD_VERSION) KUBE_VERSION=$(KUBE_VERSION) LOCALBIN=$(LOCALBIN) hack/build-controlplane.sh

.PHONY: helm
helm: $(HELM) ## Install helm into bin/.
$(HELM):
	GOBIN=$(LOCALBIN) go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

.PHONY: promtool
promtool: $(PROMTOOL) ## Build promtool (alert rule unit tests) into bin/ (hack/build-promtool.sh).
$(PROMTOOL):
	PROMETHEUS_VERSION=$(PROMETHEUS_VERSION) LOCALBIN=$(LOCALBIN) hack/build-promtool.sh

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Install controller-gen into bin/.
$(CONTROLLER_GEN):
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)

.PHONY: redocly
redocly: ## Install Redocly CLI (the OpenAPI linter) into bin/redocly (hack/install-redocly.sh; npm).
	LOCALBIN=$(LOCALBIN) hack/install-redocly.sh
