package warrentest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/warrenbus/warren/runtime"
)

// update is -warrentest.update. A package whose tests define their own
// -update flag (as golden-file tests often do) may use that instead.
var update = flag.Bool("warrentest.update", false, "rewrite the golden files of warrentest.Bus.Golden")

func updating() bool {
	if *update {
		return true
	}
	if f := flag.Lookup("update"); f != nil {
		return f.Value.String() == "true"
	}
	return false
}

// goldenFact is one published fact as a golden file records it: what a
// service's behaviour decides (which fact, with what payload), without
// what changes on every run (message ids and times).
type goldenFact struct {
	RoutingKey string          `json:"routing_key"`
	Version    string          `json:"version,omitempty"`
	Payload    json.RawMessage `json:"payload"`
}

// Golden compares the facts published on the bus so far with
// testdata/<name>.golden.json: each fact's routing key, version and
// payload as canonical JSON (sorted keys, two-space indent). A fact
// published in several versions at once (a dual publish window) is one
// entry per version, oldest first. Run the tests with -warrentest.update
// (or the package's own -update) to write the file instead.
//
// The facts are listed in the order of the clock when the bus received
// them, and those received at the same moment by routing key, then
// version, then payload: under [Run] everything that happens without the
// clock moving happens at one virtual moment, in an order the scheduler
// picks (two consumers' outbox rows due at one instant, say), so the file
// is the same on every run whatever that order was. Under [New] the
// clock is the wall's, and facts published concurrently keep the order
// the bus received them in.
func (b *Bus) Golden(name string) {
	b.t.Helper()
	if name == "" || strings.ContainsAny(name, `/\`) || name != filepath.Clean(name) {
		b.t.Fatalf("warrentest: Golden(%q): want a plain file name, without a directory", name)
	}
	got, err := b.goldenJSON()
	if err != nil {
		b.t.Fatalf("warrentest: Golden(%q): %v", name, err)
	}
	path := filepath.Join("testdata", name+".golden.json")
	if updating() {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			b.t.Fatalf("warrentest: Golden: %v", err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			b.t.Fatalf("warrentest: Golden: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		b.t.Fatalf("warrentest: Golden: %s does not exist; run the test with -warrentest.update to write it", path)
	}
	if err != nil {
		b.t.Fatalf("warrentest: Golden: %v", err)
	}
	if !bytes.Equal(want, got) {
		diff := gocmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n"))
		b.t.Errorf("warrentest: the facts published differ from %s (-want +got):\n%s\nrun the test with -warrentest.update to accept them", path, diff)
	}
}

func (b *Bus) goldenJSON() ([]byte, error) {
	type atFact struct {
		at time.Time
		goldenFact
	}
	var all []atFact
	for _, m := range b.Published() {
		for _, c := range versionsOf(m) {
			p, err := canonical(payloadOf(c.body))
			if err != nil {
				return nil, fmt.Errorf("message %s (%s): %w", m.MessageID, m.RoutingKey, err)
			}
			all = append(all, atFact{m.At, goldenFact{RoutingKey: m.RoutingKey, Version: c.version, Payload: p}})
		}
	}
	// Stable: facts alike in all four keep the order they came in.
	slices.SortStableFunc(all, func(x, y atFact) int {
		return cmp.Or(x.at.Compare(y.at), cmp.Compare(x.RoutingKey, y.RoutingKey),
			cmp.Compare(len(x.Version), len(y.Version)), cmp.Compare(x.Version, y.Version),
			bytes.Compare(x.Payload, y.Payload))
	})
	facts := make([]goldenFact, len(all))
	for i, f := range all {
		facts[i] = f.goldenFact
	}
	out, err := json.MarshalIndent(facts, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// versionCopy is one version of a published fact: its version as the
// golden file writes it ("" when the message names none) and its envelope.
type versionCopy struct {
	version string
	body    []byte
}

// versionsOf returns every version a message carries, oldest first. A fact
// published in several versions at once is one message whose body is the
// oldest version and whose newer versions travel in headers
// (runtime.HeaderFactCopyPrefix): each of them is a fact the service
// published, the newest the one its code wrote, so each is recorded. A
// message published one per version (runtime.HeaderFactVersions without
// the copies) carries its own version alone.
func versionsOf(m Message) []versionCopy {
	body := versionCopy{body: m.Body}
	if v, ok := m.Headers[runtime.HeaderFactVersion]; ok {
		body.version = fmt.Sprint(v)
	}
	var out []versionCopy
	for _, v := range runtime.FactVersions(m.Headers) {
		if b, ok := runtime.BodyOfVersion(m.Headers, m.Body, v); ok {
			out = append(out, versionCopy{version: strconv.Itoa(v), body: b})
		}
	}
	if len(out) == 0 {
		// A list naming no version of this message: record it as sent.
		return []versionCopy{body}
	}
	return out
}

// canonical re-encodes JSON with sorted keys, numbers as written.
func canonical(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return json.RawMessage("null"), nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("payload is not JSON: %w", err)
	}
	return json.Marshal(v)
}
