package outbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
)

// orderV1 is version 1 of order.placed: the total was called "amount".
type orderV1 struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

// factPlacedV1 checks its payloads: a copy written in the wrong version's
// shape is refused.
var factPlacedV1 = runtime.Fact{RoutingKey: "order.placed", Version: 1, Validate: func(payload []byte) error {
	var v map[string]any
	if err := json.Unmarshal(payload, &v); err != nil {
		return err
	}
	if _, ok := v["amount"]; !ok {
		return fmt.Errorf("/amount: required")
	}
	return nil
}}

// A fact written in several versions during a dual publish window is one
// row; the relay publishes it as one message, as the broker publisher's
// PublishVersions does: the oldest version's envelope as its body, the
// newer one's in its header, one id and time, every version listed; and
// deletes the row once it is confirmed.
func TestFactWrittenInSeveralVersionsIsPublishedInEach(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		b := newBroker(t, true)
		got := b.receive()
		ctx := context.Background()
		tx := s.begin(ctx)
		defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
		id, err := s.ob.WriteVersions(ctx, execer(tx),
			runtime.Copy{Fact: factPlaced, Payload: order{ID: "o-1", Total: 1250}},
			runtime.Copy{Fact: factPlacedV1, Payload: orderV1{ID: "o-1", Amount: 1250}})
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		rows := s.rows()
		if len(rows) != 1 || rows[0].ID != id || rows[0].Version != 2 {
			t.Fatalf("rows = %+v; want one, id %s, version 2 (the newest)", rows, id)
		}
		r := s.relay(b.pub, outbox.RelayConfig{Facts: []runtime.Fact{factPlacedV1, factPlaced}})
		if n, err := r.RelayOnce(ctx); n != 1 || err != nil {
			t.Fatalf("RelayOnce = %d, %v; want 1 fact published", n, err)
		}
		ds := got.wait(1)
		d := ds[0]
		if d.MessageId != id || d.Headers[runtime.HeaderFactVersions] != "1,2" || d.Headers[runtime.HeaderFactVersion] != int64(1) {
			t.Errorf("message id %s, versions %v, version %v; want id %s, versions 1,2, version 1 (the oldest)", d.MessageId, d.Headers[runtime.HeaderFactVersions], d.Headers[runtime.HeaderFactVersion], id)
		}
		var at string
		payloads := map[int]string{}
		for _, v := range []int{1, 2} {
			body, ok := runtime.BodyOfVersion(d.Headers, d.Body, v)
			if !ok {
				t.Fatalf("the message carries no envelope of version %d", v)
			}
			var env runtime.Envelope
			if err := json.Unmarshal(body, &env); err != nil {
				t.Fatal(err)
			}
			if env.ID != id {
				t.Errorf("version %d's envelope id %s, want %s", v, env.ID, id)
			}
			if at != "" && env.OccurredAt.String() != at {
				t.Errorf("versions occurred at %s and %s; want one time", at, env.OccurredAt)
			}
			at = env.OccurredAt.String()
			payloads[v] = string(env.Payload)
		}
		if payloads[1] != `{"id":"o-1","amount":1250}` || payloads[2] != `{"id":"o-1","total":1250}` {
			t.Errorf("payloads by version: %v", payloads)
		}
		if rows := s.rows(); len(rows) != 0 {
			t.Errorf("outbox still has %d rows after the message was confirmed", len(rows))
		}
		if st := r.Stats(); st.Published != 1 {
			t.Errorf("Stats = %+v, want 1 published", st)
		}
		if n, err := r.RelayOnce(ctx); n != 0 || err != nil || got.count() != 1 {
			t.Errorf("second RelayOnce = %d, %v, %d received; want nothing more", n, err, got.count())
		}
	})
}

// A copy that does not match its version's schema, or copies that are not
// versions of one fact, write nothing.
func TestWriteVersionsRefusesBadCopies(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		ctx := context.Background()
		tx := s.begin(ctx)
		defer tx.Rollback(ctx) //nolint:errcheck
		for _, c := range []struct {
			name   string
			copies []runtime.Copy
			want   string
		}{
			{"schema", []runtime.Copy{{Fact: factPlaced, Payload: order{ID: "o-1"}}, {Fact: factPlacedV1, Payload: order{ID: "o-1"}}}, "order.placed version 1: payload does not match its schema: /amount: required"},
			{"same version", []runtime.Copy{{Fact: factPlaced, Payload: order{ID: "o-1"}}, {Fact: factPlaced, Payload: order{ID: "o-1"}}}, "expected other versions of the same fact"},
			{"other fact", []runtime.Copy{{Fact: factPlaced, Payload: order{ID: "o-1"}}, {Fact: runtime.Fact{RoutingKey: "order.shipped"}, Payload: order{ID: "o-1"}}}, "expected other versions of the same fact"},
			{"none", nil, "no copy"},
		} {
			if id, err := s.ob.WriteVersions(ctx, execer(tx), c.copies...); err == nil || id != "" || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: WriteVersions = %q, %v; want an error saying %q", c.name, id, err, c.want)
			}
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if rows := s.rows(); len(rows) != 0 {
			t.Errorf("outbox has %d rows after refused writes", len(rows))
		}
	})
}
