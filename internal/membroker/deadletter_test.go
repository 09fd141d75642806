package membroker_test

import (
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/membroker"
)

// x-last-death-* headers are written from 3.13 on; x-first-death-* always.
func TestLastDeathHeadersFollowTheVersion(t *testing.T) {
	for version, want := range map[string]bool{"3.10.8": false, "3.12.14": false, "3.13.7": true, "4.1.0": true} {
		b := membroker.New(membroker.Options{Version: version})
		conn, err := b.Dial()
		if err != nil {
			t.Fatal(err)
		}
		ch := channel(t, conn)
		deadLetterRig(t, ch, "q")
		declare(t, ch, "q", amqp.Table{"x-dead-letter-exchange": "dlx"})
		publish(t, ch, "", "q", body("x"))
		d, ok, err := ch.Get("q", false)
		if err != nil || !ok {
			t.Fatalf("get: %v %v", ok, err)
		}
		must(t, "reject", d.Reject(false))
		dead := b.Messages("dead")
		if len(dead) != 1 {
			t.Fatalf("%s: %d dead-lettered messages, want 1", version, len(dead))
		}
		_, last := dead[0].Headers["x-last-death-reason"]
		_, first := dead[0].Headers["x-first-death-reason"]
		if last != want || !first {
			t.Errorf("%s: x-last-death-reason present %t, x-first-death-reason present %t; want %t and true", version, last, first, want)
		}
		b.Close()
	}
}
