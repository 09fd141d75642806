# The README's two commands are `make generate` and `make test`.

GO ?= go
EXAMPLE := examples/catalogue

.PHONY: generate test golden bench demo vet

## generate: compile the bundled example schemas into Go
generate:
	$(GO) run ./cmd/warren generate --out $(EXAMPLE)/catalogueevents $(EXAMPLE)/events

# Packages with tests that cut broker connections (named TestDisruptive...):
# they run after the main suite, one package at a time, so that they cannot
# disturb other broker tests.
DISRUPTIVE_PKGS := $(sort $(dir $(shell grep -rl --include='*_test.go' '^func TestDisruptive' .)))

# Optional integrations are modules of their own (so the core does not
# depend on their libraries); the root ./... does not enter them.
CONTRIB_MODS := $(patsubst %/go.mod,%,$(wildcard contrib/*/go.mod))

## test: vet, the whole suite, then the tests that disrupt the broker, one at a time
test: vet
	$(GO) test ./...
	@for m in $(CONTRIB_MODS); do echo "== $$m"; (cd $$m && $(GO) test ./...) || exit 1; done
	WARREN_DISRUPTIVE=1 $(GO) test -p 1 -count=1 -v -run '^TestDisruptive' $(DISRUPTIVE_PKGS)

vet:
	$(GO) vet ./...
	@for m in $(CONTRIB_MODS); do (cd $$m && $(GO) vet ./...) || exit 1; done
	@test -z "$$(gofmt -l .)" || (echo "gofmt needed:"; gofmt -l .; exit 1)

## golden: regenerate the golden files (read the diff before committing)
golden:
	$(GO) test ./generator -update

## bench: generator and runtime benchmarks, each beside its baseline
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./generator/... ./runtime/...

## demo: run the catalogue example end to end against the local broker
demo:
	$(GO) run ./$(EXAMPLE)
