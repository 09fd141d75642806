package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	cat "github.com/warrenbus/warren/examples/catalogue/catalogueevents"
	"github.com/warrenbus/warren/internal/testenv"
)

// TestWalkthrough runs the whole service against the broker, in a vhost of
// its own so that it cannot meet a `make demo` running beside it.
func TestWalkthrough(t *testing.T) {
	url := testenv.VHost(t, "warren-catalogue")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	entries, err := run(ctx, url, &out, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Logf("output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}

	// Who handled what, and on which attempt: every fact once by the
	// consumer bound to it, the item update after one transient failure.
	type call struct {
		Consumer, RoutingKey string
		Attempt              int
		Failed               bool
	}
	var got []call
	byKey := map[string]string{} // routing key -> message id
	for _, e := range entries {
		got = append(got, call{e.Consumer, e.RoutingKey, e.Attempt, e.Err != nil})
		if prev, ok := byKey[e.RoutingKey]; ok && prev != e.MessageID {
			t.Errorf("%s handled with two message ids, %s and %s; only one was published", e.RoutingKey, prev, e.MessageID)
		}
		byKey[e.RoutingKey] = e.MessageID
		if e.Err != nil && !errors.Is(e.Err, errClusterBusy) {
			t.Errorf("unexpected failure %v", e.Err)
		}
	}
	want := []call{
		{"search-indexer", cat.ImportCompletedRoutingKey, 1, false},
		{"search-indexer", cat.ItemDeletedRoutingKey, 1, false},
		{"search-indexer", cat.ItemUpdatedRoutingKey, 1, true},
		{"search-indexer", cat.ItemUpdatedRoutingKey, 2, false},
		{"order-mailer", cat.OrderPlacedRoutingKey, 1, false},
		{"sales-ledger", cat.OrderPlacedRoutingKey, 1, false},
		{"price-history", cat.ItemUpdatedRoutingKey, 1, false},
		{"price-history", cat.ItemDeletedRoutingKey, 1, false},
	}
	// Consumers run concurrently: compare without order, except that a
	// fact's attempts at one consumer come in order.
	sortCalls := func(cs []call) []call {
		cs = slices.Clone(cs)
		slices.SortStableFunc(cs, func(a, b call) int {
			if c := strings.Compare(a.RoutingKey, b.RoutingKey); c != 0 {
				return c
			}
			return strings.Compare(a.Consumer, b.Consumer)
		})
		return cs
	}
	if diff := cmp.Diff(sortCalls(want), sortCalls(got)); diff != "" {
		t.Errorf("handler calls (-want +got):\n%s", diff)
	}
	for _, line := range []string{
		`indexed BOOK-123 "The Warren Handbook" at 19.99 EUR`,
		"mailed ada@example.com the confirmation of order",
		"rejected before sending",
		"/item/name: at least 1 character",
		"every fact handled; consumers stopped cleanly",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("output lacks %q", line)
		}
	}
}
