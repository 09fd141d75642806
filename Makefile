# The README's two commands are `make generate` and `make test`.

GO ?= go
EXAMPLE := examples/catalogue

.PHONY: generate test test-fresh-cache test-rabbitmq4 test-cluster golden bench gencost demo vet

## generate: compile the bundled example schemas, and the benchmarks' schema, into Go
generate:
	$(GO) run ./cmd/warren generate --out $(EXAMPLE)/catalogueevents $(EXAMPLE)/events
	$(GO) run ./cmd/warren generate --out examples/checkout/checkoutevents examples/checkout/events
	$(GO) run ./cmd/warren generate --out examples/orderlog/orderlogevents examples/orderlog/events
	$(GO) run ./cmd/warren generate --out bench/benchevents bench/events

# Packages with tests that cut broker connections (named TestDisruptive...):
# they run after the main suite, one package at a time, so that they cannot
# disturb other broker tests.
DISRUPTIVE_PKGS := $(sort $(dir $(shell grep -rl --include='*_test.go' '^func TestDisruptive' .)))

# Optional integrations are modules of their own (so the core does not
# depend on their libraries); the root ./... does not enter them. So is
# bench/, the benchmarks beside raw amqp091-go and watermill: its tests
# check that its generated package is up to date.
CONTRIB_MODS := $(patsubst %/go.mod,%,$(wildcard contrib/*/go.mod)) bench

# The Go files gofmt checks: all but bench/out, where scripts/gencost and
# scripts/bench leave what they measured (the peers' output, the floor's
# placeholder files), which is not the project's code.
GOFILES := find . -path ./bench/out -prune -o -name '*.go' -print

# The packages whose tests take longest, named first: go test starts work
# in the order packages are named, and the longest of them, started last,
# would run alone at the end while the other core idles.
MODULE := github.com/warrenbus/warren
SLOW_PKGS := $(MODULE)/runtime $(MODULE)/cmd/warren $(MODULE)/runtime/poison \
	$(MODULE)/cmd/warren/internal/console $(MODULE)/runtime/warrentest

## test: vet, the whole suite, then the tests that disrupt the broker, one at a time
# go test's own vet pass (-vet=off) would only repeat a few of the
# analyzers that vet has just run on the same packages.
test: vet
	$(GO) test -vet=off $(SLOW_PKGS) ./...
	@for m in $(CONTRIB_MODS); do echo "== $$m"; (cd $$m && $(GO) test -vet=off ./...) || exit 1; done
	WARREN_DISRUPTIVE=1 $(GO) test -vet=off -p 1 -count=1 -v -run '^TestDisruptive' $(DISRUPTIVE_PKGS)

# The tests that run the go command on modules of their own: a service
# with warren as a tool dependency, producer and consumer modules, the
# module resolver's, the schema diff's proof programs, the conformance
# suite's program. They must get what they need through the configured
# GOPROXY, as a user's go command does, and not count on the module cache
# holding it: a new machine's cache holds only what building warren
# downloaded, and a service's module graph names more (the go.mod files of
# modules that warren's dependencies need for their own tests). make test
# runs them against the machine's module cache, which earlier builds have
# filled; this runs them once more against an empty one of their own,
# removed afterwards (the go command makes its files read-only, so go clean
# -modcache removes them). The build cache stays the machine's: it holds
# compiled packages, never modules. The empty module cache is always at
# the same place (one per checkout, emptied before and after each run):
# the build cache keys a module's compiled packages by their directory, so
# a new place each run would compile every dependency (SQLite's pure-Go
# port among them) again, for the test binaries and for the go commands
# the tests run. The names are checked against go test -list, so that a
# renamed test cannot drop out unnoticed.
FRESH_CACHE_TESTS := TestGoToolSetupInAService \
	TestConsumerModuleReusesTheProducersPackage TestConsumerModuleGeneratesTheFactTypes \
	TestConsumerModuleBindingMatchesNothing TestConsumerModuleReusesAMissingPackage \
	TestImportOfAModuleNotInGoMod TestDiffBaseModuleJudgesAnUpdateForThisConsumer \
	TestResolveReplacedModule TestResolveModuleNotRequired TestResolvePathImport \
	TestResolveOutsideAModule TestResolveDownloadsARequiredModule TestDownloadFailureSaysWhy \
	TestDiffAgreesWithTheBroker TestSuite
FRESH_CACHE_PKGS := ./cmd/warren ./cmd/warren/internal/gomod ./generator/schemadiff ./generator/conformance
empty :=
space := $(empty) $(empty)
FRESH_CACHE_RUN := ^($(subst $(space),|,$(strip $(FRESH_CACHE_TESTS))))$$

## test-fresh-cache: the tests that build modules from scratch, with an empty module cache
FRESH_MODCACHE = $(or $(TMPDIR),/tmp)/warren-fresh-modcache-$(shell printf %s '$(CURDIR)' | cksum | cut -d' ' -f1)

test-fresh-cache:
	@cache='$(FRESH_MODCACHE)' && \
	empty() { if [ -d "$$cache" ]; then GOMODCACHE="$$cache" $(GO) clean -modcache; rm -rf "$$cache"; fi; } && \
	empty && mkdir -p "$$cache" && trap empty EXIT && \
	export GOMODCACHE="$$cache" && echo "== GOMODCACHE=$$cache" && \
	n=$$($(GO) test -list '$(FRESH_CACHE_RUN)' $(FRESH_CACHE_PKGS) | grep -c '^Test') && \
	if [ "$$n" != $(words $(FRESH_CACHE_TESTS)) ]; then \
		echo "FRESH_CACHE_TESTS names $(words $(FRESH_CACHE_TESTS)) tests; go test -list finds $$n of them in $(FRESH_CACHE_PKGS)"; exit 1; \
	fi && \
	$(GO) test -count=1 -run '$(FRESH_CACHE_RUN)' $(FRESH_CACHE_PKGS)

# scripts/rabbitmq4 runs RabbitMQ 4 beside the machine's broker, a single
# node and a three-node cluster; `scripts/rabbitmq4 env` prints what the
# tests need to use them (see docs/DEVELOPING.md).
RABBITMQ4 := scripts/rabbitmq4

# The packages whose tests talk to a broker: those that import
# internal/testenv. Evaluated only by the targets that use it.
TESTENV := $(MODULE)/internal/testenv
BROKER_PKGS = $(shell $(GO) list -f '{{$$p := .ImportPath}}{{range .TestImports}}{{if eq . "$(TESTENV)"}}{{$$p}} {{end}}{{end}}{{range .XTestImports}}{{if eq . "$(TESTENV)"}}{{$$p}} {{end}}{{end}}' ./... | sort -u)

# Packages with tests that stop nodes of a cluster (named TestCluster...).
CLUSTER_PKGS = $(sort $(dir $(shell grep -rl --include='*_test.go' '^func TestCluster' .)))

# Tests in the broker packages whose outcome does not depend on the broker
# that WARREN_AMQP_URL names: they talk to no broker (the guards' SQL
# stores, the go command building a service's module) or to a node of
# their own, started from the machine's installation
# (testenv.ManagementNode). Each passes with WARREN_AMQP_URL at a closed
# port. make test runs them; on the RabbitMQ 4 target they would only run
# again, unchanged. The names are checked against the test sources, so
# that a renamed test cannot linger here unnoticed.
VERSIONLESS_TESTS := TestManagementRedeliveryRate TestStatusShowsTheVersionsLiveConsumersRead \
	TestSQLiteGuardConformance TestPostgresGuardConformance TestPgxGuardConformance \
	TestGoToolSetupInAService TestConsumerModuleReusesAnImportedFactsVersions
VERSIONLESS_SKIP := ^($(subst $(space),|,$(strip $(VERSIONLESS_TESTS))))$$

# The load tests (testenv.Load) run at full size in make test; on the
# targets that run the suites again on other brokers, at a tenth: what they
# prove about size is proven once, what another broker could change shows
# at any size.
REPEAT_LOAD := 0.1

## test-rabbitmq4: the broker suites, disruptive tests included, on a RabbitMQ 4 node
# bench/ is left out: its tests check its generated package, never a broker.
# make test has vetted the same code (-vet=off).
test-rabbitmq4:
	@for t in $(VERSIONLESS_TESTS); do \
		grep -rqs --include='*_test.go' "^func $$t(" . || { echo "VERSIONLESS_TESTS: no test $$t"; exit 1; }; \
	done
	$(RABBITMQ4) up
	set -a && eval "$$($(RABBITMQ4) env)" && set +a && export WARREN_TEST_LOAD=$(REPEAT_LOAD) && \
	$(GO) test -vet=off -skip '$(VERSIONLESS_SKIP)' $(filter $(BROKER_PKGS),$(SLOW_PKGS)) $(filter-out $(SLOW_PKGS),$(BROKER_PKGS)) && \
	for m in $(filter-out bench,$(CONTRIB_MODS)); do echo "== $$m"; (cd $$m && $(GO) test -vet=off ./...) || exit 1; done && \
	WARREN_DISRUPTIVE=1 $(GO) test -vet=off -p 1 -count=1 -v -run '^TestDisruptive' -skip '$(OWN_NODE_TESTS)' $(DISRUPTIVE_PKGS)

# Disruptive tests that start a broker node of their own from the machine's
# installation (runtime/node_test.go), whatever WARREN_AMQP_URL says: make
# test runs them, and on the RabbitMQ 4 target they would only run again.
OWN_NODE_TESTS := ^(TestDisruptiveBrokerRestartMidStream|TestDisruptiveBrokerRestartWhileDelayedFactsWait|TestDisruptiveResourceAlarmBlocksPublishes|TestDisruptiveDeclareWithoutHashExchangePlugin|TestDisruptiveBrokerRestartDuringABatch)$$

## test-cluster: the node-loss tests, on a three-node RabbitMQ 4 cluster
test-cluster:
	$(RABBITMQ4) cluster-up
	set -a && eval "$$($(RABBITMQ4) env cluster)" && set +a && export WARREN_TEST_LOAD=$(REPEAT_LOAD) && \
	$(GO) test -vet=off -p 1 -count=1 -v -run '^TestCluster' $(CLUSTER_PKGS)

vet:
	$(GO) vet ./...
	@for m in $(CONTRIB_MODS); do (cd $$m && $(GO) vet ./...) || exit 1; done
	@test -z "$$($(GOFILES) | xargs gofmt -l)" || (echo "gofmt needed:"; $(GOFILES) | xargs gofmt -l; exit 1)

## golden: regenerate the golden files (read the diff before committing)
golden:
	$(GO) test ./generator -update

## bench: what users run, beside raw amqp091-go and watermill, in interleaved rounds (scripts/bench)
bench:
	scripts/bench

## gencost: go build time, lines per fact and generation time of generated code, beside asyncapi-codegen and go-jsonschema (scripts/gencost)
gencost:
	scripts/gencost

## demo: run the catalogue example end to end against the local broker
demo:
	$(GO) run ./$(EXAMPLE)
