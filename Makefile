# The README's two commands: `make run` starts the daemon, `make test` runs
# the quick tests. Each installs what it needs that is missing. `make
# test-all` runs the whole matrix (.ci/run).

GO      ?= go
BIN     := $(CURDIR)/bin
TOOLS   := $(CURDIR)/.tools/bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/testdbd/testdbd.Version=$(VERSION)
ARGS    ?= --warm 1
K8S     ?= 1

# Pinned code generators (make generate). Each is installed on its own so
# their dependencies never pull each other's versions.
BUF_VERSION             := v1.75.0
PROTOC_GEN_GO_VERSION   := v1.36.12
PROTOC_GEN_GRPC_VERSION := v1.6.2
GATEWAY_VERSION         := v2.33.0
GOLANGCI_VERSION        := v2.15.0
GOLANGCI                := $(CURDIR)/.tools/golangci-lint-$(GOLANGCI_VERSION)/golangci-lint

.PHONY: run test build deps deps-examples deps-browser lint generate check-generated tools clean property

## run: start the daemon on 127.0.0.1:8080 (REST) and :9090 (gRPC); ARGS adds flags
run: deps build
	$(BIN)/testdbd serve $(ARGS)

## test: the quick tier, at most 10 minutes here with warm caches: lint,
## the generated code's freshness, and go test -short -race of this module
## and the Go SDK: unit tests and the integration tests on the native
## MariaDB server (which it installs, and requires: TESTDBD_REQUIRE_NATIVE).
## Docker, Kubernetes, browser, package and example tests skip, saying
## that make test-all runs them.
test: deps lint check-generated
	TESTDBD_REQUIRE_NATIVE=1 $(GO) test -short -race -count=1 -timeout 20m ./...
	cd client && $(GO) test -short -race -count=1 -timeout 10m ./...

## test-all: the whole matrix, what .ci/run runs: cross builds, every image,
## every test with the race detector over the engine matrix (native
## MariaDB, Docker MariaDB 10.11, MariaDB 11.8 and MySQL 9.7;
## TESTDBD_ENGINES=mysql-9.7,... runs some cells only, see internal/testenv)
## and the local Kubernetes cluster (started, the image loaded, and stopped
## afterwards even when tests fail, by scripts/k8s/with-cluster.sh; the
## first run builds it, 10-20 min; K8S=0 leaves it out: its tests then
## skip), the dashboard in Chromium, the Python and PHP packages, the
## examples, the Go SDK's tests and the benchmark's quick run (client/ and
## bench/ are modules of their own, which ./... does not include; they run
## beside the root module's tests: scripts/test-all.sh)
.PHONY: test-all
test-all: deps deps-examples deps-browser lint check-generated cross images image-testdbd
	@GO=$(GO) K8S=$(K8S) IMAGE=$(IMAGE) scripts/test-all.sh

## cross: the daemon and CLI build for Linux and macOS on amd64 and arm64,
## and every package of this module for macOS (the native provider is
## Linux-only; on macOS the daemon runs --provider docker)
.PHONY: cross
cross:
	GOOS=linux GOARCH=arm64 $(GO) build -o /dev/null ./cmd/testdbd
	GOOS=darwin GOARCH=arm64 $(GO) build ./...
	GOOS=darwin GOARCH=amd64 $(GO) build -o /dev/null ./cmd/testdbd

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/testdbd ./cmd/testdbd

deps:
	@scripts/install-deps.sh server

# php-cli, php-mysql, python3-pymysql and mariadb-dump, which the examples' test runs
# (make test-all), phpunit, php-laravel-framework and php-faker (examples/laravel);
# and what the tests of the Python and PHP packages in clients/ use (pytest,
# pytest-xdist, Django, pytest-django, python3-venv, phpunit, composer)
deps-examples:
	@scripts/install-deps.sh examples clients

# chromium, which the dashboard's test drives headless
deps-browser:
	@scripts/install-deps.sh browser

## lint: golangci-lint (pinned; the linters are chosen in .golangci.yml:
## gofmt, go vet and bug-finding checks) and a tidy go.mod
lint: $(GOLANGCI)
	$(GOLANGCI) run ./...
	cd client && $(GOLANGCI) run ./...
	cd bench && $(GOLANGCI) run ./...
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	@cd client && $(GO) mod tidy -diff >/dev/null || { echo "client/go.mod or client/go.sum is not tidy: run go mod tidy in client/"; exit 1; }
	@cd bench && $(GO) mod tidy -diff >/dev/null || { echo "bench/go.mod or bench/go.sum is not tidy: run go mod tidy in bench/"; exit 1; }

$(GOLANGCI):
	@echo "building golangci-lint $(GOLANGCI_VERSION) (a few minutes, once)"
	GOBIN=$(dir $(GOLANGCI)) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)

tools: $(TOOLS)/buf $(TOOLS)/protoc-gen-go $(TOOLS)/protoc-gen-go-grpc $(TOOLS)/protoc-gen-grpc-gateway $(TOOLS)/protoc-gen-openapiv2

$(TOOLS)/buf:
	@echo "building buf $(BUF_VERSION) (about two minutes, once)"
	GOBIN=$(TOOLS) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
$(TOOLS)/protoc-gen-go:
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
$(TOOLS)/protoc-gen-go-grpc:
	GOBIN=$(TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GRPC_VERSION)
$(TOOLS)/protoc-gen-grpc-gateway:
	GOBIN=$(TOOLS) $(GO) install github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-grpc-gateway@$(GATEWAY_VERSION)
$(TOOLS)/protoc-gen-openapiv2:
	GOBIN=$(TOOLS) $(GO) install github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2@$(GATEWAY_VERSION)

## generate: regenerate api/ from proto/ with the pinned plugins, and docs/rest-api.md
generate: tools
	PATH=$(TOOLS):$$PATH buf lint
	rm -f api/testdb/v1/*.go api/openapi/*.json
	PATH=$(TOOLS):$$PATH buf generate
	$(GO) run ./tools/restdoc -o docs/rest-api.md

## check-generated: fail when the committed api/ differs from what proto/ generates
check-generated: tools
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	PATH=$(TOOLS):$$PATH buf lint && \
	PATH=$(TOOLS):$$PATH buf generate -o $$tmp && \
	diff -r $$tmp/api/testdb api/testdb && diff $$tmp/api/openapi/testdb.swagger.json api/openapi/testdb.swagger.json \
	|| { echo "api/ is stale: run make generate and commit the result"; exit 1; }

clean:
	rm -rf $(BIN)

## image: build the MariaDB image --provider docker runs by default, from the
## host's Debian packages with no registry (skipped when no Docker engine runs)
IMAGE ?= testdbd/mariadb:10.11-local
.PHONY: image image-mariadb-10.11 image-mysql-9.7 image-mariadb-11.8 images
image:
	@scripts/build-image.sh $(IMAGE)
image-mariadb-10.11: image

## image-mysql-9.7, image-mariadb-11.8: server images debootstrapped from
## Debian sid (MySQL, testdbd/mysql:9.7-local) and trixie (MariaDB,
## testdbd/mariadb:11.8-local), no registry needed; about a minute and a half
## the first time, a few seconds when nothing changed. The tag follows the
## version the suite has: a newer MySQL in sid is built as its own
## major.minor, with a warning.
image-mysql-9.7:
	@scripts/build-suite-image.sh mysql sid 9.7
image-mariadb-11.8:
	@scripts/build-suite-image.sh mariadb trixie 11.8

## image-testdbd: the all-in-one image testdbd/testdbd (the daemon and the
## host's MariaDB; no registry needed): README's "Docker, Compose and CI"
.PHONY: image-testdbd
image-testdbd:
	@scripts/build-daemon-image.sh

## images: every image above
images: image image-mysql-9.7 image-mariadb-11.8 image-testdbd

## property: the long randomized proof that every strategy resets to exactly
## the template, each engine cell a go test of its own (N workloads per
## strategy, default 2500; TESTDBD_ENGINES picks cells; scripts/property.sh)
property: deps image image-mysql-9.7 image-mariadb-11.8
	@GO=$(GO) scripts/property.sh

## bench: the benchmark (bench/, a module of its own; 5-8 minutes on 2
## cores, after the images): testdbd's strategies beside the conventional
## resets, the engines, scaling, big tables and cold start; writes
## docs/benchmarks.json (raw samples) and docs/benchmarks.md (the report).
## `cd bench && go run . --quick --out DIR` is the two-minute check.
.PHONY: bench
bench: deps images
	cd bench && $(GO) run . --out ../docs $(BENCH_ARGS)

## k8s-up: build (once, into .tools/k8s) and start a single-node Kubernetes
## cluster on loopback for tests; KUBECONFIG=.tools/k8s/admin.kubeconfig.
## k8s-down stops it and puts the host back as it was. docs/kubernetes-local.md
.PHONY: k8s-up k8s-down k8s-load-image k8s-smoke
k8s-up:
	@scripts/k8s/up.sh

k8s-down:
	@scripts/k8s/down.sh

## k8s-load-image: load a local Docker image into the cluster (no registry): IMAGE=...
k8s-load-image:
	@scripts/k8s/load-image.sh $(IMAGE)

## k8s-smoke: a MariaDB pod on a memory emptyDir must get Ready and answer over TCP
k8s-smoke: k8s-up image
	@scripts/k8s/load-image.sh $(IMAGE)
	@scripts/k8s/smoke.sh $(IMAGE)
