package streamproto

import (
	"context"
	"fmt"
	"sync"
	"time"

	samqp "github.com/rabbitmq/rabbitmq-stream-go-client/pkg/amqp"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/stream"
)

// Position is where a partition's reading starts when this member of a
// group becomes its active consumer: an offset, or, when Offset is below
// 0, Start ("first", "last", "next", or "time" with Time).
type Position struct {
	Offset int64
	Start  string
	Time   time.Time
}

// Message is one fact read from a partition, with what AMQP 0-9-1 gave it
// when it was published through an exchange.
type Message struct {
	Partition   string
	Offset      int64
	Body        []byte
	Exchange    string
	RoutingKey  string
	MessageID   string
	Type        string
	ContentType string
	Timestamp   time.Time
	Headers     map[string]any
}

// Group is the group's handlers: what the broker decides about a
// partition, and each message.
type Group struct {
	SuperStream string
	Consumer    string // the group's name: the consumer's, under which offsets are stored
	// Activated is called when this member becomes a partition's active
	// consumer, and returns where to read it from.
	Activated func(partition string) Position
	// Deactivated is called when the broker hands a partition to another
	// member; the other member starts reading once it returns.
	Deactivated func(partition string)
	// Deliver receives each message, in partition order per partition.
	Deliver func(Message)
}

// Member is one member of a consumer group of a super stream.
type Member struct {
	c       *stream.SuperStreamConsumer
	leaving chan struct{}
	rejoins chan struct{} // closed when rejoin has returned
	once    sync.Once
}

// Join joins g's consumer group on every partition of g.SuperStream, as a
// single active consumer: the broker makes one member of the group active
// per partition.
func (s *Store) Join(ctx context.Context, g Group) (*Member, error) {
	env, err := s.environment(ctx)
	if err != nil {
		return nil, err
	}
	update := func(partition string, active bool) stream.OffsetSpecification {
		if !active {
			g.Deactivated(partition)
			return stream.OffsetSpecification{}.Next()
		}
		return offsetSpec(g.Activated(partition))
	}
	opts := stream.NewSuperStreamConsumerOptions().
		SetConsumerName(g.Consumer).
		SetClientProvidedName(g.Consumer).
		SetManualCommit().
		SetSingleActiveConsumer(stream.NewSingleActiveConsumer(update))
	var closed chan stream.CPartitionClose
	handle := func(cc stream.ConsumerContext, m *samqp.Message) {
		g.Deliver(convert(cc.Consumer.GetStreamName(), cc.Consumer.GetOffset(), m))
	}
	c, err := call(ctx, func() (*stream.SuperStreamConsumer, error) {
		ssc, err := env.NewSuperStreamConsumer(g.SuperStream, handle, opts)
		if err == nil {
			// Registered before the first partition can drop.
			closed = ssc.NotifyPartitionClose(64)
		}
		return ssc, err
	})
	if err != nil {
		return nil, fmt.Errorf("join the consumer group %q of super stream %q: %w", g.Consumer, g.SuperStream, err)
	}
	m := &Member{c: c, leaving: make(chan struct{}), rejoins: make(chan struct{})}
	go func() {
		defer close(m.rejoins)
		m.rejoin(closed, g.Consumer)
	}()
	return m, nil
}

// rejoin subscribes again to a partition whose subscription the broker or
// the network ended (a node went down, the connection dropped), until it
// succeeds or the member leaves. The broker then makes this member, or
// another, the partition's active consumer, whose position comes from the
// stored offset as at any activation.
func (m *Member) rejoin(closed chan stream.CPartitionClose, consumer string) {
	for {
		select {
		case <-m.leaving:
			return
		case e, ok := <-closed:
			if !ok {
				return
			}
			if e.Event.Reason == stream.UnSubscribe {
				continue
			}
			for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
				select {
				case <-m.leaving:
					return
				case <-time.After(wait):
				}
				if err := e.Context.ConnectPartition(e.Partition, stream.OffsetSpecification{}.Next()); err == nil {
					break
				}
			}
		}
	}
}

// LeaveWait bounds how long [Member.Leave] waits for a re-subscription in
// flight (one waits while the client looks for a node that answers, at 1
// to 7 s a try: 5 s was seen to be too short on the cluster, and the
// client then panicked). Closing while one is in flight risks that panic,
// so the bound is generous.
const LeaveWait = 30 * time.Second

// Leave leaves the group: the broker hands this member's partitions to
// the others. It first waits, up to [LeaveWait], for a re-subscription in
// flight: one that ended after the client's Close would add a partition
// consumer that the client no longer tracks, whose close event the client
// sends on a channel it has closed by then (a panic). Close the Store
// right after Leave, so that a re-subscription still in flight fails.
func (m *Member) Leave() error {
	m.once.Do(func() { close(m.leaving) })
	select {
	case <-m.rejoins:
	case <-time.After(LeaveWait):
	}
	return m.c.Close()
}

func offsetSpec(p Position) stream.OffsetSpecification {
	o := stream.OffsetSpecification{}
	switch {
	case p.Offset >= 0:
		return o.Offset(p.Offset)
	case p.Start == "first":
		return o.First()
	case p.Start == "last":
		return o.Last()
	case p.Start == "time":
		return o.Timestamp(p.Time.UnixMilli())
	}
	return o.Next()
}

// convert reads what RabbitMQ kept of an AMQP 0-9-1 publish: the body, the
// properties it maps to AMQP 1.0 properties, the headers as application
// properties, and exchange, routing key and type as message annotations.
func convert(partition string, offset int64, m *samqp.Message) Message {
	out := Message{Partition: partition, Offset: offset, Body: m.GetData(), Headers: map[string]any{}}
	if p := m.Properties; p != nil {
		out.MessageID = fmt.Sprint(orEmpty(p.MessageID))
		out.ContentType = p.ContentType
		out.Timestamp = p.CreationTime
	}
	for k, v := range m.ApplicationProperties {
		out.Headers[k] = v
	}
	for k, v := range m.Annotations {
		key, _ := k.(string)
		val, _ := v.(string)
		switch key {
		case "x-exchange":
			out.Exchange = val
		case "x-routing-key":
			out.RoutingKey = val
		case "x-basic-type":
			out.Type = val
		}
	}
	return out
}

func orEmpty(v any) any {
	if v == nil {
		return ""
	}
	return v
}
