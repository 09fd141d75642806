package console

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/warrenbus/warren/cmd/warren/internal/liveversions"
	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/delaystat"
	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/runtime/streamoffset"
	"github.com/warrenbus/warren/runtime/topology"
)

// figures are one reading of one consumer's dashboard numbers.
type figures struct {
	Consumer    string     `json:"consumer"`
	Queue       string     `json:"queue"`
	PoisonQueue string     `json:"poison_queue"`
	Work        int        `json:"work"`      // ready in the work queue
	Poison      int        `json:"poison"`    // in the poison queue
	Consumers   int        `json:"consumers"` // attached to the work queue
	Retrying    int        `json:"retrying"`  // waiting in the delay queues
	Tiers       []tierFig  `json:"tiers"`
	Rates       *rates     `json:"rates"`   // nil without the management API
	Missing     []string   `json:"missing"` // queues that do not exist
	Alerts      []string   `json:"alerts"`  // why the row stands out; empty when it does not
	History     []point    `json:"history"`
	ReadAt      *time.Time `json:"read_at"`            // nil before the first reading
	Versions    string     `json:"versions,omitempty"` // the versions it reads of facts with several, and live (Config.Versions)
	Batch       *batchFig  `json:"batch"`              // a batch consumer's batch; nil for the others
	Stream      *streamFig `json:"stream"`             // a stream consumer's place in its stream; nil for the others
}

// streamFig is a stream consumer's place in its stream, each figure exact
// when read, null when not known. A consumer of a super stream keeps an
// offset per partition: Partitions are each partition's place, Lag their
// sum (null when one is not known), Tail and Stored null.
type streamFig struct {
	Stream string `json:"stream"`
	Tail   *int64 `json:"tail"`   // the offset of the stream's last fact; null: the stream holds none
	Stored *int64 `json:"stored"` // the consumer's stored offset; null: none stored yet
	// Lag is the offsets after Stored up to Tail: facts not settled yet,
	// and the stream's own offset-tracking records among them.
	Lag *int64 `json:"lag"`
	// Error is why the figures could not be read (redacted); they are
	// null then. A stream that does not exist is "not declared".
	Error      string      `json:"error,omitempty"`
	Partitions []streamFig `json:"partitions,omitempty"`
}

// readStream reads c's place in its stream, or in each partition of its
// super stream. A stream that cannot be read carries why: it leaves the
// consumer's other figures standing.
func (s *sampler) readStream(ctx context.Context, c topology.Consumer) *streamFig {
	lags := s.cfg.StreamLag(ctx, c)
	if len(c.Partitions) == 0 && len(lags) == 1 {
		f := streamFigOf(lags[0])
		return &f
	}
	f := &streamFig{Stream: c.Stream}
	var sum int64
	known := true
	for _, l := range lags {
		pf := streamFigOf(l)
		if pf.Lag == nil {
			known = false
		} else {
			sum += *pf.Lag
		}
		f.Partitions = append(f.Partitions, pf)
	}
	if known {
		f.Lag = &sum
	}
	return f
}

// streamFigOf is the figures of one lag, or why it could not be read.
func streamFigOf(l streamoffset.LagResult) streamFig {
	f := streamFig{Stream: l.Stream}
	switch {
	case errors.Is(l.Err, streamoffset.ErrNoStream):
		f.Error = "not declared"
		return f
	case l.Err != nil:
		f.Error = secret.Text(l.Err.Error())
		return f
	}
	f.Tail, f.Stored, f.Lag = l.Figures()
	return f
}

// batchFig is a batch consumer's batch: up to Size facts, closed Wait
// after the first at the latest.
type batchFig struct {
	Size int    `json:"size"`
	Wait string `json:"wait"`
}

func batchOf(c topology.Consumer) *batchFig {
	if !c.Batched() {
		return nil
	}
	return &batchFig{Size: c.Batch.Size, Wait: c.Batch.Wait.String()}
}

type tierFig struct {
	Queue    string `json:"queue"`
	Delay    string `json:"delay"`
	Messages int    `json:"messages"`
}

// rates come from the management API, per second over its sampling window.
type rates struct {
	Redelivered float64 `json:"redelivered"` // redeliveries per second from the work queue
	Delivered   float64 `json:"delivered"`   // deliveries per second, redeliveries included
}

// point is one reading kept for the charts: [unix ms, work, poison,
// consumers, redeliveries/s or -1 when unknown].
type point [5]float64

// outboxFig is one reading of the outbox table.
type outboxFig struct {
	Table         string     `json:"table"`
	Pending       int64      `json:"pending"` // due, not yet published
	Retrying      int64      `json:"retrying"`
	Failed        int64      `json:"failed"`
	OldestPending *time.Time `json:"oldest_pending"` // when the longest-waiting pending row became due
	Scheduled     int64      `json:"scheduled"`      // written for later, not due yet
	NextDue       *time.Time `json:"next_due"`
	Error         string     `json:"error"` // the last reading failed, redacted; the figures are the one before
}

// sampler reads the figures of every consumer every interval and keeps
// the last History of them.
type sampler struct {
	cfg Config

	mu       sync.Mutex
	current  []figures
	delayed  *delaystat.Levels // nil without delay levels, or before a reading
	outbox   *outboxFig        // nil without Config.Outbox
	sagas    *sagasFig         // nil without Config.Sagas
	err      string            // the last reading's error, redacted
	mgmtErr  string            // the management API's last error, redacted
	readOnce chan struct{}
	once     sync.Once
}

func newSampler(cfg Config) *sampler {
	s := &sampler{cfg: cfg, readOnce: make(chan struct{})}
	for _, c := range cfg.Topology.Consumers {
		s.current = append(s.current, figures{Consumer: c.Name, Queue: c.Queue, PoisonQueue: c.PoisonQueue, Versions: versionText(cfg.Versions, nil, false)[c.Name], Batch: batchOf(c)})
	}
	return s
}

func (s *sampler) run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		s.read(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// read takes one reading of every consumer.
func (s *sampler) read(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Interval+10*time.Second)
	defer cancel()
	now := time.Now()
	var mgmt map[string]queueStats
	var mgmtErr error
	var attached []liveversions.Attached
	asked := false
	if s.cfg.Management != nil {
		mgmt, mgmtErr = s.cfg.Management.Queues(ctx)
		if mgmtErr == nil && len(s.cfg.Versions) > 0 {
			var consumers []ConsumerArgs
			consumers, mgmtErr = s.cfg.Management.Consumers(ctx)
			attached, asked = Announcements(consumers), mgmtErr == nil
		}
	}
	versions := versionText(s.cfg.Versions, attached, asked)
	delayed, delayErr := delaystat.Read(ctx, s.cfg.Broker, s.cfg.Topology)
	var ob *outboxFig
	if s.cfg.Outbox != nil {
		ob = s.readOutbox(ctx)
	}
	var sg *sagasFig
	if s.cfg.Sagas != nil {
		sg = s.readSagas(ctx)
	}
	next := make([]figures, len(s.cfg.Topology.Consumers))
	read := make([]bool, len(next))
	var readErr error
	for i, c := range s.cfg.Topology.Consumers {
		f, err := s.readConsumer(ctx, c)
		if err != nil && readErr == nil {
			readErr = err
		}
		read[i] = err == nil
		if st, ok := mgmt[c.Queue]; ok {
			f.Rates = &rates{Redelivered: st.Redelivered, Delivered: st.Delivered}
		}
		f.Versions = versions[c.Name]
		f.ReadAt = &now
		f.Alerts = alerts(f)
		next[i] = f
	}

	if readErr == nil {
		readErr = delayErr
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if delayErr == nil {
		s.delayed = delayed
	}
	if ob != nil {
		if ob.Error != "" && s.outbox != nil {
			kept := *s.outbox
			kept.Error = ob.Error
			ob = &kept
		}
		s.outbox = ob
	}
	if sg != nil {
		if sg.Error != "" && s.sagas != nil {
			kept := *s.sagas // the last figures stay, with the error
			kept.Error = sg.Error
			sg = &kept
		}
		s.sagas = sg
	}
	s.err, s.mgmtErr = "", ""
	if readErr != nil {
		s.err = secret.Text(readErr.Error())
	}
	if mgmtErr != nil {
		s.mgmtErr = secret.Text(mgmtErr.Error())
	}
	cutoff := now.Add(-s.cfg.History)
	for i := range next {
		if !read[i] {
			// Keep the last good reading (its read_at says how old it is)
			// rather than show zeros the broker never said.
			next[i] = s.current[i]
			continue
		}
		hist := s.current[i].History
		for len(hist) > 0 && hist[0][0] < float64(cutoff.UnixMilli()) {
			hist = hist[1:]
		}
		redeliver := -1.0
		if next[i].Rates != nil {
			redeliver = next[i].Rates.Redelivered
		}
		next[i].History = append(hist, point{float64(now.UnixMilli()), float64(next[i].Work), float64(next[i].Poison), float64(next[i].Consumers), redeliver})
	}
	s.current = next
	s.once.Do(func() { close(s.readOnce) })
}

// readOutbox reads the outbox table's figures; a failed reading carries
// its error and no figures.
func (s *sampler) readOutbox(ctx context.Context) *outboxFig {
	f := &outboxFig{Table: s.cfg.Outbox.Table()}
	st, err := s.cfg.Outbox.Status(ctx)
	if err != nil {
		f.Error = secret.Text(err.Error())
		return f
	}
	at := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		t = t.UTC()
		return &t
	}
	f.Pending, f.Retrying, f.Failed, f.Scheduled = st.Pending, st.Retrying, st.Failed, st.Scheduled
	f.OldestPending, f.NextDue = at(st.OldestPending), at(st.NextDue)
	return f
}

// sagasFig is the overview's table of sagas.
type sagasFig struct {
	Table string    `json:"table"`
	Error string    `json:"error,omitempty"` // the last reading failed, redacted
	Sagas []sagaFig `json:"sagas"`
}

// sagaFig is one saga's instances.
type sagaFig struct {
	Saga          string     `json:"saga"`
	Running       int64      `json:"running"`
	Completed     int64      `json:"completed"`
	OldestRunning *time.Time `json:"oldest_running,omitempty"`
	WithTimeouts  int64      `json:"with_timeouts"`
}

// readSagas reads the sagas' figures; a failed reading carries its error
// and no figures.
func (s *sampler) readSagas(ctx context.Context) *sagasFig {
	f := &sagasFig{Table: s.cfg.Sagas.Table(), Sagas: []sagaFig{}}
	sums, err := s.cfg.Sagas.Summaries(ctx)
	if err != nil {
		f.Error = secret.Text(err.Error())
		return f
	}
	for _, x := range sums {
		g := sagaFig{Saga: x.Saga, Running: x.Running, Completed: x.Completed, WithTimeouts: x.WithTimeouts}
		if !x.OldestRunning.IsZero() {
			t := x.OldestRunning.UTC()
			g.OldestRunning = &t
		}
		f.Sagas = append(f.Sagas, g)
	}
	return f
}

// readConsumer inspects the consumer's work, delay and poison queues. A
// missing queue is recorded, not an error: the page shows it.
func (s *sampler) readConsumer(ctx context.Context, c topology.Consumer) (figures, error) {
	f := figures{Consumer: c.Name, Queue: c.Queue, PoisonQueue: c.PoisonQueue, Tiers: []tierFig{}, Missing: []string{}, Batch: batchOf(c)}
	inspect := func(name string) (messages, consumers int, err error) {
		q, err := amqpmsg.InspectQueue(ctx, s.cfg.Broker, name)
		if errors.Is(err, amqpmsg.ErrNoQueue) {
			f.Missing = append(f.Missing, name)
			return 0, 0, nil
		}
		return q.Messages, q.Consumers, err
	}
	var err error
	if f.Work, f.Consumers, err = inspect(c.Queue); err != nil {
		return f, err
	}
	seen := map[string]bool{}
	for _, t := range c.Tiers {
		if seen[t.Queue] {
			continue
		}
		seen[t.Queue] = true
		n, _, err := inspect(t.Queue)
		if err != nil {
			return f, err
		}
		f.Tiers = append(f.Tiers, tierFig{Queue: t.Queue, Delay: topology.FormatDelay(t.Delay), Messages: n})
		f.Retrying += n
	}
	if f.Poison, _, err = inspect(c.PoisonQueue); err != nil {
		return f, err
	}
	if c.Stream != "" && s.cfg.StreamLag != nil {
		f.Stream = s.readStream(ctx, c)
	}
	return f, nil
}

// alerts says why a consumer's row stands out: what the dashboard article
// says to alert on.
func alerts(f figures) []string {
	out := []string{}
	if len(f.Missing) > 0 {
		out = append(out, "queues not declared")
	}
	if f.Poison > 0 {
		out = append(out, "poison waiting")
	}
	if f.Work > 0 && f.Consumers == 0 && len(f.Missing) == 0 {
		out = append(out, "work waiting and no consumer")
	}
	if f.Stream != nil {
		var missing, unread []string
		for _, st := range append([]streamFig{*f.Stream}, f.Stream.Partitions...) {
			if st.Error == "not declared" {
				missing = append(missing, st.Stream)
			} else if st.Error != "" {
				unread = append(unread, st.Stream)
			}
		}
		if len(missing) > 0 {
			out = append(out, "stream "+strings.Join(missing, ", ")+" not declared")
		}
		if len(unread) > 0 {
			out = append(out, "lag of stream "+strings.Join(unread, ", ")+" not read")
		}
	}
	return out
}

// reading is what snapshot returns: the latest reading of everything.
type reading struct {
	consumers        []figures
	delayed          *delaystat.Levels
	outbox           *outboxFig
	sagas            *sagasFig
	readErr, mgmtErr string
}

// snapshot returns the latest reading, waiting for the first one (or ctx).
func (s *sampler) snapshot(ctx context.Context) reading {
	select {
	case <-s.readOnce:
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return reading{consumers: append([]figures(nil), s.current...), delayed: s.delayed, outbox: s.outbox, sagas: s.sagas, readErr: s.err, mgmtErr: s.mgmtErr}
}
