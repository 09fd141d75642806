package outbox_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/outbox"
)

// TestCommitWakesTheRelay: with a poll interval of an hour, facts written
// after the relay started still arrive, one after the other, in the order
// they were written. Without a wake-up Run relays at its start and, on
// PostgreSQL, once after its LISTEN begins, then sleeps for the hour: the
// third fact, written after the first two arrived, arrives only because
// its commit woke the relay (NOTIFY on PostgreSQL, the in-process wake-up
// of Write on SQLite).
func TestCommitWakesTheRelay(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		b := newBroker(t, true)
		got := b.receive()
		logs := &recorder{}
		r := s.relay(b.pub, outbox.RelayConfig{PollInterval: time.Hour, Logger: slog.New(logs)})
		runRelay(t, r)
		if s.dialect == outbox.Postgres {
			testenv.Eventually(t, "the relay listening", func() bool { return logs.has("listening for committed rows") })
		}
		var ids []string
		for i := range 3 {
			ids = append(ids, s.write(factPlaced, order{ID: "o", Total: i})...)
			got.wait(len(ids))
		}
		for i, d := range got.wait(3) {
			if d.MessageId != ids[i] {
				t.Errorf("message %d is %s; want %s (the order they were written in)", i, d.MessageId, ids[i])
			}
		}
	})
}

// has reports whether a record's message contains text.
func (r *recorder) has(text string) bool {
	for _, rec := range r.records() {
		if strings.Contains(rec.Message, text) {
			return true
		}
	}
	return false
}

// count returns how many records' messages contain text.
func (r *recorder) count(text string) int {
	n := 0
	for _, rec := range r.records() {
		if strings.Contains(rec.Message, text) {
			n++
		}
	}
	return n
}
