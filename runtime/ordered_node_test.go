package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// On a node without the consistent-hash plugin (the test's own node, which
// runs no plugins), declaring an ordered consumer's topology fails with an
// error naming the plugin and how to enable it.
func TestDisruptiveDeclareWithoutHashExchangePlugin(t *testing.T) {
	testenv.Disruptive(t)
	node := startRabbitNode(t)
	top, err := topology.Build(topology.Spec{
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Consumers: []topology.ConsumerSpec{{Name: testenv.Name("noplugin"), Bindings: []string{"item.added"}, Ordered: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := Dial(ctx, Config{URLs: []string{node.url()}, Logger: testLogger(t), ReconnectMin: 20 * time.Millisecond, ReconnectMax: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Declare(ctx, top)
	var pe *PluginError
	if !errors.As(err, &pe) || pe.Plugin != "rabbitmq_consistent_hash_exchange" {
		t.Fatalf("Declare: %v; want a *PluginError naming rabbitmq_consistent_hash_exchange", err)
	}
	if !strings.Contains(err.Error(), "rabbitmq-plugins enable rabbitmq_consistent_hash_exchange") {
		t.Errorf("error %q does not say how to enable the plugin", err)
	}
}
