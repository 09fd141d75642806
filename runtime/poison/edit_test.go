package poison_test

import (
	"context"
	"errors"
	"slices"
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

// A lane can hold a fact twice under one id. An edit by the id alone is
// refused with the copies listed, and the lane stays as it was, its order
// included; Copy picks one, the edit moves that one alone, and a copy
// past the last is not found.
func TestEditRefusesAnIDWithSeveralCopies(t *testing.T) {
	l := newLane(t)
	ctx := context.Background()
	archive := poison.DiscardQueue(l.a)
	t.Cleanup(func() {
		if _, err := l.channel().QueueDelete(archive, false, false, false); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	for _, m := range []struct{ id, failure, at string }{
		{"dup", "stock gone", "2024-05-01T10:00:05Z"},
		{"other", "boom", "2024-05-01T10:00:06Z"},
		{"dup", "stock gone again\n\tat stack frame", "2024-05-01T11:00:00Z"},
	} {
		l.publish(l.a.DeadExchange, l.a.Name, amqp.Publishing{MessageId: m.id, Body: []byte(`{"id":"` + m.id + `","payload":{"sku":"old"}}`),
			Headers: amqp.Table{runtime.HeaderOriginalRoutingKey: "item.added", runtime.HeaderFailure: m.failure, runtime.HeaderFailedAt: m.at}})
	}
	validated := 0
	edit := poison.Edit{ID: "dup", Payload: []byte(`{"sku":"new"}`), ValidateVersion: func(string, int, []byte) error {
		validated++
		return nil
	}}
	lane := func() []string {
		msgs, err := poison.List(ctx, l.conn, l.a, poison.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range msgs {
			out = append(out, m.ID+" "+m.Failure)
		}
		return out
	}
	before := lane()

	_, err := poison.EditMessage(ctx, l.conn, l.a, edit)
	var copies *poison.CopiesError
	if !errors.Is(err, poison.ErrSeveralCopies) || errors.Is(err, poison.ErrNotFound) || !errors.As(err, &copies) {
		t.Fatalf("edit by a shared id: %v, want a CopiesError matching ErrSeveralCopies", err)
	}
	if len(copies.Copies) != 2 || copies.Copies[0].N != 1 || copies.Copies[0].Position != 1 || copies.Copies[1].N != 2 || copies.Copies[1].Position != 3 ||
		copies.Copies[1].Failure != "stock gone again\n\tat stack frame" {
		t.Errorf("copies: %+v", copies.Copies)
	}
	want := `edit dup in ` + l.a.PoisonQueue + `: 2 messages have id "dup": ` +
		`copy 1 at position 1 (item.added, failed at 2024-05-01T10:00:05Z: stock gone); ` +
		`copy 2 at position 3 (item.added, failed at 2024-05-01T11:00:00Z: stock gone again …); nothing changed`
	if err.Error() != want {
		t.Errorf("error:\n%s\nwant:\n%s", err, want)
	}
	if validated != 0 {
		t.Errorf("the payload was checked %d times before the edit knew which message it edits", validated)
	}
	if got := lane(); !slices.Equal(got, before) || l.depth(l.a.Queue) != 0 || l.depth(archive) != 0 {
		t.Fatalf("after the refused edit the lane is %q (was %q), work %d, archive %d", got, before, l.depth(l.a.Queue), l.depth(archive))
	}

	edit.Copy = 3
	if _, err := poison.EditMessage(ctx, l.conn, l.a, edit); !errors.Is(err, poison.ErrNotFound) || errors.Is(err, poison.ErrSeveralCopies) {
		t.Errorf("edit of copy 3: %v, want not found", err)
	}

	edit.Copy = 2
	m, err := poison.EditMessage(ctx, l.conn, l.a, edit)
	if err != nil || m.Failure != "stock gone again\n\tat stack frame" {
		t.Fatalf("edit of copy 2: %+v, %v", m, err)
	}
	if got, want := lane(), before[:2]; !slices.Equal(got, want) {
		t.Errorf("after editing copy 2 the lane is %q, want %q", got, want)
	}
	work := l.take(l.a.Queue)
	if len(work) != 1 || string(work[0].Body) != `{"id":"dup","payload":{"sku":"new"}}` || work[0].Headers[poison.HeaderLastFailure] != "stock gone again\n\tat stack frame" {
		t.Errorf("the work queue holds %d messages: %+v", len(work), work)
	}
	if n := l.depth(archive); n != 1 {
		t.Errorf("the archive holds %d, want the edited original", n)
	}
}
