package runtime

import (
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/transport"
	"github.com/warrenbus/warren/runtime/topology"
)

// BrokerVersionError reports that the broker's release lacks what the
// topology needs, such as super streams before RabbitMQ 3.11. Nothing was
// declared.
type BrokerVersionError struct {
	Need    string // what needs it, e.g. `super stream "orders"`
	Version string // the version the broker announced
	Min     string // the first release that has it
}

func (e *BrokerVersionError) Error() string {
	v := e.Version
	if v == "" {
		v = "an unknown version"
	}
	return fmt.Sprintf("%s needs RabbitMQ %s or later, and the broker runs %s: upgrade the broker, or use a plain stream (no partitions)", e.Need, e.Min, v)
}

// PartitionCountError reports that a super stream exists on the broker
// with another number of partitions than the topology declares. Nothing
// was declared: a different count would hash ordering keys to other
// partitions than the ones holding their earlier facts.
type PartitionCountError struct {
	Stream string
	Have   int // partitions on the broker
	Want   int // partitions in the topology
}

func (e *PartitionCountError) Error() string {
	return fmt.Sprintf("super stream %q has %d partitions on the broker and the topology declares %d: a super stream's partition count cannot change, since keys would move to partitions other than those holding their earlier facts; keep partitions at %d, or declare a super stream of another name and move its consumers there",
		e.Stream, e.Have, e.Want, e.Have)
}

// checkSuperStreams refuses, before anything is declared, super streams on
// a broker without them and a partition count other than the one of an
// existing super stream.
func checkSuperStreams(conn transport.Connection, t topology.Topology) error {
	supers := t.SuperStreams()
	if len(supers) == 0 {
		return nil
	}
	if v := conn.ServerVersion(); !topology.SupportsSuperStreams(v) {
		return &BrokerVersionError{Need: fmt.Sprintf("super stream %q", supers[0].Name), Version: v, Min: topology.SuperStreamMinVersion}
	}
	for _, ss := range supers {
		have, err := countPartitions(conn, ss)
		if err != nil {
			return fmt.Errorf("super stream %q: count its partitions: %w", ss.Name, err)
		}
		if have > 0 && have != len(ss.Partitions) {
			return &PartitionCountError{Stream: ss.Name, Have: have, Want: len(ss.Partitions)}
		}
	}
	return nil
}

// countPartitions returns how many partitions of ss exist on the broker,
// "<name>-0" onwards without a gap; 0 when the super stream is new. A
// passive declaration of a missing queue closes the channel, so each
// count takes a channel of its own.
func countPartitions(conn transport.Connection, ss topology.SuperStream) (int, error) {
	ch, err := conn.Channel()
	if err != nil {
		return 0, err
	}
	defer ch.Close()
	// One past the declared count tells a larger super stream apart.
	for i := 0; i <= len(ss.Partitions); i++ {
		if _, err := ch.QueueDeclarePassive(topology.PartitionStream(ss.Name, i), true, false, false, false, nil); err != nil {
			var ae *amqp.Error
			if errors.As(err, &ae) && ae.Code == amqp.NotFound {
				return i, nil
			}
			return 0, err
		}
	}
	// As many as declared, and one more: count on to say how many.
	n := len(ss.Partitions) + 1
	for ; n < 10*len(ss.Partitions)+64; n++ {
		if _, err := ch.QueueDeclarePassive(topology.PartitionStream(ss.Name, n), true, false, false, false, nil); err != nil {
			break
		}
	}
	return n, nil
}
