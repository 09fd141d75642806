package load_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/load"
)

// TestReadAround checks that a manifest value the loader rejects does not
// hide the problems the checks after it find (docs/CLI.md: all problems of
// a run are printed), and that nothing is reported twice or as a
// consequence of the first mistake. Each case is a directory of
// testdata/readaround; want.txt holds every error, as `warren generate`
// prints them (files relative to the directory).
func TestReadAround(t *testing.T) {
	for _, tc := range []struct{ dir, why string }{
		{"backoff-and-binding", "a rejected default and a binding that matches no fact are both printed"},
		{"stream-retention-and-consumer", "a retention the loader refuses hides neither the consumer's start nor its maxPriority, refused once with the advice for a stream consumer"},
		{"consumer-settings", "a consumer with a rejected value is not checked further (no start without a stream, no maxPriority for the misspelt classic queue); another consumer's binding is"},
		{"inherited-default", "a consumer that would take a rejected default is not checked further; one that sets the value itself is"},
		{"stream-settings", "a stream with a rejected value is not checked further (maxBytes against the default segment size)"},
		{"stream-left-out", "a stream that cannot be read is not reported missing by its consumer, whose bindings are still checked"},
		{"streams-left-out", "when \"streams\" cannot be read at all, no consumer is reported reading a stream that is missing"},
		{"values-left-unset", "a duration too long, a start that is no start and a backoff of no whole milliseconds are each reported once, and left unset"},
		{"referenced-section", "a mistake in a section that other files rely on (facts) still stops the run at the loader"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			dir := filepath.Join("testdata", "readaround", tc.dir)
			want, err := os.ReadFile(filepath.Join(dir, "want.txt"))
			if err != nil {
				t.Fatal(err)
			}
			p, err := generator.Open(context.Background(), dir, generator.Options{Go: true})
			if p != nil || err == nil {
				t.Fatalf("Open: project %v, error %v; want no project and errors", p, err)
			}
			if got := err.Error() + "\n"; got != string(want) {
				t.Errorf("%s; got:\n%swant:\n%s", tc.why, got, want)
			}
		})
	}
}

// TestLoadReadsAround checks what Load returns when the only problems are
// manifest values it read around: the directory with the errors, the
// manifest without those values, and a consumer that has one, or would
// take one from /defaults, keeping only what it is. A broken schema file
// returns no directory.
func TestLoadReadsAround(t *testing.T) {
	fact := `{"x-routing-key": "a.b", "type": "object"}`
	s, err := load.LoadFS(context.Background(), fstest.MapFS{
		"a.json": {Data: []byte(fact)},
		"warren.json": {Data: []byte(`{"defaults": {"backoff": "1s", "prefetch": 8}, "consumers": {
  "bad": {"bindings": ["a.b"], "description": "d", "concurrency": 0, "prefetch": 4, "backoff": ["2s"]},
  "inherits": {"bindings": ["a.*"], "prefetch": 4},
  "own": {"bindings": ["a.#"], "prefetch": 4, "backoff": ["2s"]}}}`)},
	})
	var list load.ErrorList
	if s == nil || !errors.As(err, &list) || len(list) != 2 {
		t.Fatalf("LoadFS: %v, %v; want the directory and 2 errors", s, err)
	}
	m := s.Manifest
	if m.Defaults.Backoff != nil || m.Defaults.Prefetch == nil || *m.Defaults.Prefetch != 8 {
		t.Errorf("defaults = %+v, want prefetch 8 and no backoff", m.Defaults)
	}
	if len(m.Consumers) != 3 {
		t.Fatalf("consumers = %v, want bad, inherits and own", m.Consumers)
	}
	for _, c := range m.Consumers[:2] {
		if c.Name == "bad" && c.Description != "d" || len(c.Bindings) != 1 || c.Settings.Prefetch != nil || c.Settings.Concurrency != nil || c.Settings.Backoff != nil {
			t.Errorf("%s = %+v, settings %+v; want its bindings and description only", c.Name, c, c.Settings)
		}
	}
	if own := m.Consumers[2]; own.Settings.Prefetch == nil || *own.Settings.Prefetch != 4 || len(own.Settings.Backoff) != 1 {
		t.Errorf("own's settings = %+v, want prefetch 4 and its backoff", own.Settings)
	}

	// A start that is no start is reported and read as none, which the
	// checks after the loader take for the default, not as a time.
	s, err = load.LoadFS(context.Background(), fstest.MapFS{
		"a.json": {Data: []byte(fact)},
		"warren.json": {Data: []byte(`{"streams": {"s": {"bindings": ["a.b"]}}, "consumers": {
  "offset": {"bindings": ["a.b"], "stream": "s", "start": 99999999999999999999},
  "time": {"bindings": ["a.b"], "stream": "s", "start": "yesterday"}}}`)},
	})
	if s == nil || !errors.As(err, &list) || len(list) != 2 {
		t.Fatalf("LoadFS: %v, %v; want the directory and 2 errors", s, err)
	}
	for _, c := range s.Manifest.Consumers {
		if c.Start != (load.StreamStart{}) {
			t.Errorf("%s: start = %+v, want none", c.Name, c.Start)
		}
	}

	s, err = load.LoadFS(context.Background(), fstest.MapFS{
		"a.json":      {Data: []byte(`{"x-routing-key": "a.b", "type": "strin"}`)},
		"warren.json": {Data: []byte(`{"defaults": {"backoff": "1s"}}`)},
	})
	if s != nil || !errors.As(err, &list) || len(list) != 2 {
		t.Errorf("LoadFS with a broken schema file: %v, %v; want no directory and 2 errors", s, err)
	}
}
