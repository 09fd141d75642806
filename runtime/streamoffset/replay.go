package streamoffset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/stream"

	"github.com/warrenbus/warren/internal/streamproto"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

// Broker is what reading a stream over AMQP needs: a *runtime.Conn.
type Broker interface {
	OpenChannel(ctx context.Context) (*amqp.Channel, error)
	StreamEndpoint() (runtime.StreamEndpoint, error)
}

// DefaultTailWait bounds how long reading a stream's tail waits for its
// last chunk before it takes the stream for empty.
const DefaultTailWait = streamproto.DefaultTailWait

// Lag is how far a stream consumer's stored offset is behind the stream's
// tail, both exact at the moment they were read. A consumer of a super
// stream keeps an offset per partition: it has a Lag per partition.
type Lag struct {
	Stream string // the stream, or the super stream's partition
	// SuperStream is the super stream whose partition Stream is; "" for
	// a plain stream.
	SuperStream string
	Name        string // the offset name: the consumer's, or a replay's
	// Tail is the offset of the stream's last fact; HasTail is false when
	// the stream holds no fact.
	Tail    int64
	HasTail bool
	// Stored is the offset stored under Name; HasStored is false when
	// none is (the consumer never settled a fact).
	Stored    int64
	HasStored bool
	// Start is, for a consumer's own name with nothing stored under it,
	// the offset it reads from: where its start ("next" or "last") was
	// fixed at its first start when that was the stream's first offset
	// ([runtime.StartSuffix]), or where its declared start ("first", an
	// offset, a time) points now (past Tail when at no fact yet).
	// HasStart is false otherwise: a "next" or "last" not fixed yet (the
	// consumer never started) reads from the tail of its first start,
	// which is not known before it, and a stream that holds no fact.
	Start    int64
	HasStart bool
	// Until is a replay's bound (the last offset it reads), stored by
	// warren replay --limit; HasUntil is false without one (and for a
	// consumer's own name).
	Until    int64
	HasUntil bool
}

// Remaining is how many offsets a bounded replay has left to its bound;
// ok is false without a bound or with nothing stored yet.
func (l Lag) Remaining() (n int64, ok bool) {
	if !l.HasUntil || !l.HasStored {
		return 0, false
	}
	return max(l.Until-l.Stored, 0), true
}

// Offsets is how many offsets lie after Stored (or from Start) up to
// Tail: the facts not yet settled, plus the stream's own offset-tracking
// records among them (each offset any reader of the stream stores takes
// one). ok is false when it is not known: no offset stored while the
// stream holds facts.
func (l Lag) Offsets() (n int64, ok bool) {
	switch {
	case !l.HasTail:
		return 0, true
	case !l.HasStored && l.HasStart:
		return max(l.Tail-l.Start+1, 0), true
	case !l.HasStored:
		return 0, false
	}
	return max(l.Tail-l.Stored, 0), true
}

// Figures are l's tail, stored offset and lag ([Lag.Offsets]) as a
// report shows them: each nil when not known (no fact in the stream,
// nothing stored, a lag that cannot be told), as JSON's null.
func (l Lag) Figures() (tail, stored, lag *int64) {
	if l.HasTail {
		tail = &l.Tail
	}
	if l.HasStored {
		stored = &l.Stored
	}
	if n, ok := l.Offsets(); ok {
		lag = &n
	}
	return tail, stored, lag
}

// ErrNoStream is matched by a lag's error when its stream (or partition)
// does not exist on the broker: the topology is not declared.
var ErrNoStream = errors.New("the stream does not exist")

// LagStreams returns the streams on which stream consumer c keeps its
// offsets, each with a lag of its own: its stream, or, when it reads a
// super stream, the super stream's partitions in order.
func LagStreams(c topology.Consumer) []string {
	if len(c.Partitions) > 0 {
		return c.Partitions
	}
	if c.Stream == "" {
		return nil
	}
	return []string{c.Stream}
}

// ReadLag reads the tail of c's stream and the offset stored under name
// (c's own name when name is ""), over the stream protocol at b's broker,
// on a connection of its own. A [LagReader] keeps one for many readings.
// A consumer of a super stream has a lag per partition: [ReadLags].
func ReadLag(ctx context.Context, b Broker, c topology.Consumer, name string) (Lag, error) {
	r := NewLagReader(b)
	defer r.Close()
	return r.Read(ctx, c, name)
}

// ReadLags is [ReadLag] on each stream of [LagStreams]: one Lag for a
// plain stream's consumer, one per partition for a super stream's.
func ReadLags(ctx context.Context, b Broker, c topology.Consumer, name string) ([]Lag, error) {
	r := NewLagReader(b)
	defer r.Close()
	return r.ReadAll(ctx, c, name)
}

// LagReader reads lags over one stream-protocol connection, opened at the
// first reading and again after the broker closed it: for a console that
// reads every few seconds, or a status of many stream consumers.
type LagReader struct {
	b  Broker
	mu sync.Mutex
	s  *streamproto.Store
}

// NewLagReader returns a LagReader of b's broker; Close closes it.
func NewLagReader(b Broker) *LagReader { return &LagReader{b: b} }

// Read is [ReadLag] on the reader's connection. It refuses a consumer of
// a super stream, whose offsets are kept per partition: [LagReader.ReadAll]
// and [LagReader.ReadEach] read them.
func (r *LagReader) Read(ctx context.Context, c topology.Consumer, name string) (Lag, error) {
	switch {
	case c.Stream == "":
		return Lag{}, fmt.Errorf("consumer %q reads a queue, not a stream", c.Name)
	case len(c.Partitions) > 0:
		return Lag{}, fmt.Errorf("consumer %q reads super stream %q, which keeps an offset per partition (%d): read each partition's lag with ReadAll or ReadEach", c.Name, c.Stream, len(c.Partitions))
	}
	out := r.ReadEach(ctx, c, name)
	return out[0].Lag, out[0].Err
}

// ReadAll is [ReadLags] on the reader's connection: the first error of
// [LagReader.ReadEach], or every lag.
func (r *LagReader) ReadAll(ctx context.Context, c topology.Consumer, name string) ([]Lag, error) {
	var out []Lag
	for _, l := range r.ReadEach(ctx, c, name) {
		if l.Err != nil {
			return nil, l.Err
		}
		out = append(out, l.Lag)
	}
	return out, nil
}

// LagResult is one lag that [LagReader.ReadEach] read, or, with Err, why
// it could not: Stream, SuperStream and Name are set either way.
type LagResult struct {
	Lag
	Err error
}

// ReadEach reads the lag of each of names (c's own name for "" or with
// no names) on each stream of [LagStreams](c): for each name in turn, a
// LagResult per stream. It reads each stream's tail once, not once per
// name: a stream that holds no fact is known so only after
// [DefaultTailWait]. Each
// lag's other figures are the offset stored under the name and, for a
// name other than c's, a replay's bound. A stream that does not exist is
// an error matching [ErrNoStream]; a failed reading leaves the others
// standing.
func (r *LagReader) ReadEach(ctx context.Context, c topology.Consumer, names ...string) []LagResult {
	if len(names) == 0 {
		names = []string{""}
	}
	streams := LagStreams(c)
	var out []LagResult
	for _, name := range names {
		if name == "" {
			name = c.Name
		}
		for _, st := range streams {
			l := Lag{Stream: st, Name: name}
			if len(c.Partitions) > 0 {
				l.SuperStream = c.Stream
			}
			out = append(out, LagResult{Lag: l})
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.s == nil {
		s, err := open(ctx, r.b)
		if err != nil {
			for i := range out {
				out[i].Err = err
			}
			return out
		}
		r.s = s
	}
	type tail struct {
		last  int64
		found bool
		err   error
	}
	// One tail at a time: attaching several consumers at once on the
	// connection left one attach unanswered for good (a status hung
	// reading a super stream's partitions).
	tails := make([]tail, len(streams))
	for i, st := range streams {
		t := &tails[i]
		t.last, t.found, t.err = r.s.Tail(ctx, st)
		t.err = noStream(t.err)
	}
	lost := false // the connection failed: the next reading opens another
	for i := range out {
		res := &out[i]
		t := tails[i%len(streams)]
		if res.Err = t.err; res.Err == nil {
			res.Tail, res.HasTail = t.last, t.found
			res.Err = r.readStored(ctx, c, &res.Lag)
		}
		lost = lost || res.Err != nil && !errors.Is(res.Err, ErrNoStream)
	}
	if lost {
		// At the broker's current address. A stream that does not
		// exist says nothing about the connection.
		_ = r.s.Close()
		r.s = nil
	}
	return out
}

// readStored reads into l the offset stored under l.Name on l.Stream and,
// for a name other than c's own, the replay's bound.
func (r *LagReader) readStored(ctx context.Context, c topology.Consumer, l *Lag) error {
	var err error
	if l.Stored, l.HasStored, err = r.s.QueryOffset(ctx, l.Name, l.Stream); err != nil {
		return noStream(fmt.Errorf("query offset %q of stream %q: %w", l.Name, l.Stream, err))
	}
	if l.Name == c.Name {
		if l.HasStored {
			return nil
		}
		ref := l.Name + runtime.StartSuffix
		if l.Start, l.HasStart, err = r.s.QueryOffset(ctx, ref, l.Stream); err != nil {
			return noStream(fmt.Errorf("query offset %q of stream %q: %w", ref, l.Stream, err))
		}
		if l.HasStart || !l.HasTail {
			return nil
		}
		return r.readStart(ctx, c.Start, l)
	}
	ref := l.Name + runtime.ReplayUntilSuffix
	if l.Until, l.HasUntil, err = r.s.QueryOffset(ctx, ref, l.Stream); err != nil {
		return noStream(fmt.Errorf("query offset %q of stream %q: %w", ref, l.Stream, err))
	}
	return nil
}

// readStart sets l.Start to the offset a consumer with start, which has
// stored nothing, reads from now, on a stream that holds facts: "first"
// the stream's first fact; an offset that one, or the first fact when
// retention has removed it; a time the first chunk of facts written at or
// after it (the broker's start for a timestamp), or past the tail when
// none was. "next" and "last" are fixed at the consumer's first start
// (runtime's fixStart), to the tail of then: before it, which fact it
// reads first is not known, and l.Start is left unset.
func (r *LagReader) readStart(ctx context.Context, start topology.Start, l *Lag) error {
	var since time.Time
	switch start.Kind {
	case topology.StartFirst:
	case topology.StartOffset:
		if start.Offset > l.Tail {
			l.Start, l.HasStart = start.Offset, true
			return nil
		}
	case topology.StartTime:
		since = start.Time
	default:
		return nil
	}
	first, found, err := r.s.HeadWithin(ctx, l.Stream, since, DefaultTailWait)
	switch {
	case err != nil:
		return noStream(fmt.Errorf("read where %s starts on stream %q: %w", start, l.Stream, err))
	case !found:
		// No fact at or after the time, or retention removed every
		// fact since the tail was read: nothing is left to read.
		first = l.Tail + 1
	case start.Kind == topology.StartOffset:
		first = max(first, start.Offset)
	}
	l.Start, l.HasStart = first, true
	return nil
}

// Close closes the reader's connection, if one is open.
func (r *LagReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.s == nil {
		return nil
	}
	err := r.s.Close()
	r.s = nil
	return err
}

// noStream makes err match [ErrNoStream] when the broker said that the
// stream does not exist.
func noStream(err error) error {
	if errors.Is(err, stream.StreamDoesNotExist) {
		return noStreamError{err}
	}
	return err
}

// noStreamError is err, worded as the broker put it, matching
// [ErrNoStream] as well.
type noStreamError struct{ err error }

func (e noStreamError) Error() string   { return e.err.Error() }
func (e noStreamError) Unwrap() []error { return []error{ErrNoStream, e.err} }

func open(ctx context.Context, b Broker) (*streamproto.Store, error) {
	ep, err := b.StreamEndpoint()
	if err != nil {
		return nil, err
	}
	return streamproto.Open(ctx, streamproto.Endpoint(ep))
}

// Replay asks to re-read a stream consumer's stream under a fresh offset
// name, from a position, for at most Limit of the consumer's facts.
type Replay struct {
	Consumer topology.Consumer // a stream consumer
	Keys     []string          // the routing keys it handles; the others are skipped
	Name     string            // the fresh offset name
	// From is where the replay starts: StartFirst, StartOffset (the first
	// fact at or after the offset) or StartTime (the first chunk of facts
	// written at or after the time).
	From  topology.Start
	Limit int // at most this many of the consumer's facts; 0 reads to the tail and on
	// Topology, when set, is the topology Consumer is of: Name may not be
	// the own name of any other of its consumers ([CheckReplayName]), nor
	// hold the mark of a replay of another consumer of the same stream
	// ([ReplayOfInfix]). Without it only the consumer's own name is
	// refused.
	Topology *topology.Topology
}

// Fact is one fact a replay reads.
type Fact struct {
	Offset     int64
	ID         string
	RoutingKey string
	Handled    bool // the consumer handles it; false: it is skipped
	// NoRoute: the consumer's bindings match it, but it is none of Keys
	// (the consumer's code does not know the fact): its reader poisons it
	// as not handled. Handled is true for it: it is the consumer's.
	NoRoute bool
}

// Plan is where a replay starts and ends, exact when it was made.
type Plan struct {
	Stream string
	Name   string
	// Consumer is the consumer the replay is for: Apply marks the name as
	// its replay (see [ReplayOfInfix]); "" marks nothing.
	Consumer string
	First    int64 // the offset of the first fact read
	Tail     int64 // the stream's last offset when planned
	// Until is the last offset read (with a limit), or -1: the reader
	// reads to the tail and goes on with what is written after.
	Until int64
	// Facts are the facts read, in stream order, when a limit bounds
	// them; nil without a limit.
	Facts []Fact
	// Limit is the replay's limit: how many of the consumer's facts were
	// asked for; 0 without one.
	Limit int
}

// Short reports whether the stream held fewer of the consumer's facts
// from the start than the limit asked for: the replay then ends at the
// tail as it was when planned (Until is Tail), and facts written after
// are not part of it, however many there are by the time it is read.
func (p Plan) Short() bool { return p.Limit > 0 && p.Handled() < p.Limit }

// Handled counts the facts of the plan that the consumer handles.
func (p Plan) Handled() int {
	n := 0
	for _, f := range p.Facts {
		if f.Handled {
			n++
		}
	}
	return n
}

// ErrNotFresh is returned when a replay's offset name already holds an
// offset or a bound.
var ErrNotFresh = errors.New("the offset name is not fresh")

// ErrNothingToReplay is returned when the stream holds no fact at or after
// the replay's start.
var ErrNothingToReplay = errors.New("nothing to replay")

// SuperStreamReplayError refuses a replay of a consumer of a super
// stream. A replay positions one stream's offset name, and a process of
// the consumer started with runtime.WithOffsetName reads under it; a
// consumer of a super stream keeps an offset per partition and reads as
// a member of the consumer group of its own name, which a process under
// another offset name would join too, reading from the consumer's own
// offsets. A consumer of its own, reading the super stream from its
// first fact, rebuilds a projection from it instead.
type SuperStreamReplayError struct {
	Consumer    string
	SuperStream string
}

func (e SuperStreamReplayError) Error() string {
	return fmt.Sprintf("consumer %q reads super stream %q: a replay cannot re-read it under a fresh offset name, since the consumer's processes read as members of its consumer group, from the group's offsets per partition; to rebuild a projection from the super stream, give the projection a consumer of its own in warren.json, with \"stream\": %q and \"start\": \"first\"",
		e.Consumer, e.SuperStream, e.SuperStream)
}

// PlanReplay finds, without changing anything, where r starts and ends:
// it checks that r.Name is fresh, reads the stream's tail, and reads the
// stream over AMQP from r.From for the first offset, and with a limit up
// to the limit's last fact. wait bounds how long it waits for the first
// fact (a time after the stream's last chunk delivers none).
func PlanReplay(ctx context.Context, b Broker, r Replay, wait time.Duration) (Plan, error) {
	c := r.Consumer
	if c.Stream == "" {
		return Plan{}, fmt.Errorf("consumer %q reads a queue, not a stream", c.Name)
	}
	if len(c.Partitions) > 0 {
		return Plan{}, SuperStreamReplayError{Consumer: c.Name, SuperStream: c.Stream}
	}
	var t topology.Topology
	if r.Topology != nil {
		t = *r.Topology
	}
	if err := CheckReplayName(t, c, r.Name); err != nil {
		return Plan{}, err
	}
	s, err := open(ctx, b)
	if err != nil {
		return Plan{}, err
	}
	defer s.Close()
	for _, ref := range []string{r.Name, r.Name + runtime.ReplayUntilSuffix} {
		off, found, err := s.QueryOffset(ctx, ref, c.Stream)
		if err != nil {
			return Plan{}, noStream(fmt.Errorf("query offset %q of stream %q: %w", ref, c.Stream, err))
		}
		switch {
		case found && ref == r.Name:
			return Plan{}, fmt.Errorf("offset name %q holds offset %d of stream %q: %w; choose another name", r.Name, off, c.Stream, ErrNotFresh)
		case found:
			return Plan{}, fmt.Errorf("offset name %q holds a replay's bound, offset %d of stream %q (stored under %q): %w; choose another name", r.Name, off, c.Stream, ref, ErrNotFresh)
		}
	}
	for _, o := range t.StreamConsumers() {
		// A replay of another consumer of the stream from its first fact
		// and without a limit stores nothing but its mark.
		ref := ReplayOfRef(r.Name, o.Name)
		if o.Name == c.Name || o.Stream != c.Stream || len(o.Partitions) > 0 || ref == "" {
			continue
		}
		_, found, err := s.QueryOffset(ctx, ref, c.Stream)
		if err != nil {
			return Plan{}, noStream(fmt.Errorf("query offset %q of stream %q: %w", ref, c.Stream, err))
		}
		if found {
			return Plan{}, fmt.Errorf("offset name %q is taken by a replay of consumer %q on stream %q (marked under %q): %w; choose another name", r.Name, o.Name, c.Stream, ref, ErrNotFresh)
		}
	}
	tail, found, err := s.Tail(ctx, c.Stream)
	if err != nil {
		return Plan{}, noStream(err)
	}
	if !found {
		return Plan{}, fmt.Errorf("%w: stream %q holds no fact", ErrNothingToReplay, c.Stream)
	}
	p := Plan{Stream: c.Stream, Name: r.Name, Consumer: c.Name, Tail: tail, Until: -1, Limit: r.Limit}
	if r.From.Kind == topology.StartOffset && r.From.Offset > tail {
		return Plan{}, fmt.Errorf("%w: offset %d is past the tail of stream %q (%d)", ErrNothingToReplay, r.From.Offset, c.Stream, tail)
	}
	if err := readPlan(ctx, b, r, &p, wait); err != nil {
		return Plan{}, err
	}
	return p, nil
}

// readPlan reads the stream from r.From until it knows p.First and, with
// a limit, p.Until and p.Facts.
func readPlan(ctx context.Context, b Broker, r Replay, p *Plan, wait time.Duration) error {
	ch, err := b.OpenChannel(ctx)
	if err != nil {
		return err
	}
	defer ch.Close()
	if err := ch.Qos(500, 0, false); err != nil {
		return fmt.Errorf("read stream %q: %w", p.Stream, err)
	}
	from := r.From
	if from.Kind == "" {
		from.Kind = topology.StartFirst
	}
	deliveries, err := ch.ConsumeWithContext(ctx, p.Stream, "", false, false, false, false, amqp.Table{"x-stream-offset": from.ConsumeArgument()})
	if err != nil {
		return fmt.Errorf("read stream %q from %s: %w", p.Stream, from, err)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	first := true
	for {
		var d amqp.Delivery
		var ok bool
		select {
		case d, ok = <-deliveries:
		case <-timer.C:
			if first {
				return fmt.Errorf("%w: stream %q delivered no fact at or after %s within %s", ErrNothingToReplay, p.Stream, from, wait)
			}
			continue
		case <-ctx.Done():
			return ctx.Err()
		}
		if !ok {
			return fmt.Errorf("read stream %q: the channel closed", p.Stream)
		}
		_ = d.Ack(false)
		off := runtime.StreamOffset(d)
		if first {
			p.First, first = off, false
			if r.Limit == 0 {
				return nil
			}
		}
		f := Fact{Offset: off, ID: d.MessageId, RoutingKey: d.RoutingKey, Handled: slices.Contains(r.Keys, d.RoutingKey)}
		if !f.Handled && r.Consumer.Binds(d.RoutingKey) {
			f.Handled, f.NoRoute = true, true
		}
		p.Facts = append(p.Facts, f)
		if f.Handled && p.Handled() == r.Limit {
			p.Until = off
			return nil
		}
		if off >= p.Tail {
			// Fewer of the consumer's facts than the limit: the
			// replay ends at the tail as it was (Plan.Short), not
			// at facts written later, which would make its end
			// depend on when it is read.
			p.Until = p.Tail
			return nil
		}
	}
}

// Apply stores p on the broker: under p.Name the offset before p.First
// (nothing when p.First is 0: a fresh name reads from the first fact),
// with a bound, p.Until under p.Name+[runtime.ReplayUntilSuffix], and
// with p.Consumer, the mark that the name is a replay of that consumer
// ([ReplayOfRef], its offset p.First). It returns once the broker reports
// them all stored (it applies a store asynchronously), or ctx ends.
func Apply(ctx context.Context, b Broker, p Plan) error {
	s, err := open(ctx, b)
	if err != nil {
		return err
	}
	defer s.Close()
	want := map[string]int64{}
	if p.First > 0 {
		want[p.Name] = p.First - 1
	}
	if p.Until >= 0 {
		want[p.Name+runtime.ReplayUntilSuffix] = p.Until
	}
	if ref := ReplayOfRef(p.Name, p.Consumer); p.Consumer != "" && ref != "" {
		want[ref] = p.First
	}
	for ref, off := range want {
		if err := s.StoreOffset(ctx, ref, p.Stream, off); err != nil {
			return fmt.Errorf("store offset %q of stream %q: %w", ref, p.Stream, err)
		}
	}
	for ref, off := range want {
		for {
			got, found, err := s.QueryOffset(ctx, ref, p.Stream)
			if err != nil {
				return fmt.Errorf("query offset %q of stream %q: %w", ref, p.Stream, err)
			}
			if found && got == off {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("offset %q of stream %q not stored yet: %w", ref, p.Stream, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}
