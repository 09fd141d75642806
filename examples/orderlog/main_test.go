package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/warrenbus/warren/internal/testenv"
)

// TestOrderLog runs the example against the broker, in a vhost of its
// own (so its stream and stored offset are new): the first run reads the
// facts published before it, the second only the one written between, and
// the replay the run's first two facts again, under a fresh offset name.
func TestOrderLog(t *testing.T) {
	url := testenv.VHost(t, "warren-orderlog")
	port := testenv.StreamPort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	got, err := run(ctx, url, port, &out, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Logf("output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"o-1 placed, total 12.50", "o-2 placed, total 40.00"},
		{"o-1 shipped"},
		{"o-1 placed, total 12.50", "o-2 placed, total 40.00"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("handled (-want +got):\n%s", diff)
	}
}
