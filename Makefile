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

## test: vet, the whole suite (the tests that build modules from scratch with an empty module cache), then the tests that disrupt the broker, one at a time
# go test's own vet pass (-vet=off) would only repeat a few of the
# analyzers that vet has just run on the same packages. The tests that
# build modules from scratch run once, with an empty module cache
# (test-fresh-cache, below), not also with the machine's.
test: vet
	$(GO) test -vet=off -skip '$(FRESH_CACHE_RUN)' $(SLOW_PKGS) ./...
	@$(MAKE) --no-print-directory test-fresh-cache
	@for m in $(CONTRIB_MODS); do echo "== $$m"; (cd $$m && $(GO) test -vet=off ./...) || exit 1; done
	WARREN_DISRUPTIVE=1 $(GO) test -vet=off -p 1 -count=1 -v -run '^TestDisruptive' $(DISRUPTIVE_PKGS)

# The test targets compile with -trimpath: with it, the build cache keys a
# package by its content and not by the directory it was read from. A test
# that builds a module in a temporary directory (a service, a producer and
# a consumer, the conformance suite's program) then finds the packages
# compiled since they last changed, and the tests run with an empty module
# cache find the dependencies that the rest of the suite compiled from the
# machine's. (Without it, each such build compiled warren's dependencies
# again, the pure-Go SQLite among them: test-fresh-cache took 199 s and 278
# s of CPU on a quiet machine, with it 62 s and 81 s.) What is compiled is
# the same; file names in stack traces start at the module path.
vet test test-fresh-cache test-rabbitmq4 test-cluster: export GOFLAGS := $(strip $(filter-out -trimpath,$(GOFLAGS)) -trimpath)

# The tests that run the go command on modules of their own: a service
# with warren as a tool dependency, producer and consumer modules, the
# module resolver's, the schema diff's proof programs, the conformance
# suite's program. They must get what they need through the configured
# GOPROXY, as a user's go command does, and not count on the module cache
# holding it: a new machine's cache holds only what building warren
# downloaded, and a service's module graph names more (the go.mod files of
# modules that warren's dependencies need for their own tests). So make
# test runs them with an empty module cache of their own, never with the
# machine's, which earlier builds have filled; it is removed afterwards
# (the go command makes its files read-only, so go clean -modcache removes
# them). The build cache stays the machine's: it holds compiled packages,
# never modules. The empty module cache is one per checkout, so that two
# checkouts' runs do not empty each other's. The names are checked against
# go test -list, so that a renamed test cannot drop out unnoticed.
FRESH_CACHE_TESTS := TestGoToolSetupInAService \
	TestConsumerModuleReusesTheProducersPackage TestConsumerModuleGeneratesTheFactTypes \
	TestConsumerModuleBindingMatchesNothing TestConsumerModuleReusesAMissingPackage \
	TestImportOfAModuleNotInGoMod TestDiffBaseModuleJudgesAnUpdateForThisConsumer \
	TestResolveReplacedModule TestResolveModuleNotRequired TestResolvePathImport \
	TestResolveOutsideAModule TestResolveDownloadsARequiredModule TestDownloadFailureSaysWhy \
	TestDiffAgreesWithTheBroker TestSuite TestConsumerModuleReusesAnImportedFactsVersions
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
	for t in $(FRESH_CACHE_TESTS); do \
		[ "$$(grep -rh --include='*_test.go' "^func $$t(" . | wc -l)" = 1 ] || { echo "FRESH_CACHE_TESTS: $$t is not the name of exactly one test (make test skips it by name)"; exit 1; }; \
	done && \
	$(GO) test -vet=off -count=1 -run '$(FRESH_CACHE_RUN)' $(FRESH_CACHE_PKGS)

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
# stores) or to a node of their own, started from the machine's
# installation (testenv.ManagementNode). Each passes with WARREN_AMQP_URL at a closed
# port. make test runs them; on the RabbitMQ 4 target they would only run
# again, unchanged. The names are checked against the test sources, so
# that a renamed test cannot linger here unnoticed.
VERSIONLESS_TESTS := TestManagementRedeliveryRate TestStatusShowsTheVersionsLiveConsumersRead \
	TestSQLiteGuardConformance TestPostgresGuardConformance TestPgxGuardConformance

# Tests whose subject no broker version changes, though they use the
# broker on the way: the tests that build modules with the go command
# (FRESH_CACHE_TESTS; a producer's module publishes and a consumer's
# handles, as the runtime's own tests do on every broker), and the
# console's browser tests, which check how the page draws what the
# console's API gives (the API's own tests, TestConsoleStreamLag and
# TestConsoleSuperStreamLag and the console package's, run on every
# broker).
BROWSER_TESTS := TestConsoleInTheBrowser TestConsoleStreamLagInTheBrowser TestConsoleSuperStreamLagInTheBrowser
RERUN_SKIP := ^($(subst $(space),|,$(strip $(sort $(VERSIONLESS_TESTS) $(FRESH_CACHE_TESTS) $(BROWSER_TESTS)))))$$

# The load tests (testenv.Load) run at full size in make test; on the
# targets that run the suites again on other brokers, at a tenth: what they
# prove about size is proven once, what another broker could change shows
# at any size.
REPEAT_LOAD := 0.1

## test-rabbitmq4: the broker suites, disruptive tests included, on a RabbitMQ 4 node
# bench/ is left out: its tests check its generated package, never a broker.
# make test has vetted the same code (-vet=off).
test-rabbitmq4:
	@for t in $(VERSIONLESS_TESTS) $(BROWSER_TESTS); do \
		grep -rqs --include='*_test.go' "^func $$t(" . || { echo "VERSIONLESS_TESTS or BROWSER_TESTS: no test $$t"; exit 1; }; \
	done
	$(RABBITMQ4) up
	set -a && eval "$$($(RABBITMQ4) env)" && set +a && export WARREN_TEST_LOAD=$(REPEAT_LOAD) && \
	$(GO) test -vet=off -skip '$(RERUN_SKIP)' $(filter $(BROKER_PKGS),$(SLOW_PKGS)) $(filter-out $(SLOW_PKGS),$(BROKER_PKGS)) && \
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
