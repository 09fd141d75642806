# The README's two commands are `make generate` and `make test`.

GO ?= go
EXAMPLE := examples/catalogue

.PHONY: generate test test-rabbitmq4 test-cluster golden bench gencost demo vet

## generate: compile the bundled example schemas, and the benchmarks' schema, into Go
generate:
	$(GO) run ./cmd/warren generate --out $(EXAMPLE)/catalogueevents $(EXAMPLE)/events
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

## test: vet, the whole suite, then the tests that disrupt the broker, one at a time
test: vet
	$(GO) test ./...
	@for m in $(CONTRIB_MODS); do echo "== $$m"; (cd $$m && $(GO) test ./...) || exit 1; done
	WARREN_DISRUPTIVE=1 $(GO) test -p 1 -count=1 -v -run '^TestDisruptive' $(DISRUPTIVE_PKGS)

# scripts/rabbitmq4 runs RabbitMQ 4 beside the machine's broker, a single
# node and a three-node cluster; `scripts/rabbitmq4 env` prints what the
# tests need to use them (see docs/DEVELOPING.md).
RABBITMQ4 := scripts/rabbitmq4

# The packages whose tests talk to a broker: those that import
# internal/testenv. Evaluated only by the targets that use it.
TESTENV := github.com/warrenbus/warren/internal/testenv
BROKER_PKGS = $(shell $(GO) list -f '{{$$p := .ImportPath}}{{range .TestImports}}{{if eq . "$(TESTENV)"}}{{$$p}} {{end}}{{end}}{{range .XTestImports}}{{if eq . "$(TESTENV)"}}{{$$p}} {{end}}{{end}}' ./... | sort -u)

# Packages with tests that stop nodes of a cluster (named TestCluster...).
CLUSTER_PKGS = $(sort $(dir $(shell grep -rl --include='*_test.go' '^func TestCluster' .)))

## test-rabbitmq4: the broker suites, disruptive tests included, on a RabbitMQ 4 node
test-rabbitmq4:
	$(RABBITMQ4) up
	set -a && eval "$$($(RABBITMQ4) env)" && set +a && \
	$(GO) test $(BROKER_PKGS) && \
	for m in $(CONTRIB_MODS); do echo "== $$m"; (cd $$m && $(GO) test ./...) || exit 1; done && \
	WARREN_DISRUPTIVE=1 $(GO) test -p 1 -count=1 -v -run '^TestDisruptive' -skip '$(OWN_NODE_TESTS)' $(DISRUPTIVE_PKGS)

# Disruptive tests that start a broker node of their own from the machine's
# installation (runtime/node_test.go), whatever WARREN_AMQP_URL says: make
# test runs them, and on the RabbitMQ 4 target they would only run again.
OWN_NODE_TESTS := ^(TestDisruptiveBrokerRestartMidStream|TestDisruptiveResourceAlarmBlocksPublishes|TestDisruptiveDeclareWithoutHashExchangePlugin)$$

## test-cluster: the node-loss tests, on a three-node RabbitMQ 4 cluster
test-cluster:
	$(RABBITMQ4) cluster-up
	set -a && eval "$$($(RABBITMQ4) env cluster)" && set +a && \
	$(GO) test -p 1 -count=1 -v -run '^TestCluster' $(CLUSTER_PKGS)

vet:
	$(GO) vet ./...
	@for m in $(CONTRIB_MODS); do (cd $$m && $(GO) vet ./...) || exit 1; done
	@test -z "$$(gofmt -l .)" || (echo "gofmt needed:"; gofmt -l .; exit 1)

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
