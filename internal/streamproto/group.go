package streamproto

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	// Once a partition's subscription has ended (Lost), nothing more of
	// that subscription is delivered.
	Deliver func(Message)
	// Lost, when set, is called when the member's subscription to a
	// partition ended without the member leaving (its connection dropped,
	// the partition's node went down), before it subscribes again: the
	// broker may already have made another member active on it. No
	// Deliver of that subscription starts after it; one under way may
	// still be, and Lost should make it return (a Deliver waiting for
	// room in a line that a handler holds up would otherwise hold back
	// the member's other partitions, and the re-subscriptions). Every one
	// has returned before the partition's next Activated.
	Lost func(partition string)
	// Retrying, when set, is called with each failed try to subscribe to
	// a partition again after a loss; the next try follows after a pause.
	Retrying func(partition string, err error)
}

// epochs drops what a partition's ended subscription still delivers:
// each partition counts its subscriptions' ends, and a subscription (a
// stream.Consumer) delivers only while the count it first delivered under
// is current. A partition's deliveries hold its read lock, and an end
// waits for its write lock, so that it returns once the deliveries under
// way have; each partition has its own, so that a delivery of one that
// waits holds back no other's end.
type epochs struct {
	mu sync.Mutex                  // guards what follows
	by map[string]*partitionEpoch  // by partition
	of map[*stream.Consumer]uint64 // the count each subscription first delivered under
}

type partitionEpoch struct {
	delivering sync.RWMutex
	ended      uint64 // its subscriptions that ended; guarded by epochs.mu
}

func (e *epochs) partition(name string) *partitionEpoch {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, ok := e.by[name]
	if !ok {
		p = &partitionEpoch{}
		e.by[name] = p
	}
	return p
}

// delivering reports whether c's subscription to partition may still
// deliver; when it may, the partition's read lock is held, and the caller
// releases it once the delivery has returned.
func (e *epochs) delivering(c *stream.Consumer, partition string) (*partitionEpoch, bool) {
	p := e.partition(partition)
	p.delivering.RLock()
	e.mu.Lock()
	now := p.ended
	first, ok := e.of[c]
	if !ok {
		e.of[c], first = now, now
	}
	e.mu.Unlock()
	if first != now {
		p.delivering.RUnlock()
		return nil, false
	}
	return p, true
}

// end notes that partition's subscription ended: no delivery of it
// starts after; then it calls lost, which should make one under way
// return, and returns once those under way have.
func (e *epochs) end(partition string, lost func()) {
	p := e.partition(partition)
	e.mu.Lock()
	p.ended++
	e.mu.Unlock()
	lost()
	p.delivering.Lock()
	defer p.delivering.Unlock()
}

// Member is one member of a consumer group of a super stream.
type Member struct {
	c       *stream.SuperStreamConsumer
	s       *Store
	closed  chan stream.CPartitionClose // the client's partition close events
	leaving chan struct{}
	rejoins chan struct{} // closed when rejoin has returned: no re-subscription is in flight, and none starts
	left    chan error    // the client's Close, once it ran
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
	if err := s.oneNodeGroup(ctx, env, g.SuperStream); err != nil {
		return nil, fmt.Errorf("join the consumer group %q of super stream %q: %w", g.Consumer, g.SuperStream, err)
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
	ep := &epochs{by: map[string]*partitionEpoch{}, of: map[*stream.Consumer]uint64{}}
	handle := func(cc stream.ConsumerContext, m *samqp.Message) {
		partition := cc.Consumer.GetStreamName()
		p, ok := ep.delivering(cc.Consumer, partition)
		if !ok {
			// Its subscription ended: whoever reads the partition next
			// reads this again from the stored offset.
			return
		}
		defer p.delivering.RUnlock()
		g.Deliver(convert(partition, cc.Consumer.GetOffset(), m))
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
	m := &Member{c: c, s: s, closed: closed, leaving: make(chan struct{}), rejoins: make(chan struct{}), left: make(chan error, 1)}
	go func() {
		defer close(m.rejoins)
		m.rejoin(closed, func(partition string) {
			ep.end(partition, func() {
				if g.Lost != nil {
					g.Lost(partition)
				}
			})
		}, g.Retrying)
	}()
	return m, nil
}

// rejoin subscribes again to a partition whose subscription the broker or
// the network ended (a node went down, the connection dropped), until it
// succeeds or the member leaves; lost is called first. The broker then
// makes this member, or another, the partition's active consumer, whose
// position comes from the stored offset as at any activation.
//
// A re-subscription in flight is never abandoned: the client's
// ConnectPartition takes no context, and one that ended after the client's
// Close would add a partition consumer the client no longer tracks, whose
// close event it would send on a channel it has closed by then (a panic).
// Leave so waits for rejoin to return before it closes the client.
func (m *Member) rejoin(closed chan stream.CPartitionClose, lost func(partition string), retrying func(partition string, err error)) {
	var mu sync.Mutex
	var queue []string // partitions to subscribe to again, in the order lost
	more := make(chan struct{}, 1)
	var wg sync.WaitGroup
	// Each loss is told at once, while an earlier partition's
	// re-subscription may still be in flight.
	wg.Go(func() {
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
				lost(e.Partition)
				mu.Lock()
				queue = append(queue, e.Partition)
				mu.Unlock()
				select {
				case more <- struct{}{}:
				default:
				}
			}
		}
	})
	wg.Go(func() {
		for {
			mu.Lock()
			var partition string
			if len(queue) > 0 {
				partition, queue = queue[0], queue[1:]
			}
			mu.Unlock()
			if partition == "" {
				select {
				case <-m.leaving:
					return
				case <-more:
					continue
				}
			}
			var failed func(error)
			if retrying != nil {
				failed = func(err error) {
					retrying(partition, fmt.Errorf("subscribe to partition %q again: %w", partition, err))
				}
			}
			again := m.s.subscribeAgain(m.leaving, func() error {
				return m.c.ConnectPartition(partition, stream.OffsetSpecification{}.Next())
			}, failed)
			if !again {
				return
			}
		}
	})
	wg.Wait()
}

// LeaveWait bounds how long [Member.Leave] waits for the client to close
// when a re-subscription is in flight (one waits while the client looks
// for a node that answers, at 1 to 7 s a try). The close itself never
// happens before that re-subscription has ended: past LeaveWait, Leave
// returns and the client closes in the background once it has.
const LeaveWait = 10 * time.Second

// Leave leaves the group: the broker hands this member's partitions to
// the others. The client is closed once no re-subscription is in flight
// (see rejoin); Leave waits for that up to [LeaveWait], and returns
// [ErrLeavePending] when the close is still to come. Close the Store
// right after Leave: a re-subscription still in flight then ends sooner.
func (m *Member) Leave() error {
	m.once.Do(func() {
		close(m.leaving)
		go func() {
			<-m.rejoins
			// The client sends a partition's close event, from a
			// goroutine of its own, on this channel until it closes it
			// after Close: nobody reads them now, so drain them, lest a
			// full channel hold its sender (and the client's close) for
			// good.
			go drain(m.closed)
			m.left <- m.c.Close()
		}()
	})
	select {
	case err := <-m.left:
		m.left <- err // for a second Leave
		return err
	case <-time.After(LeaveWait):
		return ErrLeavePending
	}
}

// ErrLeavePending is returned by [Member.Leave] when a re-subscription was
// still in flight after [LeaveWait]: the member's client closes once it
// ends.
var ErrLeavePending = errors.New("a re-subscription is still in flight: the member closes once it ends")

// drain reads the close events of a leaving member's partitions until the
// client closes the channel, a while after its Close (or the member's
// connections closed with the Store and nothing more comes).
func drain(closed chan stream.CPartitionClose) {
	idle := time.NewTimer(time.Minute)
	defer idle.Stop()
	for {
		select {
		case _, ok := <-closed:
			if !ok {
				return
			}
		case <-idle.C:
			return
		}
	}
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

// convert reads what RabbitMQ kept of an AMQP 0-9-1 publish (or of a
// direct write, which is kept the same way) as an AMQP 0-9-1 reader of the
// stream is given it: the body; the properties AMQP 1.0 has too; exchange,
// routing key and type from the message annotations; as headers, the
// application properties and, from RabbitMQ 3.13 on, the annotations
// named x- (where those releases keep the headers named x-, such as
// warren's own x-fact-version and x-ordering-key), but for those the
// broker itself keeps there. Releases before 3.13 keep the type as the
// application property x-basic-type, and every header as an application
// property.
//
// The client decodes each message into a new *samqp.Message, so its
// application properties become the headers as they are, not copied.
func convert(partition string, offset int64, m *samqp.Message) Message {
	out := Message{Partition: partition, Offset: offset, Body: m.GetData(), Headers: m.ApplicationProperties}
	if out.Headers == nil {
		out.Headers = map[string]any{}
	}
	if t, ok := out.Headers["x-basic-type"].(string); ok {
		out.Type = t
		delete(out.Headers, "x-basic-type")
	}
	if p := m.Properties; p != nil {
		switch id := p.MessageID.(type) {
		case string:
			out.MessageID = id
		case nil:
		default:
			out.MessageID = fmt.Sprint(id)
		}
		out.ContentType = p.ContentType
		out.Timestamp = p.CreationTime
	}
	for k, v := range m.Annotations {
		key, _ := k.(string)
		switch {
		case key == "x-exchange":
			out.Exchange, _ = v.(string)
		case key == "x-routing-key":
			out.RoutingKey, _ = v.(string)
		case key == "x-basic-type":
			out.Type, _ = v.(string)
		case strings.HasPrefix(key, "x-basic-") || key == "x-death" || !strings.HasPrefix(key, "x-"):
			// What the broker keeps of the AMQP 0-9-1 properties, its own
			// dead-lettering record, and annotations AMQP 0-9-1 readers
			// are not given.
		default:
			out.Headers[key] = v
		}
	}
	return out
}

// oneNodeGroup refuses, when the Store reaches one address only, a super
// stream with a replicated partition: the client would send the
// partition's reader to a replica that address does not reach, and try
// again for good ([ErrOtherNodes]). A group has no other way to read.
func (s *Store) oneNodeGroup(ctx context.Context, env *stream.Environment, superStream string) error {
	s.mu.Lock()
	one := s.opts.AddressResolver != nil
	s.mu.Unlock()
	if !one {
		return nil
	}
	partitions, err := call(ctx, func() ([]string, error) { return env.QueryPartitions(superStream) })
	if err != nil {
		return fmt.Errorf("its partitions: %w", err)
	}
	for _, p := range partitions {
		if err := s.oneNode(ctx, p); err != nil {
			return fmt.Errorf("partition %q: %w: give every node's address", p, err)
		}
	}
	return nil
}
