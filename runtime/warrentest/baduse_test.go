package warrentest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	warren "github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

// recorder is a testing.TB that keeps what the bus reports instead of
// failing the real test, so that the reports themselves can be checked.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
	fatal  string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.fatal = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Failed() bool { return len(r.errors) > 0 || r.fatal != "" }

// fatalOf runs f on a goroutine of its own, as t.Fatal needs, and returns
// the fatal report it ended with.
func fatalOf(r *recorder, f func()) string {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fatal
}

type item struct {
	SKU string `json:"sku"`
}

var factItem = warren.Fact{RoutingKey: "catalogue.item.updated", Version: 1}

func indexer(t *testing.T) topology.Topology {
	top, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "search-indexer", Bindings: []string{"catalogue.#"}, MaxAttempts: 2, Backoff: []time.Duration{time.Minute}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return top
}

func wantReport(t *testing.T, got string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(got, p) {
			t.Errorf("report %q lacks %q", got, p)
		}
	}
}

func TestBadUseIsExplained(t *testing.T) {
	r := &recorder{TB: t}
	b := New(r, indexer(t))
	Register[item](b, factItem)

	got := fatalOf(r, func() { Published[struct{ X int }](b) })
	wantReport(t, got, "struct { X int } is not a fact type registered with the bus", "warrentest.item")

	got = fatalOf(r, func() { b.Calls("search-indexr") })
	wantReport(t, got, `no consumer or responder "search-indexr"`, "search-indexer")

	got = fatalOf(r, func() { b.Advance(time.Second) })
	wantReport(t, got, "Advance needs virtual time")

	got = fatalOf(r, func() { b.Waiting("nope") })
	wantReport(t, got, `no queue "nope"`, "search-indexer.poison")
}

// A Want that fails says what it counted, so that one of several Want
// calls in a row is told apart from the others by its message.
func TestWantSaysWhatItCounted(t *testing.T) {
	r := &recorder{TB: t}
	b := New(r, indexer(t))
	Register[item](b, factItem)
	for _, want := range []func(){
		func() { b.WantHandled("search-indexer", 1) },
		func() { b.WantRetried("search-indexer", 2) },
		func() { b.WantDeferred("search-indexer", 3) },
		func() { b.WantPoisoned("search-indexer", 4) },
		func() { b.WantDuplicates("search-indexer", 5) },
	} {
		want()
	}
	if len(r.errors) != 5 {
		t.Fatalf("%d reports, want 5: %q", len(r.errors), r.errors)
	}
	for i, part := range []string{"want 1 fact handled, got 0", "want 2 handler calls failed and retried, got 0", "want 3 handler calls deferred, got 0", "want 4 facts poisoned, got 0", "want 5 deliveries skipped as a duplicate, got 0"} {
		wantReport(t, r.errors[i], "warrentest: search-indexer: "+part)
	}
}

func TestAdvanceNamesTheBlockedHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{TB: t}
		b := newBus(r, indexer(t), true, nil)
		defer b.teardown()
		Register[item](b, factItem)
		release := make(chan struct{})
		c, err := warren.NewConsumer(b.Conn(), b.Topology().Consumers[0], []warren.Route{
			warren.Handle(factItem, func(ctx context.Context, _ warren.Delivery, _ item) error {
				<-release
				return nil
			}),
		})
		b.Start("search-indexer", c, err)
		Publish(b, factItem, item{SKU: "BOOK-7"})
		got := fatalOf(r, func() { b.Advance(time.Minute) })
		wantReport(t, got, "Advance(1m0s) while a handler is blocked", `the handler of "search-indexer" on catalogue.item.updated`, `"sku":"BOOK-7"`)
		close(release)
		b.Idle()
		if n := len(b.Handled("search-indexer")); n != 1 {
			t.Errorf("handled %d after the release, want 1", n)
		}
	})
}

func TestEndingWithADeliveryInFlightFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{TB: t}
		b := newBus(r, indexer(t), true, nil)
		Register[item](b, factItem)
		c, err := warren.NewConsumer(b.Conn(), b.Topology().Consumers[0], []warren.Route{
			warren.Handle(factItem, func(ctx context.Context, _ warren.Delivery, _ item) error {
				<-ctx.Done()
				return ctx.Err()
			}),
		})
		b.Start("search-indexer", c, err)
		Publish(b, factItem, item{SKU: "BOOK-8"})
		b.teardown()
		if len(r.errors) == 0 {
			t.Fatal("the bus ended with a handler running and reported nothing")
		}
		wantReport(t, r.errors[0], "the test ended with deliveries in flight", `the handler of "search-indexer"`, "queue search-indexer: 1 delivery not settled")
	})
}

func TestStartReportsAConstructorError(t *testing.T) {
	r := &recorder{TB: t}
	b := New(r, indexer(t))
	got := fatalOf(r, func() { b.Start("search-indexer", nil, fmt.Errorf("nil handler")) })
	wantReport(t, got, "start search-indexer: nil handler")
}

func TestGoldenReportsADifferenceAndAMissingFile(t *testing.T) {
	t.Chdir(t.TempDir())
	r := &recorder{TB: t}
	b := New(r, indexer(t))
	Register[item](b, factItem)
	Publish(b, factItem, item{SKU: "BOOK-9"})

	got := fatalOf(r, func() { b.Golden("scenario") })
	wantReport(t, got, "testdata/scenario.golden.json does not exist", "-warrentest.update")

	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("testdata/scenario.golden.json", []byte("[]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fatalOf(r, func() { b.Golden("scenario") })
	if len(r.errors) != 1 {
		t.Fatalf("errors = %q, want one reporting the difference", r.errors)
	}
	wantReport(t, r.errors[0], "differ from testdata/scenario.golden.json", `"sku": "BOOK-9"`)
	r.errors = nil
}
