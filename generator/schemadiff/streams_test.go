package schemadiff

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/runtime/topology"
)

// The message of a fact that goes direct names the stream, the fact and
// its routing key, says what happens to the queues of other services and
// what to do; the one of a fact published through the exchange again
// names the stream and the fact.
func TestStreamPublishMessages(t *testing.T) {
	tests := map[string][]string{
		"stream-publish-direct": {
			`stream "order-log" now publishes directly ("publish": "direct"): fact "order.placed" is written straight into the stream over the stream protocol instead of through the events exchange, so a queue of another service bound to "order.placed" on the exchange stops receiving it, without any error; keep "publish": "exchange" for a stream whose facts other services bind (or narrow its bindings), or move those services' consumers to read stream "order-log" before this deploys`,
			`stream "order-log" now publishes directly ("publish": "direct"): fact "order.shipped" is written straight into the stream over the stream protocol instead of through the events exchange, so a queue of another service bound to "order.shipped" on the exchange stops receiving it, without any error; keep "publish": "exchange" for a stream whose facts other services bind (or narrow its bindings), or move those services' consumers to read stream "order-log" before this deploys`,
		},
		"stream-publish-direct-new-stream": {
			`new stream "placed-log" publishes directly ("publish": "direct"): fact "order.placed" is written straight into the stream over the stream protocol instead of through the events exchange, so a queue of another service bound to "order.placed" on the exchange stops receiving it, without any error; keep "publish": "exchange" for a stream whose facts other services bind (or narrow its bindings), or move those services' consumers to read stream "placed-log" before this deploys`,
		},
		"stream-publish-exchange": {
			`stream "order-log" no longer publishes directly ("publish": "direct" was removed): fact "order.placed" is published through the events exchange again, and every queue bound to it there receives it again`,
			`stream "order-log" no longer publishes directly ("publish": "direct" was removed): fact "order.shipped" is published through the events exchange again, and every queue bound to it there receives it again`,
		},
	}
	for name, want := range tests {
		r := Compare(loadDir(t, filepath.Join("testdata", name, "old")), loadDir(t, filepath.Join("testdata", name, "new")))
		var got []string
		for _, c := range r.Changes {
			if c.Rule == StreamPublishDirect || c.Rule == StreamPublishExchange {
				got = append(got, c.Message)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: messages (-want +got):\n%s", name, diff)
		}
		if len(r.Migrations) != 0 {
			t.Errorf("%s: a migration for a change of how facts are published: %+v", name, r.Migrations)
		}
	}
}

// The cause of a fact going direct, or back through the exchange, is
// named wherever it is in warren.json, and placed there.
func TestStreamPublishCauses(t *testing.T) {
	const base = `{"package": "shop", %s "consumers": {%s}}`
	fact := func(key string) string {
		return `{"x-routing-key": "` + key + `", "type": "object", "properties": {"id": {"type": "string"}}}`
	}
	dir := func(streams, consumers string) *Dir {
		t.Helper()
		d, err := LoadFS(context.Background(), fstest.MapFS{
			"warren.json":        {Data: []byte(strings.Replace(strings.Replace(base, "%s", streams, 1), "%s", consumers, 1))},
			"order/placed.json":  {Data: []byte(fact("order.placed"))},
			"order/shipped.json": {Data: []byte(fact("order.shipped"))},
		})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	const (
		directPlaced  = `"streams": {"log": {"bindings": ["order.placed"], "publish": "direct"}},`
		directAll     = `"streams": {"log": {"bindings": ["order.*"], "publish": "direct"}},`
		exchangeAll   = `"streams": {"log": {"bindings": ["order.*"], "publish": "exchange"}},`
		shippedMailer = `"mailer": {"bindings": ["order.shipped"]}`
	)
	tests := []struct {
		name                string
		oldStreams, oldCons string
		newStreams, newCons string
		want                []string // rule fact side pointer: message prefix
	}{
		{"bindings widened", directPlaced, "", directAll, "",
			[]string{`stream-publish-direct order.shipped new /streams/log/bindings: the bindings of stream "log", which publishes directly, now match it`}},
		{"the last other binding gone", directAll, shippedMailer, directAll, "",
			[]string{`stream-publish-direct order.shipped new /streams/log: nothing in warren.json binds it besides stream "log", which publishes directly ("publish": "direct"), any more`}},
		{"bindings narrowed", directAll, "", directPlaced, "",
			[]string{`stream-publish-exchange order.shipped new /streams/log/bindings: the bindings of stream "log" no longer match it`}},
		{"publish exchange written out", directPlaced, "", exchangeAll, "",
			[]string{
				`stream-publish-exchange order.placed new /streams/log/publish: stream "log" publishes through the exchange ("publish": "exchange")`,
			}},
		{"stream gone", directPlaced, "", "", "",
			[]string{`stream-publish-exchange order.placed old /streams/log: stream "log", which published directly, is gone from warren.json`}},
		{"a queue binds it too", directAll, "", directAll, shippedMailer,
			[]string{`stream-publish-exchange order.shipped new /streams/log: another queue or stream of warren.json binds it besides stream "log", so the exchange must reach them all`}},
		{"moved between direct streams", directPlaced, "", `"streams": {"other": {"bindings": ["order.placed"], "publish": "direct"}},`, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Compare(dir(tt.oldStreams, tt.oldCons), dir(tt.newStreams, tt.newCons))
			var got []string
			for _, c := range r.Changes {
				if c.Rule != StreamPublishDirect && c.Rule != StreamPublishExchange {
					continue
				}
				why, _, _ := strings.Cut(c.Message, ": fact ")
				got = append(got, c.Rule+" "+c.Fact+" "+string(c.Pos.Side)+" "+c.Pos.Pointer+": "+why)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
		})
	}
}

// A service that imports the directory and binds a fact that goes direct
// learns it from warren diff --base-module: its queue stops receiving the
// fact. A raised x-version announces it to the producer's diff, not to the
// consumers here. A service that binds other facts hears nothing of it.
func TestStreamPublishDirectBreaksAnImporter(t *testing.T) {
	old := loadDir(t, "testdata/stream-publish-direct/old")
	cur := loadDir(t, "testdata/stream-publish-direct/new")
	r := CompareImport(old, cur, []string{"order.placed"})
	var got []string
	for _, c := range r.Changes {
		got = append(got, brief(c))
	}
	want := []string{`breaking stream-publish-direct order.placed "" forward new:warren.json:8:18`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes for a consumer of order.placed (-want +got):\n%s", diff)
	}
	if r.Unannounced() != 1 {
		t.Errorf("unannounced = %d, want 1", r.Unannounced())
	}
	if r := CompareImport(old, cur, []string{"invoice.#"}); len(r.Changes) != 0 {
		t.Errorf("changes for a consumer of other facts: %v", r.Changes)
	}

	// Announced by the producer: intentional there, breaking here.
	raised := t.TempDir()
	if err := os.CopyFS(raised, os.DirFS("testdata/stream-publish-direct/new")); err != nil {
		t.Fatal(err)
	}
	placed := filepath.Join(raised, "order", "placed.json")
	b, err := os.ReadFile(placed)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(placed, bytes.Replace(b, []byte(`"title": "OrderPlaced",`), []byte(`"title": "OrderPlaced", "x-version": 2,`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	announced := loadDir(t, raised)
	if c := findRule(Compare(old, announced), StreamPublishDirect, "order.placed"); c == nil || c.Verdict != Intentional {
		t.Errorf("the producer's diff with x-version raised: %+v, want intentional", c)
	}
	if c := findRule(CompareImport(old, announced, []string{"order.*"}), StreamPublishDirect, "order.placed"); c == nil || c.Verdict != Breaking {
		t.Errorf("the importer's diff with x-version raised: %+v, want breaking", c)
	}
}

func findRule(r *Report, rule, fact string) *Change {
	for i, c := range r.Changes {
		if c.Rule == rule && c.Fact == fact {
			return &r.Changes[i]
		}
	}
	return nil
}

// The text report says, below the changes, how to keep other services'
// queues receiving the facts, or how to announce the change.
func TestStreamPublishDirectHint(t *testing.T) {
	r := Compare(loadDir(t, "testdata/stream-publish-direct/old"), loadDir(t, "testdata/stream-publish-direct/new"))
	var b bytes.Buffer
	if err := r.WriteText(&b, Labels{Old: "main:events", New: "events"}); err != nil {
		t.Fatal(err)
	}
	want := `A fact written directly into a stream (order.placed, order.shipped) reaches no queue bound to it on the events exchange, where other services bind it in manifests this directory never sees: keep "publish": "exchange" for facts other services bind, or, once their consumers read the stream, announce the change by raising x-version.` + "\n"
	if !strings.HasSuffix(b.String(), want) || strings.Contains(b.String(), "To announce a breaking change") {
		t.Errorf("text report:\n%s\nwant it to end with:\n%s", b.String(), want)
	}
}

// A version window ships a schema break in any order, but not a direct
// write: the queues of other services miss the fact whichever versions
// the producer publishes, so its consumers still deploy first.
func TestStreamPublishDirectInAVersionWindow(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "events")
	if err := os.CopyFS(dir, os.DirFS("testdata/versions-side-by-side/new")); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "warren.json")
	src, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	for _, edit := range [][2]string{
		{`"order.placed": { "publish": [2, 3] }`, `"order.placed": { "publish": [1, 3] }`}, // the window open, as in windowReport
		{`"consumers": {`, `"streams": { "order-log": { "bindings": ["order.*"], "publish": "direct" } }, "consumers": {`},
		{`"ledger": { "bindings": ["order.*"] }`, `"ledger": { "bindings": ["order.*"], "stream": "order-log" }`},
		{`"bindings": ["order.placed"],`, `"bindings": ["order.placed"], "stream": "order-log",`},
	} {
		edited := strings.Replace(s, edit[0], edit[1], 1)
		if edited == s {
			t.Fatalf("the testdata manifest has no %s", edit[0])
		}
		s = edited
	}
	if err := os.WriteFile(manifest, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	r := Compare(loadDir(t, "testdata/versions-side-by-side/old"), loadDir(t, dir))
	if m, ok := r.migration("order.placed"); !ok || !m.Safe {
		t.Fatalf("migration of order.placed: %+v; want it safe, as without the stream", r.Migrations)
	}
	i := slices.IndexFunc(r.Deploys, func(d Deploy) bool { return d.Fact == "order.placed" })
	if i < 0 {
		t.Fatalf("deploys %+v: none for order.placed", r.Deploys)
	}
	want := Deploy{Fact: "order.placed", Breaks: Both, First: "consumers",
		Message: `the break of order.placed's schema is shipped safely by its version window, but deploy every consumer of order.placed before its producer: those of other services must read stream "order-log" by then instead of a queue bound to the events exchange, since the producer writes order.placed into the stream directly`}
	if diff := cmp.Diff(want, r.Deploys[i]); diff != "" {
		t.Errorf("deploy of order.placed (-want +got):\n%s", diff)
	}
}

// directFacts reads warren.json as the generated publisher decides at run
// time, from the topology the generator builds: a fact goes directly into
// a stream only when nothing else binds it on the events exchange, a
// saga's queue included.
func TestDirectFactsAgreeWithTheTopology(t *testing.T) {
	ctx := context.Background()
	dirs := []string{"../../golden/streams/events", "../../examples/orderlog/events"}
	for _, name := range []string{"stream-publish-direct", "stream-publish-direct-new-stream", "stream-publish-exchange"} {
		dirs = append(dirs, filepath.Join("testdata", name, "old"), filepath.Join("testdata", name, "new"))
	}
	directSomewhere := false
	for _, dir := range dirs {
		s, err := load.Load(ctx, dir)
		if err != nil {
			t.Fatalf("load %s: %v", dir, err)
		}
		m, err := model.Build(ctx, s, model.Options{PackageOptional: true})
		if err != nil {
			t.Fatalf("build %s: %v", dir, err)
		}
		directSomewhere = compareDirectFacts(t, dir, s, m.Topology, m.Exchanges.Events) || directSomewhere
	}
	if !directSomewhere {
		t.Error("no directory has a fact written directly into a stream: the test compares nothing")
	}

	// A saga's queue binds order.paid and order.cancel-requested, which
	// stream "paid-log" publishes directly. The generator refuses that,
	// since they would go through the exchange after all, but directFacts
	// reads a directory whose model does not build too. Its topology is
	// the one built with the stream publishing through the exchange, the
	// stream then marked direct.
	direct := sagasWithPaidLog(t, "direct")
	s, err := load.Load(ctx, direct)
	if err != nil {
		t.Fatalf("load %s: %v", direct, err)
	}
	if _, err := model.Build(ctx, s, model.Options{PackageOptional: true}); err == nil || !strings.Contains(err.Error(), `saga "checkout" binds it too`) {
		t.Errorf("build %s: %v; want the saga's facts on a direct stream refused", direct, err)
	}
	exchange := sagasWithPaidLog(t, "exchange")
	se, err := load.Load(ctx, exchange)
	if err != nil {
		t.Fatalf("load %s: %v", exchange, err)
	}
	m, err := model.Build(ctx, se, model.Options{PackageOptional: true})
	if err != nil {
		t.Fatalf("build %s: %v", exchange, err)
	}
	top := m.Topology
	top.Queues = slices.Clone(top.Queues)
	i := slices.IndexFunc(top.Queues, func(q topology.Queue) bool { return q.Name == "paid-log" })
	if i < 0 {
		t.Fatalf("%s: no queue paid-log in the topology", exchange)
	}
	top.Queues[i].Direct = true
	compareDirectFacts(t, direct, s, top, m.Exchanges.Events)
}

// compareDirectFacts reports each fact of s that directFacts and the
// topology send different ways, and whether any goes directly.
func compareDirectFacts(t *testing.T, dir string, s *load.Schemas, top topology.Topology, events string) bool {
	t.Helper()
	got := directFacts(NewDir(s))
	direct := false
	for _, f := range s.Facts {
		stream, ok := top.DirectStream(events, f.RoutingKey)
		if got[f.RoutingKey] != stream || ok != (stream != "") {
			t.Errorf("%s: %s goes directly into %q by directFacts, into %q (%v) by the topology", dir, f.RoutingKey, got[f.RoutingKey], stream, ok)
		}
		direct = direct || ok
	}
	return direct
}

// sagasWithPaidLog copies golden/sagas/events with a stream "paid-log" of
// the facts its saga handles besides order.placed, published as publish
// says, and returns the copy's directory.
func sagasWithPaidLog(t *testing.T, publish string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "events")
	if err := os.CopyFS(dir, os.DirFS("../../golden/sagas/events")); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "warren.json")
	src, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	withStream := bytes.Replace(src, []byte(`"consumers": {`), []byte(`"streams": {"paid-log": {"bindings": ["order.paid", "order.cancel-requested"], "publish": "`+publish+`"}}, "consumers": {`), 1)
	if bytes.Equal(withStream, src) {
		t.Fatal("golden/sagas/events/warren.json has no consumers to put a stream before")
	}
	if err := os.WriteFile(manifest, withStream, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// How a fact is published is no part of its schema: in a _TRANSITIVE
// mode, a stream that went direct before base was judged against the
// version it went direct in, and is not reported again against older ones.
func TestStreamPublishDirectIsNotJudgedAgainstHistory(t *testing.T) {
	older := loadDir(t, "testdata/stream-publish-direct/old")
	base := loadDir(t, "testdata/stream-publish-direct/new")
	cur := loadDir(t, "testdata/stream-publish-direct/new")
	for _, d := range []*Dir{older, base, cur} {
		d.Schemas.Manifest.Compatibility = string(ModeFullTransitive)
	}
	r := CompareHistory(base, []Version{{Label: "HEAD~1", Dir: older}}, cur)
	if len(r.Changes) != 0 {
		t.Errorf("changes %+v; want none", r.Changes)
	}
	// Against base alone, the switch is reported.
	if c := findRule(CompareHistory(older, nil, cur), StreamPublishDirect, "order.placed"); c == nil || c.Verdict != Breaking {
		t.Errorf("against the version before the switch: %+v, want breaking", c)
	}
}
