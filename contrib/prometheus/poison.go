package prometheus

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/poison"
)

// DefaultPoisonCauses is how many distinct causes of each consumer get a
// series of their own in warren_consumer_poisoned_by_cause_total when
// Options.PoisonCauses is 0.
const DefaultPoisonCauses = 20

// OtherCause is the cause label of the facts whose cause came after a
// consumer's first Options.PoisonCauses distinct causes.
const OtherCause = "other"

// poisonCauses counts poisoned facts by consumer, cause kind and cause id,
// keeping at most limit ids per consumer.
type poisonCauses struct {
	counter *prometheus.CounterVec
	limit   int

	mu   sync.Mutex
	seen map[string]map[string]bool // consumer -> cause ids with a series
}

func newPoisonCauses(o Options) *poisonCauses {
	limit := o.PoisonCauses
	switch {
	case limit == 0:
		limit = DefaultPoisonCauses
	case limit < 0:
		limit = 0
	}
	return &poisonCauses{
		counter: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: Subsystem, Name: "poisoned_by_cause_total",
			Help:        "Facts copied to the poison queue, by cause kind and cause (the group id of warren poison groups, or \"other\" past the first causes of a consumer).",
			ConstLabels: o.ConstLabels,
		}, []string{"consumer", "kind", "cause"}),
		limit: limit,
		seen:  map[string]map[string]bool{},
	}
}

// label is the cause label of id for consumer: id itself while the
// consumer has fewer than limit ids, or when id is one of them; else
// OtherCause.
func (p *poisonCauses) label(consumer, id string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := p.seen[consumer]
	if ids[id] {
		return id
	}
	if len(ids) >= p.limit {
		return OtherCause
	}
	if ids == nil {
		ids = map[string]bool{}
		p.seen[consumer] = ids
	}
	ids[id] = true
	return id
}

func (p *poisonCauses) observe(e runtime.PoisonEvent) {
	cause := poison.CauseOf(poison.Message{Failure: e.Failure, Headers: e.Headers})
	p.counter.WithLabelValues(e.Consumer, cause.Kind, p.label(e.Consumer, cause.ID())).Inc()
}

// PoisonHook returns the hook to pass to [runtime.WithPoisonHook] so that
// warren_consumer_poisoned_by_cause_total counts each fact the consumer
// poisons, labelled consumer, kind (validation, version, upcast, handler,
// refused, panic, broker or unknown, see [poison.CauseOf]) and cause: the cause's id, the same
// group id that warren poison groups and [poison.Groups] show, so a
// panel's line leads straight to the messages behind it.
//
// The cause label is bounded: each consumer (in each process) gets a
// series for its first Options.PoisonCauses distinct causes
// (DefaultPoisonCauses when 0) and counts every later cause as "other",
// under its kind. Causes are
// normalised, but a handler whose error carries free text the masking
// does not catch would otherwise make a new series for every fact, and
// each series lives in the process until it restarts, and in Prometheus
// for its retention.
// A series is never dropped for a newer cause, since a counter that
// disappears reads as a reset. The series of one consumer therefore
// number at most PoisonCauses plus one per kind; "other" growing means
// warren poison groups has more to tell than the dashboard.
//
// One hook serves every consumer of the process; it is safe for
// concurrent use and quick. To run it beside another hook, such as
// [poison.Threshold]'s, call both from one func.
func (m *Metrics) PoisonHook() func(runtime.PoisonEvent) { return m.poisoned.observe }
