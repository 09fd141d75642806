package membroker_test

import (
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/membroker"
)

// Reusing a consumer tag on a channel is a connection error (530): the
// connection closes, not only the channel.
func TestReusedConsumerTagClosesTheConnection(t *testing.T) {
	b := membroker.New(membroker.Options{})
	defer b.Close()
	conn, err := b.Dial()
	if err != nil {
		t.Fatal(err)
	}
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	ch := channel(t, conn)
	declare(t, ch, "q", nil)
	consume(t, ch, "q", "same", false)
	_, err = ch.Consume("q", "same", false, false, false, false, nil)
	if ae, ok := err.(*amqp.Error); !ok || ae.Code != amqp.NotAllowed {
		t.Errorf("second consume with the tag: %v, want 530", err)
	}
	if e := await(t, closed, "the connection's close"); e.Code != amqp.NotAllowed {
		t.Errorf("connection closed with %v, want 530", e)
	}
	if _, err := conn.Channel(); err != amqp.ErrClosed {
		t.Errorf("channel on the closed connection: %v, want %v", err, amqp.ErrClosed)
	}
}
