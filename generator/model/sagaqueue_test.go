package model

import (
	"strings"
	"testing"
)

// sagaFiles is a directory with one saga, "checkout", whose manifest entry
// ends with extra (a key and value, with a leading comma), and one consumer
// named consumer.
func sagaFiles(extra, consumer string) map[string]string {
	return map[string]string{
		"warren.json": `{"package": "p", "consumers": {"` + consumer + `": {"bindings": ["order.placed"]}},
			"sagas": {"checkout": {"state": "state.json", "startsWith": ["order.placed"],
				"handles": {"order.placed": {"correlation": "/order_id"}}` + extra + `}}}`,
		"placed.json": `{"x-routing-key": "order.placed", "type": "object", "required": ["order_id"], "properties": {"order_id": {"type": "string"}}}`,
		"state.json":  `{"type": "object", "properties": {"status": {"type": "string"}}}`,
	}
}

// TestSagaQueue: a saga's work queue is "saga.<name>", or the manifest's
// "queue", named as a consumer is (a team's prefix, say), with its poison
// queue and retry ladder named after it; a queue that another consumer
// has already is an error naming both.
func TestSagaQueue(t *testing.T) {
	for _, tc := range []struct{ extra, want string }{
		{``, "saga.checkout"},
		{`, "queue": "billing.checkout-saga"`, "billing.checkout-saga"},
	} {
		m, err := build(t, sagaFiles(tc.extra, "mailer"))
		if err != nil {
			t.Fatalf("%s: %v", tc.want, err)
		}
		if got := m.Sagas[0].QueueName(); got != tc.want {
			t.Errorf("queue name %q, want %q", got, tc.want)
		}
		c, ok := m.Topology.Consumer(tc.want)
		if !ok || m.Sagas[0].Topology == nil || m.Sagas[0].Topology.Name != tc.want {
			t.Fatalf("the topology has no consumer %q linked to the saga", tc.want)
		}
		if c.Queue != tc.want || c.PoisonQueue != tc.want+".poison" {
			t.Errorf("work queue %q and poison queue %q, want %q and %q.poison", c.Queue, c.PoisonQueue, tc.want, tc.want)
		}
	}
	_, err := build(t, sagaFiles(`, "queue": "billing.checkout"`, "billing.checkout"))
	want := `/sagas/checkout/queue: saga "checkout": queue "billing.checkout" is the work queue of consumer "billing.checkout" already: expected a name of its own`
	if err == nil || strings.Count(err.Error(), "\n") > 0 || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("a saga queue named as a consumer:\n%v\nwant one error ending in:\n%s", err, want)
	}
}

// Two timeouts whose names differ only in '-' and '_' would make one Go
// method of the saga's interface: an error at the second, naming both,
// not code that does not compile.
func TestSagaTimeoutsWithOneGoName(t *testing.T) {
	_, err := build(t, sagaFiles(`, "timeouts": {"payment-due": {}, "payment_due": {}}`, "mailer"))
	want := `/sagas/checkout/timeouts/payment_due: saga "checkout": timeout "payment_due": Go name "TimeoutPaymentDue" of its handler method is already taken by timeout "payment-due"; rename one of them`
	if err == nil || strings.Count(err.Error(), "\n") > 0 || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("two timeouts of one Go name:\n%v\nwant one error ending in:\n%s", err, want)
	}
	if _, err := build(t, sagaFiles(`, "timeouts": {"payment-due": {}, "ship-due": {}}`, "mailer")); err != nil {
		t.Errorf("two timeouts of two Go names: %v", err)
	}
}

// Two sagas of one Go name are told to rename one of them: a saga takes
// no "title", so the fix for a struct's name does not apply.
func TestSagasOfOneGoName(t *testing.T) {
	files := sagaFiles("", "mailer")
	files["warren.json"] = `{"package": "p", "consumers": {"mailer": {"bindings": ["order.placed"]}},
		"sagas": {
			"order-flow": {"state": "state.json", "startsWith": ["order.placed"], "handles": {"order.placed": {"correlation": "/order_id"}}},
			"order_flow": {"state": "state.json", "startsWith": ["order.placed"], "handles": {"order.placed": {"correlation": "/order_id"}}}}}`
	_, err := build(t, files)
	if err == nil || !strings.Contains(err.Error(), "rename one of them") || strings.Contains(err.Error(), `"title"`) {
		t.Errorf("two sagas of one Go name: %v; want to be told to rename one of them, and nothing of a title", err)
	}
}
