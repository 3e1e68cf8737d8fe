# Rental Platform API. `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

MODULES := api clients/go cli libs embedded gateway verification-svc collections-svc payments-svc webhooks-svc deploy/local deploy/compose deploy/k8s
PACKAGES := $(addprefix ./,$(addsuffix /...,$(MODULES)))
# The end-to-end package first: go test starts packages in the order given, and that one is the
# suite's long pole (320–420 s on the machines of 2026-11-30, much of it waiting on the
# platforms it starts), so every other package's tests run beside it instead of before it
# (README.md, "Tests").
TEST_PACKAGES := ./deploy/local/e2e $(filter-out ./deploy/local/...,$(PACKAGES)) ./deploy/local/...
# Tests of several packages run in parallel; the end-to-end tests build and start the whole stack.
TEST_FLAGS ?= -race -count=1 -timeout 25m

# Images (deploy/images): IMAGE_PREFIX + program, tagged IMAGE_TAG. compose.yaml reads the same
# two variables; deploy/k8s names rentalplatform/<program>:dev and its overlays retag.
IMAGE_PREFIX ?= rentalplatform/
IMAGE_TAG ?= dev
# Docker Compose v2, built from its Go module (deploy/compose/tools, outside go.work); the
# version is the one its go.mod requires.
COMPOSE_VERSION := $(shell awk '$$1=="require" && $$2=="github.com/docker/compose/v2" {print $$3}' deploy/compose/tools/go.mod)

.PHONY: help run test drills bench soak lint fuzz tidy images compose-tool compose-test k8s generate npm-api npm-ts

help: ## Show this help
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

# The launcher is built and exec'd rather than `go run`, so Ctrl-C reaches it directly and a
# clean stop exits 0 (`go run` reports any interrupt as a failure).
run: ## Build and start the whole platform on this machine (embedded MongoDB-compatible store and Redis unless MONGODB_URI / REDIS_URL are set); also builds the CLI, bin/rental
	@go build -o bin/rental-local ./deploy/local && go build -o bin/rental ./cli/cmd/rental && exec ./bin/rental-local

# The end-to-end suite checks every exchange against the API's contract and writes which
# operations and statuses it exercised to bin/contract-coverage.txt, printed after the run.
test: ## Run every module's tests with -race (uses REDIS_URL / MONGODB_URI when set, else embedded ones), the drills in their short form; prints the contract coverage of the end-to-end suite and the drills' figures
	@mkdir -p bin && rm -f bin/contract-coverage.txt bin/drills.txt
	E2E_CONTRACT_REPORT=$(CURDIR)/bin/contract-coverage.txt DRILLS_REPORT=$(CURDIR)/bin/drills.txt go test $(TEST_FLAGS) $(TEST_PACKAGES); status=$$?; \
	  if [ -f bin/contract-coverage.txt ]; then echo; cat bin/contract-coverage.txt; fi; \
	  if [ -f bin/drills.txt ]; then echo; cat bin/drills.txt; fi; exit $$status

# The drills (deploy/local/e2e, Test…Drill…) in their full form; `make test` runs their short
# form. Each prints what it did and found, and one line of figures (requests, faults, lost,
# doubled) collected in bin/drills.txt and printed at the end. Two at a time: each starts a
# platform of its own, and the full loads want the machine.
DRILLS_FLAGS ?=
drills: ## Fault drills at full size (payments-svc and webhooks-svc killed, Redis flushed and unreachable, the store cut mid-write, hostile receivers; docs/operations.md#drills-make-drills); about 15 minutes; DRILLS_FLAGS='-run TestDrillRedisUnreachable' for one
	@mkdir -p bin && rm -f bin/drills.txt
	DRILLS=full DRILLS_REPORT=$(CURDIR)/bin/drills.txt go test -race -count=1 -timeout 60m -parallel 2 -v -run '^TestDrill' $(DRILLS_FLAGS) ./deploy/local/e2e/; status=$$?; \
	  if [ -f bin/drills.txt ]; then echo; cat bin/drills.txt; fi; exit $$status

# BENCH_FLAGS are the bench driver's (go run ./deploy/local/cmd/bench -h): make bench BENCH_FLAGS='-only gateway'.
BENCH_FLAGS ?=
bench: ## Start the platform and print load and latency figures (the edge: gateway vs nginx and HAProxy configured as API gateways, nginx proxying and a bare Fiber proxy, allocations per request; gateway vs direct; event to delivery; verification sessions: create latency, expiry, list by email; payments: collection rate, create latency, scheduled retries' memory, list by status over 10,000 requests; collections: two-filter list over 10,000 cases, concurrent uploads and memory; beside each rate, CPU per unit of work by program, embedded stores (a process of their own here) and load generator). One section: make bench BENCH_FLAGS='-only gateway'
	go run ./deploy/local/cmd/bench $(BENCH_FLAGS)

# SOAK_FLAGS are the soak driver's (go run ./deploy/local/cmd/soak -h): make soak SOAK_FLAGS='-duration 30m -rate 20'.
# It exits 1 when a target is missed.
SOAK_FLAGS ?=
soak: ## Start the platform and run a steady mixed load through the gateway (10 min, half the measured capacity): per minute errors, p50/p99, deliveries, each program's RSS and goroutines; PASS/FAIL on the targets (0 errors, p99 and memory flat after warm-up); plots in bin/soak
	go run ./deploy/local/cmd/soak $(SOAK_FLAGS)

lint: npm-api ## gofmt, go vet, staticcheck when installed, and Redocly CLI on the API's OpenAPI documents
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet $(PACKAGES)
	@if command -v staticcheck >/dev/null; then staticcheck $(PACKAGES); else echo "staticcheck not installed (go install honnef.co/go/tools/cmd/staticcheck@latest); skipped"; fi
	cd api && npx --no-install redocly lint openapi.yaml admin.openapi.yaml

# The contract's npm tools (Redocly CLI), pinned by api/package-lock.json; installed when missing
# or when the lockfile changed.
npm-api: api/node_modules/.package-lock.json
api/node_modules/.package-lock.json: api/package.json api/package-lock.json
	cd api && npm ci --no-audit --no-fund --loglevel=error

# The TypeScript client's npm packages, pinned by its lockfile (its test installs them too).
npm-ts: clients/typescript/node_modules/.package-lock.json
clients/typescript/node_modules/.package-lock.json: clients/typescript/package.json clients/typescript/package-lock.json
	cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error

# oapi-codegen's version: the Go client's generator.
OAPI_CODEGEN := github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2

generate: npm-api npm-ts ## Regenerate everything made from the API contract's sources (api/src): the OpenAPI documents, the reference page, the Go and TypeScript clients; CI fails when the checked-in output is stale
	go run ./api/cmd/apigen -root api
	cd api && node reference.mjs
	cd clients/go && go run $(OAPI_CODEGEN) -config oapi-codegen.yaml ../../api/openapi.yaml
	cd clients/typescript && npx --no-install openapi-typescript ../../api/openapi.yaml --output src/schema.d.ts

fuzz: ## Fuzz the gateway's listener (60 s), the request parsers (30 s each, collections' upload form and file sniffing included) and the shared validation rules (10 s each)
	go test -run '^$$' -fuzz FuzzDecode -fuzztime 30s ./libs/jsonbody
	go test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 30s ./libs/jsonbody
	go test -run '^$$' -fuzz FuzzParseQuery -fuzztime 30s ./libs/request
	go test -run '^$$' -fuzz FuzzListener -fuzztime 60s ./gateway
	go test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./libs/listing
	go test -run '^$$' -fuzz FuzzGatedWrite -fuzztime 30s ./embedded/mongostore
	go test -run '^$$' -fuzz FuzzMetadataEntry -fuzztime 10s ./libs/validate
	go test -run '^$$' -fuzz FuzzCurrency -fuzztime 10s ./libs/validate
	go test -run '^$$' -fuzz FuzzCountry -fuzztime 10s ./libs/validate
	go test -run '^$$' -fuzz FuzzPhone -fuzztime 10s ./libs/validate
	go test -run '^$$' -fuzz FuzzDate -fuzztime 10s ./libs/validate
	go test -run '^$$' -fuzz FuzzEmail -fuzztime 10s ./libs/validate
	go test -run '^$$' -fuzz FuzzText -fuzztime 10s ./libs/validate
	go test -run '^$$' -fuzz FuzzParseHTTPSURL -fuzztime 10s ./libs/validate
	go test -run '^$$' -fuzz FuzzReadForm -fuzztime 30s ./collections-svc/internal/ports/http
	go test -run '^$$' -fuzz '^FuzzSniff$$' -fuzztime 30s ./collections-svc/internal/domain
	go test -run '^$$' -fuzz FuzzCleanFilename -fuzztime 10s ./collections-svc/internal/domain
	go test -run '^$$' -fuzz FuzzParseReference -fuzztime 10s ./collections-svc/internal/domain

images: ## Build the image of every program, FROM scratch (static, non-root, CA certificates, HEALTHCHECK), on the engine DOCKER_HOST names; prints their sizes
	IMAGE_PREFIX=$(IMAGE_PREFIX) IMAGE_TAG=$(IMAGE_TAG) deploy/images/build.sh

compose-tool: bin/docker-compose ## Build Docker Compose v2 from its Go module into bin/docker-compose (what compose-test runs)

bin/docker-compose: deploy/compose/tools/go.mod deploy/compose/tools/go.sum
	cd deploy/compose/tools && GOWORK=off CGO_ENABLED=0 go build -trimpath \
	  -ldflags '-s -w -X github.com/docker/compose/v2/internal.Version=$(COMPOSE_VERSION)' \
	  -o $(CURDIR)/bin/docker-compose github.com/docker/compose/v2/cmd

compose-test: bin/docker-compose ## Run deploy/compose for real: Docker engine (installed and started when missing), images, up, the README walkthrough, a killed container, down -v
	deploy/compose/test.sh

OVERLAY ?= dev
k8s: ## Print deploy/k8s/overlays/$(OVERLAY) as YAML, images IMAGE_PREFIX+program:IMAGE_TAG (kubectl apply -f -); make test checks both overlays
	@go run ./deploy/k8s/cmd/render -root deploy/k8s -overlay $(OVERLAY) -image-prefix '$(IMAGE_PREFIX)' -image-tag '$(IMAGE_TAG)'

tidy: ## go mod tidy in every module
	@for m in $(MODULES); do (cd $$m && go mod tidy) || exit 1; done
