package membroker_test

import (
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/membroker"
)

func redeclare(t *testing.T, b *membroker.Broker, name string, durable, autoDelete bool, args amqp.Table) error {
	t.Helper()
	conn, err := b.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = channel(t, conn).QueueDeclare(name, durable, autoDelete, false, false, args)
	return err
}

func wantInequivalent(t *testing.T, err error, arg string) {
	t.Helper()
	ae, ok := err.(*amqp.Error)
	if !ok || ae.Code != amqp.PreconditionFailed || !strings.Contains(ae.Reason, "inequivalent arg '"+arg+"'") {
		t.Errorf("redeclaration: %v, want 406 naming %s", err, arg)
	}
}

// A queue declared again with another auto-delete flag is refused, as
// one with another durable flag is.
func TestRedeclareWithAnotherAutoDelete(t *testing.T) {
	b := membroker.New(membroker.Options{})
	defer b.Close()
	if err := redeclare(t, b, "q", false, true, nil); err != nil {
		t.Fatal(err)
	}
	wantInequivalent(t, redeclare(t, b, "q", false, false, nil), "auto_delete")
	if err := redeclare(t, b, "q", false, true, nil); err != nil {
		t.Errorf("the same declaration again: %v", err)
	}
}

// A quorum queue declared again without x-queue-type is refused: RabbitMQ
// 3.10.8 and 4.0.5 both answer 406.
func TestRedeclareQuorumWithoutType(t *testing.T) {
	for _, c := range []struct {
		version string
		refused bool
	}{{"3.10.8", true}, {"3.13.7", true}, {"4.0.5", true}} {
		b := membroker.New(membroker.Options{Version: c.version})
		if err := redeclare(t, b, "q", true, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
			t.Fatal(err)
		}
		err := redeclare(t, b, "q", true, false, nil)
		if c.refused {
			wantInequivalent(t, err, "x-queue-type")
		} else if err != nil {
			t.Errorf("%s: redeclaration without a type: %v, want it accepted", c.version, err)
		}
		b.Close()
	}
}

// RabbitMQ 3's quorum queues refuse the classic x-max-priority and
// x-queue-mode arguments.
func TestQuorumRefusesClassicArguments(t *testing.T) {
	b := membroker.New(membroker.Options{Version: "3.10.8"})
	defer b.Close()
	for _, k := range []string{"x-max-priority", "x-queue-mode"} {
		args := amqp.Table{"x-queue-type": "quorum", k: int32(5)}
		if k == "x-queue-mode" {
			args[k] = "lazy"
		}
		err := redeclare(t, b, "q-"+k, true, false, args)
		ae, ok := err.(*amqp.Error)
		if !ok || ae.Code != amqp.PreconditionFailed || !strings.Contains(ae.Reason, "invalid arg '"+k+"'") {
			t.Errorf("quorum queue with %s: %v, want 406 naming it", k, err)
		}
	}
}
