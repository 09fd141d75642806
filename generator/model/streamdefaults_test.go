package model

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/runtime/topology"
)

// TestStreamConsumerSkipsQueueDefaults checks that the defaults only a
// queue consumer can take (maxLength, and queueType "classic") bound the
// queue consumers' work queues but are not inherited by a stream consumer,
// which refuses them when set on itself: a team that bounds its queues by
// default can still add a stream consumer.
func TestStreamConsumerSkipsQueueDefaults(t *testing.T) {
	files := func(defaults string) map[string]string {
		return map[string]string{
			"warren.json": `{"package": "events",
  "defaults": ` + defaults + `,
  "streams": {"ledger-log": {"bindings": ["ledger.#"]}},
  "consumers": {
    "ledger": {"bindings": ["ledger.#"], "stream": "ledger-log", "deliveryLimit": 7},
    "mailer": {"bindings": ["ledger.#"]},
    "audit": {"bindings": ["ledger.#"], "maxLength": {"bytes": 5000}}
  }}`,
			"posted.json": `{"x-routing-key": "ledger.posted", "type": "object"}`,
		}
	}
	queue := func(t *testing.T, m *Model, consumer string, role topology.Role) topology.Queue {
		t.Helper()
		for _, q := range m.Topology.Queues {
			if q.Consumer == consumer && q.Role == role {
				return q
			}
		}
		t.Fatalf("consumer %s has no %s queue", consumer, role)
		return topology.Queue{}
	}

	t.Run("maxLength", func(t *testing.T) {
		m, err := build(t, files(`{"maxLength": {"messages": 1000}, "maxAttempts": 2, "backoff": ["1s"]}`))
		if err != nil {
			t.Fatal(err)
		}
		if q := queue(t, m, "mailer", topology.RoleWork); q.MaxLength != 1000 || q.MaxLengthBytes != 0 {
			t.Errorf("mailer's work queue: maxLength %d messages, %d bytes; want the default 1000 messages", q.MaxLength, q.MaxLengthBytes)
		}
		if q := queue(t, m, "audit", topology.RoleWork); q.MaxLength != 0 || q.MaxLengthBytes != 5000 {
			t.Errorf("audit's work queue: maxLength %d messages, %d bytes; want its own 5000 bytes, replacing the default whole", q.MaxLength, q.MaxLengthBytes)
		}
		// The stream consumer's work queue (its retries, deferrals and held
		// facts) stays unbounded and quorum; the other defaults still apply.
		q := queue(t, m, "ledger", topology.RoleWork)
		if q.MaxLength != 0 || q.MaxLengthBytes != 0 {
			t.Errorf("ledger's work queue: maxLength %d messages, %d bytes; want no bound: a stream consumer takes no maxLength", q.MaxLength, q.MaxLengthBytes)
		}
		if q.Type != topology.Quorum || q.DeliveryLimit != 7 {
			t.Errorf("ledger's work queue: type %s, delivery limit %d; want quorum, 7", q.Type, q.DeliveryLimit)
		}
		if c := m.Consumers[slices.IndexFunc(m.Consumers, func(c *Consumer) bool { return c.Name == "ledger" })].Topology; c.MaxAttempts != 2 || len(c.Tiers) != 1 {
			t.Errorf("ledger: maxAttempts %d, %d retry tiers; want the defaults' 2 and 1", c.MaxAttempts, len(c.Tiers))
		}
	})

	t.Run("queueType classic", func(t *testing.T) {
		m, err := build(t, files(`{"queueType": "classic"}`))
		if err != nil {
			t.Fatal(err)
		}
		if q := queue(t, m, "mailer", topology.RoleWork); q.Type != topology.Classic {
			t.Errorf("mailer's work queue: type %s, want the default classic", q.Type)
		}
		for _, role := range []topology.Role{topology.RoleWork, topology.RolePoison} {
			if q := queue(t, m, "ledger", role); q.Type != topology.Quorum {
				t.Errorf("ledger's %s queue: type %s, want quorum: a stream consumer's queues are quorum queues", role, q.Type)
			}
		}
	})

	// Set on the stream consumer itself, they are the same errors as ever.
	for _, tt := range []struct{ name, set, want string }{
		{"own maxLength", `"maxLength": {"messages": 10}`, `/consumers/ledger/maxLength: consumer "ledger": maxLength: a stream consumer reads a stream, bounded by the stream's own retention (maxAge, maxBytes); remove maxLength`},
		{"own queueType", `"queueType": "classic"`, `/consumers/ledger/queueType: consumer "ledger": queueType "classic": a stream consumer's work and poison queues are quorum queues`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs := files(`{"maxLength": {"messages": 1000}, "queueType": "classic"}`)
			fs["warren.json"] = strings.Replace(fs["warren.json"], `"deliveryLimit": 7`, tt.set, 1)
			_, err := build(t, fs)
			var list load.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("error = %v, want a load.ErrorList", err)
			}
			if !strings.Contains(err.Error(), tt.want) || len(list) != 1 {
				t.Errorf("error:\n%v\nwant only %q", err, tt.want)
			}
		})
	}
}

// An ordered stream consumer is refused once, for being a stream consumer:
// not also for facts without an ordering key, which would send its author
// to add one for nothing.
func TestOrderedStreamConsumerIsOneError(t *testing.T) {
	_, err := build(t, map[string]string{
		"warren.json": `{"package": "events",
  "streams": {"ledger-log": {"bindings": ["ledger.#"]}},
  "consumers": {"ledger": {"bindings": ["ledger.#"], "stream": "ledger-log", "ordered": true}}}`,
		"posted.json": `{"x-routing-key": "ledger.posted", "type": "object"}`,
	})
	if err == nil {
		t.Fatal("an ordered stream consumer was accepted")
	}
	msg := err.Error()
	if !strings.Contains(msg, "a stream consumer cannot be ordered") {
		t.Errorf("error %q does not say a stream consumer cannot be ordered", msg)
	}
	if strings.Contains(msg, "x-ordering-key") {
		t.Errorf("error %q also asks for an ordering key", msg)
	}
}
