package schemadiff

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// loadDir loads one side of a test case.
func loadDir(t *testing.T, dir string) *Dir {
	t.Helper()
	d, err := Load(context.Background(), dir)
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	return d
}

// brief renders a change on one line for exact comparison:
// verdict rule subject path breaks side:file:line:col.
func brief(c Change) string {
	subject := c.Fact
	if c.Consumer != "" {
		subject = c.Consumer + "->" + c.Fact
	}
	return fmt.Sprintf("%s %s %s %q %s %s:%s:%d:%d", c.Verdict, c.Rule, subject, c.Path, c.Breaks, c.Pos.Side, c.Pos.File, c.Pos.Line, c.Pos.Col)
}

// TestCompare compares each pair testdata/<case>/old and testdata/<case>/new
// in the default mode, FULL, and checks the exact classification: verdict,
// rule, fact, path, the directions it breaks and the position of every
// change. Every case directory must have a row here.
func TestCompare(t *testing.T) {
	tests := map[string][]string{
		// Each new version is judged against the one before it, the kept
		// version against itself; the new files are no move.
		"versions-side-by-side": {
			`intentional required-property-added order.placed "/properties/amount" backward new:order/placed.v2.json:11:15`,
			`intentional type-changed order.placed "/properties/amount" both new:order/placed.v3.json:11:15`,
			`intentional property-removed order.placed "/properties/total" forward old:order/placed.v1.json:10:14`,
			`compatible version-raised order.placed "" none new:order/placed.v2.json:3:16`,
			`compatible version-raised order.placed "" none new:order/placed.v3.json:3:16`,
			`compatible property-added order.placed "/properties/coupon" none new:order/placed.v2.json:12:15`,
			`compatible version-raised order.shipped "" none new:order/shipped.v2.json:3:16`,
			`compatible property-added order.shipped "/properties/carrier" none new:order/shipped.v2.json:9:16`,
		},
		"additional-properties-closed": {
			`breaking additional-properties-closed order.placed "/properties/total" backward new:common/money.json:17:27`,
		},
		"additional-properties-opened": {
			`breaking additional-properties-opened order.placed "" forward old:order/placed.json:6:27`,
		},
		"binding-started-matching": {
			`breaking binding-started-matching ledger->order.shipped "" forward new:warren.json:10:19`,
		},
		"binding-stopped-matching": {
			`breaking binding-stopped-matching order-mailer->order.shipped "" backward new:warren.json:5:19`,
		},
		"branch-added": {
			`breaking branch-added order.placed "/properties/payment/oneOf/0" both new:order/placed.json:37:9`,
		},
		"branch-removed": {
			`breaking branch-removed order.placed "/properties/payment/oneOf/1" backward old:order/placed.json:40:9`,
		},
		// Branches, patterns and a "not" written alike on both sides,
		// whose $refs lead to definitions that changed: the branch is
		// compared where it leads, the other keywords are unclassified,
		// and a description changed behind "not" is no change.
		"changed-behind-ref": {
			`breaking unclassified-change order.placed "/properties/labels" both new:order/placed.json:10:56`,
			`breaking enum-value-removed order.placed "/properties/payment/oneOf/0/properties/brand" backward new:order/placed.json:17:73`,
		},
		"constraint-changed": {
			`breaking constraint-changed order.placed "/properties/note" both new:order/placed.json:34:18`,
		},
		"constraint-loosened": {
			`breaking constraint-loosened order.placed "/properties/id" forward new:order/placed.json:15:20`,
			`breaking constraint-loosened order.placed "/properties/quantity" forward old:order/placed.json:19:18`,
		},
		"constraint-tightened": {
			`breaking constraint-tightened order.placed "/properties/id" backward new:order/placed.json:15:20`,
			`breaking constraint-tightened order.placed "/properties/note" backward new:order/placed.json:34:18`,
			`breaking constraint-tightened order.placed "/properties/quantity" backward new:order/placed.json:19:18`,
		},
		// Shipped in a version window; its upcast is hand-written (see
		// TestANarrowedConstraintIsUpcastByHand).
		"constraint-tightened-shipped-as-version": {
			`intentional constraint-tightened order.placed "/properties/note" backward new:order/placed.v2.json:15:20`,
			`compatible fact-moved order.placed "" none new:order/placed.v1.json:1:1`,
			`compatible version-raised order.placed "" none new:order/placed.v2.json:3:16`,
		},
		"constraint-tightened-in-shared-file": {
			`breaking constraint-tightened order.placed "/properties/total/properties/amount" backward new:common/money.json:10:18`,
		},
		"consumer-added": {
			`compatible consumer-added search-indexer-> "" none new:warren.json:14:23`,
		},
		"saga-queue-renamed": {
			`compatible saga-queue-renamed saga checkout "" none new:warren.json:9:17`,
		},
		"consumer-removed": {
			`compatible consumer-removed ledger-> "" none old:warren.json:9:15`,
		},
		// A stream consumer's work queue is bound to nothing: what stays is
		// its offset (see TestRemovedStreamConsumerMessage).
		"consumer-removed-from-a-stream": {
			`compatible consumer-removed shipping-audit-> "" none old:warren.json:31:23`,
		},
		"default-changed": {
			`compatible default-changed order.placed "/properties/status" none new:order/placed.json:30:18`,
		},
		"delivery-limit-changed": {
			`breaking delivery-limit-changed ledger-> "" both new:warren.json:9:15`,
		},
		"deprecated-changed": {
			`compatible deprecated-changed order.shipped "" none new:order/shipped.json:14:17`,
		},
		"description-changed": {
			`compatible description-changed order.placed "" none new:order/placed.json:4:18`,
		},
		"enum-value-added": {
			`breaking enum-value-added order.placed "/properties/status" forward new:order/placed.json:26:15`,
		},
		// Shipped in a version window with both versions published; its
		// upcast and downcast are hand-written (see
		// TestTheMigrationNamesEachDowncast).
		"enum-value-added-shipped-as-version": {
			`intentional enum-value-added order.shipped "/properties/carrier" forward new:order/shipped.v2.json:16:15`,
			`compatible fact-moved order.shipped "" none new:order/shipped.v1.json:1:1`,
			`compatible version-raised order.shipped "" none new:order/shipped.v2.json:3:16`,
		},
		"enum-value-removed": {
			`breaking enum-value-removed order.placed "/properties/status" backward new:order/placed.json:26:15`,
		},
		"fact-added": {
			// order-mailer binds order.*: the new fact reaches it before it has a handler.
			`breaking binding-started-matching order-mailer->order.shipped "" forward new:warren.json:5:19`,
			`compatible fact-added order.shipped "" none new:order/shipped.json:1:1`,
		},
		"fact-added-unbound": {
			`compatible fact-added invoice.sent "" none new:invoice-sent.json:1:1`,
		},
		"fact-moved": {
			`compatible fact-moved order.shipped "" none new:order/sent.json:1:1`,
		},
		"fact-removed": {
			`breaking fact-removed order.shipped "" backward old:order/shipped.json:1:1`,
		},
		"fact-removed-deprecated": {
			`intentional fact-removed order.shipped "" backward old:order/shipped.json:1:1`,
		},
		"format-annotation-changed": { // no manifest lists the format in assertFormats
			`compatible format-annotation-changed order.placed "/properties/note" none new:order/placed.json:34:17`,
		},
		"no-change": nil,
		"property-added": {
			`breaking property-added order.placed "/properties/gift" forward new:order/placed.json:45:13`,
		},
		"property-added-open": { // the one change that breaks nobody
			`compatible property-added order.placed "/properties/gift" none new:order/placed.json:44:13`,
		},
		"property-made-optional": {
			`breaking property-made-optional order.placed "/properties/quantity" forward new:order/placed.json:16:17`,
		},
		"property-made-required": {
			`breaking property-made-required order.placed "/properties/note" backward new:order/placed.json:11:5`,
		},
		"property-removed": {
			`breaking property-removed order.placed "/properties/note" backward old:order/placed.json:32:13`,
		},
		"property-removed-announced": {
			`intentional property-removed order.placed "/properties/note" backward old:order/placed.json:32:13`,
			`compatible version-raised order.placed "" none new:order/placed.json:69:16`,
		},
		"property-removed-open": {
			`compatible property-removed order.placed "/properties/note" none old:order/placed.json:31:13`,
		},
		// An optional property renamed on an open object: two compatible
		// changes, each saying it is probably a rename and what readers
		// lose (see TestProbableRenameMessages).
		"property-renamed-open": {
			`compatible property-added order.placed "/properties/comment" none new:order/placed.json:31:16`,
			`compatible property-removed order.placed "/properties/note" none old:order/placed.json:31:13`,
		},
		"queue-type-changed": {
			`breaking queue-type-changed ledger-> "" both new:warren.json:9:15`,
		},
		"refactor-into-allof": nil, // so is a property moved into an allOf member
		"refactor-into-ref":   nil, // a property moved into $defs behind a $ref is the same schema
		"required-property-added": {
			`breaking required-property-added order.placed "/properties/sku" both new:order/placed.json:46:12`,
		},
		"retry-ladder-changed": {
			`compatible retry-ladder-changed ledger-> "" none new:warren.json:9:15`,
		},
		// A stream consumer's queues are compared as any consumer's.
		"retry-ladder-changed-on-a-stream": {
			`compatible retry-ladder-changed ledger-> "" none new:warren.json:16:15`,
		},
		"routing-key-changed": {
			`breaking routing-key-changed order.dispatched "" both new:order/shipped.json:2:20`,
		},
		// A raised x-version announces no routing key change: every
		// version of a fact shares its key, so no version window carries
		// a new one.
		"routing-key-changed-announced": {
			`breaking routing-key-changed order.dispatched "" both new:order/shipped.json:2:20`,
			`compatible version-raised order.dispatched "" none new:order/shipped.json:14:16`,
		},
		"routing-key-changed-unbinds": { // ledger binds order.placed by its exact key
			`breaking routing-key-changed order.submitted "" both new:order/placed.json:2:20`,
			`breaking binding-stopped-matching ledger->order.submitted "" backward new:warren.json:10:19`,
		},
		// The generated publish calls write the stream's facts into it
		// directly: queues of other services bound to them on the events
		// exchange stop receiving them.
		"stream-publish-direct": {
			`breaking stream-publish-direct order.placed "" forward new:warren.json:8:18`,
			`breaking stream-publish-direct order.shipped "" forward new:warren.json:8:18`,
		},
		// A new direct stream over a fact published before through the
		// exchange, and a new fact on it, which no queue received before.
		"stream-publish-direct-new-stream": {
			`breaking stream-publish-direct order.placed "" forward new:warren.json:9:18`,
			`compatible fact-added order.cancelled "" none new:order/cancelled.json:1:1`,
		},
		// A stream's declaration that the broker holds, changed in place:
		// Declare refuses it, whatever the mode (see
		// TestStreamSettingsMessages).
		"stream-partitions-changed": {
			`breaking stream-partitions-changed stream orders-by-id "" both new:warren.json:15:21`,
		},
		// maxAge and maxBytes of one stream (one policy carries both),
		// and a segment size of another; a maxAge spelt otherwise,
		// "720h" as "2592000s", is the same x-max-age.
		"stream-retention-changed": {
			`breaking stream-retention-changed stream orders-log "" both new:warren.json:8:17`,
			`breaking stream-retention-changed stream stock-log "" both new:warren.json:21:23`,
		},
		"stream-kind-changed": {
			`breaking stream-kind-changed stream orders-log "" both new:warren.json:10:21`,
		},
		// order-history's start; shipping-audit's time in another zone is
		// the same instant, and stock's "next" is the default.
		"stream-start-changed": {
			`compatible stream-start-changed order-history-> "" none new:warren.json:29:16`,
		},
		// order-history moved from a stream to a super stream, and
		// mailer from its queue to a stream: each starts on its new
		// stream from its start, whatever the mode (see
		// TestStreamConsumerMoves).
		"stream-consumer-moved": {
			`breaking stream-consumer-moved mailer-> "" both new:warren.json:50:17`,
			`breaking stream-consumer-moved order-history-> "" both new:warren.json:28:17`,
		},
		"stream-publish-exchange": { // "publish": "direct" removed: where it was
			`compatible stream-publish-exchange order.placed "" none old:warren.json:8:18`,
			`compatible stream-publish-exchange order.shipped "" none old:warren.json:8:18`,
		},
		"title-changed": {
			`compatible title-changed order.placed "" none new:order/placed.json:3:12`,
		},
		"type-changed": {
			`breaking type-changed order.placed "/properties/id" both new:order/placed.json:14:15`,
		},
		"type-narrowed": {
			`breaking type-narrowed order.placed "/properties/quantity" backward new:order/placed.json:18:15`,
		},
		"type-widened": {
			`breaking type-widened order.placed "/properties/note" forward new:order/placed.json:33:15`,
		},
		"unclassified-change": {
			`breaking unclassified-change order.placed "/properties/note" both new:order/placed.json:34:14`,
		},
		"version-lowered": {
			`breaking version-lowered order.shipped "" both new:order/shipped.json:14:16`,
		},
		"version-retired": {
			`breaking version-retired order.shipped "" backward old:order/shipped.v1.json:1:1`,
		},
		"version-raised": {
			`compatible version-raised order.shipped "" none new:order/shipped.json:14:16`,
		},
		// The publish list dropped: the consumers still pinned to 1 (kept
		// here, so the new directory does not build; it loads) read
		// nothing the publisher publishes now.
		"version-unpublished": {
			`breaking version-unpublished order.placed "" forward old:warren.json:3:33`,
		},
		// The pins moved in the same change: the old consumers, pinned to
		// 1, run until they are deployed.
		"version-unpublished-pins-moved": {
			`breaking version-unpublished order.placed "" forward new:warren.json:3:46`,
		},
		// A window closed once no consumer here was pinned to it.
		"version-unpublished-window-closed": {
			`intentional version-unpublished order.placed "" forward old:warren.json:3:33`,
		},
	}
	dirs, err := filepath.Glob("testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "old")); err != nil {
			continue // not a comparison case
		}
		name := filepath.Base(d)
		want, ok := tests[name]
		if !ok {
			t.Errorf("testdata/%s has no expectation in TestCompare", name)
			continue
		}
		delete(tests, name)
		t.Run(name, func(t *testing.T) {
			r := Compare(loadDir(t, filepath.Join(d, "old")), loadDir(t, filepath.Join(d, "new")))
			var got []string
			for _, c := range r.Changes {
				got = append(got, brief(c))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
		})
	}
	for name := range tests {
		t.Errorf("TestCompare expects testdata/%s, which does not exist", name)
	}
	for _, r := range Rules {
		if _, err := os.Stat(filepath.Join("testdata", r.Name, "old")); err != nil {
			t.Errorf("rule %s has no case directory testdata/%s", r.Name, r.Name)
		}
	}
}

// TestBindingStoppedMatchingMessages checks that the message tells the two
// causes apart: a renamed fact the bindings no longer match, and a binding
// edited while its old form stays on the broker.
func TestBindingStoppedMatchingMessages(t *testing.T) {
	tests := map[string]string{
		"routing-key-changed-unbinds": `consumer "ledger" no longer receives "order.submitted" (formerly "order.placed"): its bindings do not match the new routing key, and the facts queued for it under the old key are poisoned as not handled`,
		"binding-stopped-matching":    `consumer "order-mailer" no longer receives "order.shipped": the facts already queued for it are poisoned as not handled, and so is every later one while its old binding stays on the broker (warren declare --prune removes it)`,
	}
	for name, want := range tests {
		r := Compare(loadDir(t, filepath.Join("testdata", name, "old")), loadDir(t, filepath.Join("testdata", name, "new")))
		var got []string
		for _, c := range r.Changes {
			if c.Rule == BindingStoppedMatching {
				got = append(got, c.Message)
			}
		}
		if diff := cmp.Diff([]string{want}, got); diff != "" {
			t.Errorf("%s: messages (-want +got):\n%s", name, diff)
		}
	}
}

// TestQueueMessagesNameTheConsumerOnce checks the messages of changes to
// a consumer's queues: every format prints the consumer as the change's
// subject ("consumer ledger: ..."), so a message that began with it again
// would read "consumer ledger: consumer "ledger": queue type changed".
func TestQueueMessagesNameTheConsumerOnce(t *testing.T) {
	tests := map[string]string{
		"queue-type-changed":     `queue type changed from quorum to classic, and RabbitMQ refuses to redeclare the existing queues "ledger" and "ledger.poison" with another x-queue-type: `,
		"delivery-limit-changed": `delivery limit changed from 10 to 20, and RabbitMQ refuses to redeclare the existing work queue "ledger" with another x-delivery-limit: `,
		"retry-ladder-changed":   `retry ladder changed from [ledger.retry.1s, ledger.retry.5s, ledger.retry.30s] to [ledger.retry.1s, ledger.retry.10s]; `,
	}
	for name, want := range tests {
		r := Compare(loadDir(t, filepath.Join("testdata", name, "old")), loadDir(t, filepath.Join("testdata", name, "new")))
		if len(r.Changes) != 1 || r.Changes[0].Rule != name || r.Changes[0].Consumer != "ledger" {
			t.Errorf("%s: changes %+v; want one %s of consumer ledger", name, r.Changes, name)
			continue
		}
		if msg := r.Changes[0].Message; !strings.HasPrefix(msg, want) {
			t.Errorf("%s: message %q\nwant it to start %q", name, msg, want)
		}
	}
}

// TestDeploys checks the deploy order given for each direction a fact's
// changes break.
func TestDeploys(t *testing.T) {
	tests := map[string][]Deploy{
		"property-added": {{Fact: "order.placed", Breaks: Forward, First: "consumers",
			Message: "deploy consumers of order.placed before its producer"}},
		"property-removed": {{Fact: "order.placed", Breaks: Backward, First: "producer",
			Message: "deploy the producer of order.placed before its consumers, and those only once no fact written under the old schema is left to read (queues, poison queues, outboxes)"}},
		"type-changed": {{Fact: "order.placed", Breaks: Both,
			Message: "no order is safe for order.placed: consumers built from either schema fail on facts written under the other"}},
		"fact-added": {{Fact: "order.shipped", Breaks: Forward, First: "consumers", Consumers: []string{"order-mailer"},
			Message: "deploy consumer order-mailer before the producer of order.shipped"}},
		"binding-stopped-matching": {{Fact: "order.shipped", Breaks: Backward, First: "drain", Consumers: []string{"order-mailer"},
			Message: "deploy consumer order-mailer only once no order.shipped is left in its queue, then remove its old binding (warren declare --prune)"}},
		"stream-publish-direct": {
			{Fact: "order.placed", Breaks: Forward, First: "consumers",
				Message: `deploy every consumer of order.placed before its producer: those of other services must read stream "order-log" by then instead of a queue bound to the events exchange, since the producer writes order.placed into the stream directly`},
			{Fact: "order.shipped", Breaks: Forward, First: "consumers",
				Message: `deploy every consumer of order.shipped before its producer: those of other services must read stream "order-log" by then instead of a queue bound to the events exchange, since the producer writes order.shipped into the stream directly`},
		},
		"stream-publish-exchange": {},
		"property-added-open":     {},
		"queue-type-changed":      {}, // no fact: the change's message says what the operator does
	}
	for name, want := range tests {
		r := Compare(loadDir(t, filepath.Join("testdata", name, "old")), loadDir(t, filepath.Join("testdata", name, "new")))
		if diff := cmp.Diff(want, r.Deploys); diff != "" {
			t.Errorf("%s: deploys (-want +got):\n%s", name, diff)
		}
	}
}
