package schemadiff

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// A stream's declaration changed in place says what Declare does with it
// at deploy and what to do instead; a stream consumer's start, that it
// changes nothing once the consumer has an offset.
func TestStreamSettingsMessages(t *testing.T) {
	tests := map[string][]string{
		"stream-partitions-changed": {
			`partitions changed from 3 to 4, which a super stream cannot do in place: ordering keys would hash to other partitions than the ones holding their earlier facts, so Declare (and so Dial, which declares the generated topology) refuses the new count before it declares anything (runtime.PartitionCountError) and the service does not start, in every deploy of this directory; keep "partitions": 3, or declare a super stream of another name with 4 partitions beside it, move its consumers there (each starts there from its "start"), and remove "orders-by-id" from warren.json once none reads it (warren declare --prune unbinds it and keeps its facts)`,
		},
		"stream-retention-changed": {
			`maxAge changed from "168h" to "72h", maxBytes changed from 20000000000 to 10000000000: a stream keeps the arguments it was declared with, and the broker refuses a redeclaration with others, so Declare (and so Dial, which declares the generated topology) refuses it before it declares anything (a runtime.MismatchError) and the service does not start, in every deploy of this directory; put "maxAge": "168h" and "maxBytes": 20000000000 back in warren.json and change the retention on the broker with a policy, whose keys max-age and max-length-bytes take precedence over the stream's x-max-age and x-max-length-bytes (rabbitmqctl set_policy orders-log-retention '^orders-log$' '{"max-age":"259200s","max-length-bytes":10000000000}' --apply-to queues; one policy applies to a queue, so put any other keys of a policy that applies to it now in the same one), or declare a stream of another name`,
			`segmentBytes changed from (none: the broker's default) to 100000000: the broker refuses to redeclare a stream with another x-stream-max-segment-size-bytes, so Declare (and so Dial, which declares the generated topology) refuses it before it declares anything (a runtime.MismatchError) and the service does not start, in every deploy of this directory; a stream's segment size cannot change once it exists (RabbitMQ reads it, or the policy key stream-max-segment-size-bytes, only when it creates the stream): leave segmentBytes out of warren.json, or declare a stream of another name`,
		},
		"stream-kind-changed": {
			`the stream became a super stream of 2 partitions, which RabbitMQ cannot do in place: Declare adds the super stream (an exchange "orders-log" and partition streams "orders-log-0" and "orders-log-1") beside the plain stream, which stays bound to the events exchange and keeps receiving every fact until warren declare --prune unbinds it. Its consumers store their offsets in the streams they read, so on the new ones they start from their "start" as if they had never run: what the old stream holds that they had not read yet is left behind there, and while the old build still runs, each fact written reaches both and is handled by both builds. Declare the super stream under another name beside "orders-log" instead, move its consumers to it, and remove "orders-log" from warren.json once none reads it (warren declare --prune unbinds it and keeps its facts)`,
		},
		"stream-start-changed": {
			`start changed from "first" to "next", which applies only the first time the consumer starts, before the broker holds an offset under its name in stream "orders-log": a consumer that has started goes on from its stored offset, and the change has no effect on it. For it to read from "next", give it another name, which has no offset yet (the old name's queues stay behind: warren declare --prune); or read part of the stream again under a fresh offset name: warren replay --consumer order-history --from stream`,
		},
	}
	for name, want := range tests {
		old, cur := loadDir(t, filepath.Join("testdata", name, "old")), loadDir(t, filepath.Join("testdata", name, "new"))
		r := Compare(old, cur)
		var got []string
		for _, c := range r.Changes {
			got = append(got, c.Message)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: messages (-want +got):\n%s", name, diff)
		}
		// No fact's: no deploy order, no migration, and no advice to
		// raise an x-version, which announces nothing of a stream.
		if len(r.Deploys) != 0 || len(r.Migrations) != 0 {
			t.Errorf("%s: deploys %+v, migrations %+v; want none", name, r.Deploys, r.Migrations)
		}
		var b bytes.Buffer
		if err := r.WriteText(&b, Labels{Old: "main:events", New: "events"}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "x-version") {
			t.Errorf("%s: the text report speaks of x-version:\n%s", name, b.String())
		}
		// Another directory's consumers do not declare this one's streams.
		if imp := CompareImport(old, cur, []string{"#"}); len(imp.Changes) != 0 {
			t.Errorf("%s: changes for an importer: %+v", name, imp.Changes)
		}
	}

	// Declare refuses them whatever the mode.
	for _, name := range []string{"stream-partitions-changed", "stream-retention-changed", "stream-kind-changed"} {
		cur := loadDir(t, filepath.Join("testdata", name, "new"))
		cur.Schemas.Manifest.Compatibility = string(ModeNone)
		for _, c := range Compare(loadDir(t, filepath.Join("testdata", name, "old")), cur).Changes {
			if c.Verdict != Breaking {
				t.Errorf("%s in mode NONE: %s", name, brief(c))
			}
		}
	}
}

// Only a change of what the broker holds counts: a super stream's
// retention is its partitions', a duration spelt otherwise is the same
// x-max-age, and a retention removed or added is a change too. What the
// stream becomes when its kind changes is new, and its retention with it.
func TestStreamSettingsChanges(t *testing.T) {
	dir := func(streams string) *Dir {
		t.Helper()
		d, err := LoadFS(context.Background(), fstest.MapFS{
			"warren.json":       {Data: []byte(`{"package": "shop", "streams": {` + streams + `}, "consumers": {"log-reader": {"bindings": ["order.placed"], "stream": "log"}}}`)},
			"order/placed.json": {Data: []byte(`{"x-routing-key": "order.placed", "x-ordering-key": "/id", "type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}`)},
		})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	tests := []struct {
		name     string
		old, new string
		want     []string // rule side pointer: message up to the first colon
	}{
		{"spelt otherwise", `"log": {"bindings": ["order.*"], "maxAge": "24h"}`, `"log": {"bindings": ["order.*"], "maxAge": "1440m"}`, nil},
		{"description", `"log": {"bindings": ["order.*"]}`, `"log": {"bindings": ["order.*"], "description": "All orders."}`, nil},
		{"maxAge added", `"log": {"bindings": ["order.*"]}`, `"log": {"bindings": ["order.*"], "maxAge": "24h"}`,
			[]string{`stream-retention-changed new /streams/log/maxAge: maxAge "24h" added`}},
		{"maxBytes removed", `"log": {"bindings": ["order.*"], "maxBytes": 1000000000}`, `"log": {"bindings": ["order.*"]}`,
			[]string{`stream-retention-changed old /streams/log/maxBytes: maxBytes 1000000000 removed`}},
		{"a super stream's retention", `"log": {"bindings": ["order.*"], "partitions": 2, "maxAge": "24h"}`, `"log": {"bindings": ["order.*"], "partitions": 2, "maxAge": "48h"}`,
			[]string{`stream-retention-changed new /streams/log/maxAge: maxAge changed from "24h" to "48h"`}},
		{"partitions and segment size", `"log": {"bindings": ["order.*"], "partitions": 2}`, `"log": {"bindings": ["order.*"], "partitions": 3, "segmentBytes": 100000000}`,
			[]string{
				`stream-partitions-changed new /streams/log/partitions: partitions changed from 2 to 3, which a super stream cannot do in place`,
				`stream-retention-changed new /streams/log/segmentBytes: segmentBytes changed from (none`,
			}},
		{"back to a plain stream", `"log": {"bindings": ["order.*"], "partitions": 2, "maxAge": "24h"}`, `"log": {"bindings": ["order.*"]}`,
			[]string{`stream-kind-changed old /streams/log/partitions: the super stream became a plain stream, which RabbitMQ cannot do in place`}},
		{"a new stream", `"log": {"bindings": ["order.*"]}`, `"log": {"bindings": ["order.*"]}, "other": {"bindings": ["order.*"], "partitions": 2}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Compare(dir(tt.old), dir(tt.new))
			var got []string
			for _, c := range r.Changes {
				what, _, _ := strings.Cut(c.Message, ":")
				got = append(got, c.Rule+" "+string(c.Pos.Side)+" "+c.Pos.Pointer+": "+what)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
		})
	}
	// The policy of a super stream's retention applies to its partitions.
	r := Compare(dir(`"log": {"bindings": ["order.*"], "partitions": 2, "maxAge": "24h"}`), dir(`"log": {"bindings": ["order.*"], "partitions": 2, "maxAge": "48h"}`))
	if want := `rabbitmqctl set_policy log-retention '^log-[0-9]+$' '{"max-age":"172800s"}' --apply-to queues`; len(r.Changes) != 1 || !strings.Contains(r.Changes[0].Message, want) {
		t.Errorf("changes %+v; want one saying %s", r.Changes, want)
	}
	// A removed bound cannot be taken away by a policy.
	r = Compare(dir(`"log": {"bindings": ["order.*"], "maxBytes": 1000000000}`), dir(`"log": {"bindings": ["order.*"]}`))
	if want := `put "maxBytes": 1000000000 back in warren.json and change the retention on the broker with a policy, whose keys max-age and max-length-bytes take precedence over the stream's x-max-age and x-max-length-bytes; a policy sets another max-length-bytes in place of the argument, but cannot take it away, or declare a stream of another name`; len(r.Changes) != 1 || !strings.Contains(r.Changes[0].Message, want) {
		t.Errorf("changes %+v; want one saying %s", r.Changes, want)
	}
}

// A start applies where the consumer has no offset yet: on a stream it
// did not read before, or one that changed kind. A super stream's
// consumer is not told to replay, which warren replay refuses.
func TestStreamStartChanges(t *testing.T) {
	dir := func(t *testing.T, streams, consumer string) *Dir {
		t.Helper()
		if consumer != "" {
			consumer = ", " + consumer
		}
		d, err := LoadFS(context.Background(), fstest.MapFS{
			"warren.json":       {Data: []byte(`{"package": "shop", "streams": {` + streams + `}, "consumers": {"reader": {"bindings": ["order.placed"]` + consumer + `}}}`)},
			"order/placed.json": {Data: []byte(`{"x-routing-key": "order.placed", "x-ordering-key": "/id", "type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}`)},
		})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	const (
		plain = `"log": {"bindings": ["order.*"]}, "other": {"bindings": ["order.*"]}`
		super = `"log": {"bindings": ["order.*"], "partitions": 2}, "other": {"bindings": ["order.*"]}`
	)
	tests := []struct {
		name                string
		oldStreams, oldCons string
		newStreams, newCons string
		want                []string // side pointer: message
	}{
		{"the default written out", plain, `"stream": "log"`, plain, `"stream": "log", "start": "next"`, nil},
		{"one offset", plain, `"stream": "log", "start": 42`, plain, `"stream": "log", "start": 42`, nil},
		{"written", plain, `"stream": "log"`, plain, `"stream": "log", "start": "first"`,
			[]string{`new /consumers/reader/start: start changed from "next" to "first", which applies only the first time the consumer starts, before the broker holds an offset under its name in stream "log": a consumer that has started goes on from its stored offset, and the change has no effect on it. For it to read from "first", give it another name, which has no offset yet (the old name's queues stay behind: warren declare --prune); or read part of the stream again under a fresh offset name: warren replay --consumer reader --from stream`}},
		{"removed", plain, `"stream": "log", "start": 42`, plain, `"stream": "log"`,
			[]string{`old /consumers/reader/start: start changed from offset 42 to "next", which applies only the first time the consumer starts, before the broker holds an offset under its name in stream "log": a consumer that has started goes on from its stored offset, and the change has no effect on it. For it to read from "next", give it another name, which has no offset yet (the old name's queues stay behind: warren declare --prune); or read part of the stream again under a fresh offset name: warren replay --consumer reader --from stream`}},
		{"a super stream", super, `"stream": "log", "start": "first"`, super, `"stream": "log", "start": "last"`,
			[]string{`new /consumers/reader/start: start changed from "first" to "last", which applies only the first time the consumer starts, before the broker holds an offset under its name in super stream "log": a consumer that has started goes on from its stored offset, and the change has no effect on it. For it to read from "last", give it another name, which has no offset yet (the old name's queues stay behind: warren declare --prune)`}},
		{"another stream", plain, `"stream": "log", "start": "first"`, plain, `"stream": "other", "start": "last"`, nil},
		{"a queue consumer before", plain, ``, plain, `"stream": "log", "start": "first"`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Compare(dir(t, tt.oldStreams, tt.oldCons), dir(t, tt.newStreams, tt.newCons))
			var got []string
			for _, c := range r.Changes {
				if c.Rule != StreamStartChanged {
					continue
				}
				if c.Consumer != "reader" || c.Verdict != Compatible {
					t.Errorf("change %s: want a compatible change of consumer reader", brief(c))
				}
				got = append(got, string(c.Pos.Side)+" "+c.Pos.Pointer+": "+c.Message)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
		})
	}
}

// A removed stream consumer leaves no facts piling up, since its work
// queue is bound to nothing: what stays is its offset in the stream (in
// each partition of a super stream) and its queues.
func TestRemovedStreamConsumerMessage(t *testing.T) {
	r := Compare(loadDir(t, "testdata/consumer-removed-from-a-stream/old"), loadDir(t, "testdata/consumer-removed-from-a-stream/new"))
	want := []string{`stream consumer "shipping-audit" was removed; its work queue is bound to nothing, so no facts pile up for it, but the offset it stored under its name stays in stream "orders-log" for as long as the stream does (a consumer of that name added again goes on from it, not from its start), and its work, retry and poison queues stay with what waits in them (its own retries and deferrals, its poisoned facts): warren declare reports them, and --prune deletes them once drained`}
	var got []string
	for _, c := range r.Changes {
		got = append(got, c.Message)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}

	dir := func(consumers string) *Dir {
		t.Helper()
		d, err := LoadFS(context.Background(), fstest.MapFS{
			"warren.json":       {Data: []byte(`{"package": "shop", "streams": {"by-id": {"bindings": ["order.*"], "partitions": 2}}, "consumers": {` + consumers + `}}`)},
			"order/placed.json": {Data: []byte(`{"x-routing-key": "order.placed", "x-ordering-key": "/id", "type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}`)},
		})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	r = Compare(dir(`"projection": {"bindings": ["order.placed"], "stream": "by-id"}`), dir(``))
	if want := `the offset it stored under its name stays in each partition of super stream "by-id" for as long as the stream does`; len(r.Changes) != 1 || !strings.Contains(r.Changes[0].Message, want) {
		t.Errorf("a super stream's consumer removed: %+v; want it to say %s", r.Changes, want)
	}

	// The queue consumer's message is unchanged.
	r = Compare(loadDir(t, "testdata/consumer-removed/old"), loadDir(t, "testdata/consumer-removed/new"))
	if len(r.Changes) != 1 || !strings.Contains(r.Changes[0].Message, "its queues and bindings stay on the broker, where facts keep piling up") {
		t.Errorf("a queue consumer removed: %+v", r.Changes)
	}
}
