package runtime

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/internal/transport"
	"github.com/warrenbus/warren/runtime/topology"
)

// superStreamSpec is a test-unique spec with a super stream of the
// "item.#" facts in partitions, and the given consumers of it.
func superStreamSpec(partitions int, specs ...topology.ConsumerSpec) topology.Spec {
	spec := topology.Spec{
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Streams:   []topology.StreamSpec{{Name: testenv.Name("items-super"), Bindings: []string{"item.#"}, MaxAge: time.Hour, Partitions: partitions}},
	}
	for _, s := range specs {
		s.Name = testenv.Name(s.Name)
		s.Stream = spec.Streams[0].Name
		spec.Consumers = append(spec.Consumers, s)
	}
	return spec
}

// Super streams are declared on RabbitMQ 3.11 and later; on an older
// broker Declare refuses them, naming the version, before declaring
// anything. Declared, the same topology declares again unchanged, and one
// with another partition count is refused, nothing of it declared.
func TestSuperStreamDeclare(t *testing.T) {
	probe := newBroker(t)
	version := transport.Network{Connection: probe.raw}.ServerVersion()
	spec := superStreamSpec(3, topology.ConsumerSpec{Name: "group", Bindings: []string{"item.#"}, Backoff: testLadder})
	top, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	conn := probe.dial(Config{Topology: &topology.Topology{}})
	if !topology.SupportsSuperStreams(version) {
		err := conn.Declare(context.Background(), top)
		var ve *BrokerVersionError
		if !errors.As(err, &ve) || ve.Version != version || ve.Min != "3.11" {
			t.Fatalf("Declare of a super stream on RabbitMQ %s: %v; want a *BrokerVersionError naming %s and 3.11", version, err, version)
		}
		t.Logf("refused: %v", err)
		if _, err := amqpmsg.InspectQueue(context.Background(), conn, top.Consumers[0].PoisonQueue); !errors.Is(err, amqpmsg.ErrNoQueue) {
			t.Errorf("after the refusal, inspecting %s: %v; want no such queue", top.Consumers[0].PoisonQueue, err)
		}
		return
	}
	b := newBrokerFrom(t, testenv.AMQPURL(t), spec)
	for _, p := range b.top.SuperStreams()[0].Partitions {
		if _, err := amqpmsg.InspectQueue(context.Background(), conn, p); err != nil {
			t.Fatalf("partition %s: %v", p, err)
		}
	}
	if err := conn.Declare(context.Background(), b.top); err != nil {
		t.Fatalf("declaring the same super stream again: %v", err)
	}

	// Four partitions instead of three, with a consumer of its own.
	spec4 := spec
	spec4.Streams = []topology.StreamSpec{spec.Streams[0]}
	spec4.Streams[0].Partitions = 4
	spec4.Consumers = []topology.ConsumerSpec{{Name: testenv.Name("late"), Bindings: []string{"item.#"}, Stream: spec.Streams[0].Name, Backoff: testLadder}}
	top4, err := topology.Build(spec4)
	if err != nil {
		t.Fatal(err)
	}
	err = conn.Declare(context.Background(), top4)
	var pe *PartitionCountError
	if !errors.As(err, &pe) || pe.Have != 3 || pe.Want != 4 || pe.Stream != spec.Streams[0].Name {
		t.Fatalf("Declare with 4 partitions over 3: %v; want a *PartitionCountError 3 -> 4", err)
	}
	t.Logf("refused: %v", err)
	for _, q := range []string{top4.Consumers[0].PoisonQueue, topology.PartitionStream(spec.Streams[0].Name, 3)} {
		if _, err := amqpmsg.InspectQueue(context.Background(), conn, q); !errors.Is(err, amqpmsg.ErrNoQueue) {
			t.Errorf("after the refusal, inspecting %s: %v; want no such queue", q, err)
		}
	}
	// Fewer is refused as well.
	spec4.Streams[0].Partitions = 2
	top2, err := topology.Build(spec4)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Declare(context.Background(), top2); !errors.As(err, &pe) || pe.Have != 3 || pe.Want != 2 {
		t.Fatalf("Declare with 2 partitions over 3: %v; want a *PartitionCountError 3 -> 2", err)
	}
}
