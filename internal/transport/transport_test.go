package transport

import (
	"context"
	"errors"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

func TestDialReachesTheTransportOfARegisteredScheme(t *testing.T) {
	refused := errors.New("refused by the registered transport")
	var dialed string
	Register("registry-test", func(_ context.Context, url string, _ amqp.Config) (Connection, error) {
		dialed = url
		return nil, refused
	})
	if _, err := Dial(context.Background(), "registry-test://bus-7/", amqp.Config{}); !errors.Is(err, refused) {
		t.Fatalf("Dial = %v, want the registered transport's error", err)
	}
	if dialed != "registry-test://bus-7/" {
		t.Errorf("the registered transport was dialed with %q", dialed)
	}
	for _, url := range []string{"amqp://guest:guest@127.0.0.1:5672/", "registry-test", "other://bus-7/"} {
		if _, ok := Registered(url); ok {
			t.Errorf("Registered(%q) = true, want false", url)
		}
	}
}
