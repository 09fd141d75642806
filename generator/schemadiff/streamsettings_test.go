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

// readerDir is a directory with the streams streams and a consumer
// "reader" of order.placed whose manifest entry adds consumer (keys and
// values, as "stream": "log"), for tests of what moves it between streams.
func readerDir(t *testing.T, streams, consumer string) *Dir {
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

// A start applies where the consumer has no offset yet: on a stream it
// did not read before, or one that changed kind. A super stream's
// consumer is not told to replay, which warren replay refuses.
func TestStreamStartChanges(t *testing.T) {
	dir := readerDir
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

// A consumer that reads another stream than before has no offset there
// under its name, so its start applies: what it reads again or skips
// depends on the start, and the message says so and how to move without
// either. It fails whatever the mode, has no deploy order, and is no
// importer's concern. A stream that changes kind under its name, or a
// start changed on the same stream, is reported by its own rule.
func TestStreamConsumerMoves(t *testing.T) {
	dir := readerDir
	const (
		plain = `"log": {"bindings": ["order.*"]}, "other": {"bindings": ["order.*"]}`
		super = `"log": {"bindings": ["order.*"]}, "other": {"bindings": ["order.*"], "partitions": 2}, "third": {"bindings": ["order.*"], "partitions": 3}`
		guard = `give the consumer a guard (runtime.WithGuard, which claims facts by consumer name and message id), so that a fact that reaches it both ways is handled once`
	)
	tests := []struct {
		name                string
		oldStreams, oldCons string
		newStreams, newCons string
		want                []string // side pointer: message
	}{
		{"to another stream", plain, `"stream": "log"`, plain, `"stream": "other"`,
			[]string{`new /consumers/reader/stream: moved from stream "log" to stream "other": a consumer's offset is kept in the stream it reads, under its name, so it has none in "other" (unless it read it before under this name, and goes on from there) and the deploy starts it there from its start, "next": the facts written to "other" before it first reads it are skipped, those it had not handled from "log" yet among them. What "log" holds that it had not read yet stays behind there, with its offset, and while both builds run, the old one reads "log" and the new one "other", so a fact that both carry is handled by both. Before deploying, set "start" to the time of this change (RFC 3339, not in the future), before the old build stops reading "log", and ` + guard + `; or, after the deploy, read what it skipped under a fresh offset name: warren replay --consumer reader --from stream --offset-name NAME --since TIME`}},
		{"from the first fact", plain, `"stream": "log", "start": "first"`, plain, `"stream": "other", "start": "first"`,
			[]string{`new /consumers/reader/stream: moved from stream "log" to stream "other": ` + `a consumer's offset is kept in the stream it reads, under its name, so it has none in "other" (unless it read it before under this name, and goes on from there) and the deploy starts it there from its start, "first": it reads every fact "other" keeps, those it already handled from "log" among them, again. What "log" holds that it had not read yet stays behind there, with its offset, and while both builds run, the old one reads "log" and the new one "other", so a fact that both carry is handled by both. Before deploying, set "start" to the time of this change (RFC 3339, not in the future), before the old build stops reading "log", and ` + guard + `; or, after the deploy, read what it skipped under a fresh offset name: warren replay --consumer reader --from stream --offset-name NAME --since TIME`}},
		// warren replay reads no super stream: no replay is advised.
		{"between super streams, from a time", super, `"stream": "other"`, super, `"stream": "third", "start": "2026-01-01T00:00:00Z"`,
			[]string{`new /consumers/reader/stream: moved from super stream "other" to super stream "third": a consumer's offset is kept in the stream it reads, under its name, so it has none in "third" (unless it read it before under this name, and goes on from there) and the deploy starts it there from its start, "2026-01-01T00:00:00Z": the facts before it are skipped, those it had not handled from "other" yet among them, and those after it that it already handled from "other" are handled again. What "other" holds that it had not read yet stays behind there, with its offset, and while both builds run, the old one reads "other" and the new one "third", so a fact that both carry is handled by both. Before deploying, set "start" to the time of this change (RFC 3339, not in the future), before the old build stops reading "other", and ` + guard}},
		{"from its queue", plain, ``, plain, `"stream": "log"`,
			[]string{`new /consumers/reader/stream: moved from its work queue "reader" to stream "log": the deploy starts it there from its start, "next": it reads what is written to "log" from its first start on. Its work queue keeps the bindings the old build declared until warren declare --prune removes them, and a stream consumer reads its work queue too (for its own retries), so until then each fact they match reaches it from the queue and from the stream, and is handled twice. Keep "start": "next" (the facts written before it first reads the stream reach it through the queue), ` + guard + `, and run warren declare --prune once no instance of the old build runs`}},
		{"from its queue to the first fact", plain, ``, plain, `"stream": "log", "start": "first"`,
			[]string{`new /consumers/reader/stream: moved from its work queue "reader" to stream "log": the deploy starts it there from its start, "first": it reads every fact "log" keeps, those it already handled from its queue among them, again. Its work queue keeps the bindings the old build declared until warren declare --prune removes them, and a stream consumer reads its work queue too (for its own retries), so until then each fact they match reaches it from the queue and from the stream, and is handled twice. Keep "start": "next" (the facts written before it first reads the stream reach it through the queue), ` + guard + `, and run warren declare --prune once no instance of the old build runs`}},
		{"to its queue", super, `"stream": "other", "start": "first"`, super, ``,
			[]string{`old /consumers/reader/stream: moved from super stream "other" to its work queue "reader", bound to the events exchange: the queue receives the facts its bindings match once the new build has declared those bindings, and what "other" holds that the old build had not read when it stops stays behind there, with the consumer's offset. While both builds run, the old one reads "other" as well as the work queue, which the new bindings now fill too, so a fact written meanwhile is handled from both. Deploy the new build before the old one stops, so that the queue is bound before "other" is no longer read, and ` + guard}},
		// The stream's new kind is stream-kind-changed's to tell.
		{"the stream changed kind", plain, `"stream": "log"`, `"log": {"bindings": ["order.*"], "partitions": 2}, "other": {"bindings": ["order.*"]}`, `"stream": "log"`, nil},
		{"the same stream, another start", plain, `"stream": "log"`, plain, `"stream": "log", "start": "first"`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, cur := dir(t, tt.oldStreams, tt.oldCons), dir(t, tt.newStreams, tt.newCons)
			r := Compare(old, cur)
			var got []string
			for _, c := range r.Changes {
				if c.Rule != StreamConsumerMoved {
					continue
				}
				if c.Consumer != "reader" || c.Fact != "" || c.Verdict != Breaking || c.Breaks != Both {
					t.Errorf("change %s: want a breaking change of consumer reader, both ways", brief(c))
				}
				got = append(got, string(c.Pos.Side)+" "+c.Pos.Pointer+": "+c.Message)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			if len(tt.want) == 0 {
				return
			}
			// Breaking whatever the mode, with no deploy order: no
			// deploy order and no x-version ships it.
			cur.Schemas.Manifest.Compatibility = string(ModeNone)
			r = Compare(old, cur)
			for _, c := range r.Changes {
				if c.Rule == StreamConsumerMoved && c.Verdict != Breaking {
					t.Errorf("in mode NONE: %s", brief(c))
				}
			}
			if len(r.Deploys) != 0 || len(r.Migrations) != 0 {
				t.Errorf("deploys %+v, migrations %+v; want none", r.Deploys, r.Migrations)
			}
			// Another directory's consumers do not move with this one's.
			if imp := CompareImport(old, cur, []string{"#"}); len(imp.Changes) != 0 {
				t.Errorf("changes for an importer: %+v", imp.Changes)
			}
		})
	}
}
