package poison_test

import (
	"context"
	"errors"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/poison"
)

// An edit checks the new payload with the version the message was
// written under (x-fact-version; 0 without the header), and a refusal
// changes nothing.
func TestEditChecksTheMessagesVersion(t *testing.T) {
	l := newLane(t)
	ctx := context.Background()
	archive := poison.DiscardQueue(l.a)
	t.Cleanup(func() {
		if _, err := l.channel().QueueDelete(archive, false, false, false); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	for id, version := range map[string]any{"v2": int64(2), "none": nil} {
		h := amqp.Table{runtime.HeaderOriginalRoutingKey: "item.added", runtime.HeaderFailure: "boom"}
		if version != nil {
			h[runtime.HeaderFactVersion] = version
		}
		l.publish(l.a.DeadExchange, l.a.Name, amqp.Publishing{MessageId: id, Body: []byte(`{"id":"` + id + `","payload":{}}`), Headers: h})
	}
	want := map[string]int{"v2": 2, "none": 0}
	for id, v := range want {
		var got []any
		wrong := errors.New("wrong version")
		_, err := poison.EditMessage(ctx, l.conn, l.a, poison.Edit{ID: id, Payload: []byte(`{}`),
			ValidateVersion: func(key string, version int, payload []byte) error {
				got = append(got, key, version, string(payload))
				return wrong
			}})
		if !errors.Is(err, poison.ErrInvalidPayload) || !errors.Is(err, wrong) {
			t.Errorf("edit %s: %v, want the validator's refusal", id, err)
		}
		if len(got) != 3 || got[0] != "item.added" || got[1] != v || got[2] != "{}" {
			t.Errorf("edit %s: validator called with %v, want item.added %d {}", id, got, v)
		}
	}
	if n := l.depth(l.a.PoisonQueue); n != 2 {
		t.Errorf("after refused edits the poison queue holds %d, want 2", n)
	}
	msgs, err := poison.List(ctx, l.conn, l.a, poison.Filter{})
	if err != nil || len(msgs) != 2 {
		t.Fatalf("List: %v, %v", msgs, err)
	}
	for _, m := range msgs {
		if m.Version != want[m.ID] {
			t.Errorf("message %s: Version %d, want %d", m.ID, m.Version, want[m.ID])
		}
	}
}
