package console

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/secret"
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
	ReadAt      *time.Time `json:"read_at"` // nil before the first reading
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

// sampler reads the figures of every consumer every interval and keeps
// the last History of them.
type sampler struct {
	cfg Config

	mu       sync.Mutex
	current  []figures
	err      string // the last reading's error, redacted
	mgmtErr  string // the management API's last error, redacted
	readOnce chan struct{}
	once     sync.Once
}

func newSampler(cfg Config) *sampler {
	s := &sampler{cfg: cfg, readOnce: make(chan struct{})}
	for _, c := range cfg.Topology.Consumers {
		s.current = append(s.current, figures{Consumer: c.Name, Queue: c.Queue, PoisonQueue: c.PoisonQueue})
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
	if s.cfg.Management != nil {
		mgmt, mgmtErr = s.cfg.Management.Queues(ctx)
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
		f.ReadAt = &now
		f.Alerts = alerts(f)
		next[i] = f
	}

	s.mu.Lock()
	defer s.mu.Unlock()
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

// readConsumer inspects the consumer's work, delay and poison queues. A
// missing queue is recorded, not an error: the page shows it.
func (s *sampler) readConsumer(ctx context.Context, c topology.Consumer) (figures, error) {
	f := figures{Consumer: c.Name, Queue: c.Queue, PoisonQueue: c.PoisonQueue, Tiers: []tierFig{}, Missing: []string{}}
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
	return out
}

// snapshot returns the latest reading, waiting for the first one (or ctx).
func (s *sampler) snapshot(ctx context.Context) (cur []figures, readErr, mgmtErr string) {
	select {
	case <-s.readOnce:
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]figures(nil), s.current...), s.err, s.mgmtErr
}
