// Package prometheus exports what warren's consumers count as Prometheus
// metrics, by implementing [runtime.Metrics] with the official client
// library.
//
// It is a module of its own (github.com/warrenbus/warren/contrib/prometheus)
// so that services which do not run Prometheus never download or build
// client_golang and its dependencies: the core module's dependency list
// stays as it is.
//
//	m := prometheus.New(prometheus.Options{})
//	prometheusclient.MustRegister(m) // or any Registerer
//	conn, err := runtime.Dial(ctx, runtime.Config{URLs: urls, Metrics: m})
//
// Metrics, each labelled consumer and routing_key (the fact's routing key
// as first published):
//
//	warren_consumer_delivered_total            messages that reached the consumer
//	warren_consumer_redelivered_total          of those, redelivered by the broker after a lost ack
//	warren_consumer_acked_total                handled and acked
//	warren_consumer_retried_total              sent to a delay queue for another attempt
//	warren_consumer_poisoned_total             sent to the poison queue
//	warren_consumer_duplicate_skipped_total    skipped by the idempotency guard
//	warren_consumer_returned_total             handed back to the broker unsettled
//	warren_consumer_held_total                 kept in a delay queue while a dependency was unavailable
//	warren_consumer_handler_duration_seconds   handler latency, with outcome "ok" or "error"
//
// and, labelled consumer only:
//
//	warren_consumer_pauses_total               the consumer stopped taking deliveries (a dependency was down)
//	warren_consumer_resumes_total              it took them again
//	warren_consumer_pause_duration_seconds     how long each pause lasted
//
// and, once [Metrics.PoisonHook] is given to runtime.WithPoisonHook,
// labelled consumer, kind and cause (a bounded set of cause ids):
//
//	warren_consumer_poisoned_by_cause_total    sent to the poison queue, by normalised cause
//
// Any delivery event a newer runtime adds is exported the same way, as
// warren_consumer_<event>_total, without a change here. The redelivery
// rate of a dashboard is rate(redelivered) / rate(delivered).
package prometheus

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/warrenbus/warren/runtime"
)

// Namespace and subsystem of every metric: warren_consumer_...
const (
	Namespace = "warren"
	Subsystem = "consumer"
)

// Options configures [New]. The zero value is ready to use.
type Options struct {
	// Buckets are the handler-duration histogram's upper bounds in seconds.
	// Default prometheus.DefBuckets (5ms to 10s).
	Buckets []float64
	// ConstLabels are added to every metric, e.g. {"service": "mailer"}.
	ConstLabels prometheus.Labels
	// PoisonCauses is how many distinct causes of each consumer
	// warren_consumer_poisoned_by_cause_total labels by their id before
	// it counts the rest as "other" (see [Metrics.PoisonHook]). Default
	// DefaultPoisonCauses; negative labels every cause "other", leaving
	// the kind alone to tell causes apart.
	PoisonCauses int
}

// Metrics is a [runtime.Metrics] and a [prometheus.Collector]: pass it as
// runtime.Config.Metrics and register it once. It is safe for concurrent
// use.
type Metrics struct {
	events   []*prometheus.CounterVec // indexed by runtime.Event
	duration *prometheus.HistogramVec
	pauses   *prometheus.CounterVec // consumers paused for an outage of a dependency
	resumes  *prometheus.CounterVec
	paused   *prometheus.HistogramVec // how long pauses lasted
	poisoned *poisonCauses            // fed by PoisonHook
	// Batch consumers: facts per batch, and how long each batch waited
	// from its first fact until it closed.
	batchSize *prometheus.HistogramVec
	batchWait *prometheus.HistogramVec
}

var (
	_ runtime.Metrics      = (*Metrics)(nil)
	_ runtime.BatchMetrics = (*Metrics)(nil)
)

// help explains each event's counter; an event missing here gets a
// generic text.
var help = map[runtime.Event]string{
	runtime.Delivered:        "Messages that reached the consumer, redeliveries included.",
	runtime.Redelivered:      "Messages the broker delivered again because an earlier delivery was never acked (also counted as delivered).",
	runtime.Acked:            "Messages whose handler succeeded, acked.",
	runtime.Retried:          "Messages whose handler failed and whose confirmed copy went to a delay queue for another attempt.",
	runtime.Poisoned:         "Messages given up on (attempts exhausted or a permanent error), copied to the poison queue.",
	runtime.DuplicateSkipped: "Messages the idempotency guard had seen already, acked without calling the handler.",
	runtime.Returned:         "Messages handed back to the broker unsettled (shutdown, or a copy the broker did not confirm).",
	runtime.Held:             "Messages whose handling met an unavailable dependency, delayed in a delay queue without spending an attempt.",
	runtime.NewerVersion:     "Messages whose x-fact-version is newer than the fact the consumer was generated from (also counted as delivered), handled as any other.",
	runtime.ReplyDropped:     "Replies that reached a requester after their caller gave up, or that answered a request a second time (consumer label empty, routing_key the request's).",
	runtime.RetriedInPlace:   "Ordered consumers: failed attempts tried again in place after their ladder delay, the later facts of the key waiting.",
	runtime.SequenceGap:      "Ordered consumers: facts whose x-ordering-seq skipped numbers after the last fact of their key and source.",
	runtime.SequenceStepBack: "Ordered consumers: facts whose x-ordering-seq was not above the last fact of their key and source (not counting the same fact again).",
	runtime.Expired:          "Responders: requests taken after their caller's deadline, acked without being worked on.",
	runtime.ErrorReplied:     "Responders: requests that failed and whose error went back to the caller as the reply.",
	runtime.Deferred:         "Messages whose handler deferred them (runtime.Defer): held for later without spending an attempt, in the delay levels or, by an ordered consumer, in place.",
	runtime.SagaStarted:      "Sagas: instances started, counted once the handling committed.",
	runtime.SagaCompleted:    "Sagas: instances completed, counted once the handling committed.",
	runtime.SagaTimedOut:     "Sagas: timeouts that fired and were handled.",
	runtime.SagaConflict:     "Sagas: handlings that found their instance changed meanwhile and handled the fact again on the new state.",
	runtime.SagaLateTimeout:  "Sagas: timeouts that fired after their instance completed, or after they were moved or cancelled, dropped.",
}

var labels = []string{"consumer", "routing_key"}

// New returns Metrics with one counter per runtime event and the handler
// latency histogram.
func New(o Options) *Metrics {
	if o.Buckets == nil {
		o.Buckets = prometheus.DefBuckets
	}
	m := &Metrics{}
	for e := runtime.Event(0); e.String() != "unknown"; e++ {
		h, ok := help[e]
		if !ok {
			h = "Messages counted as " + e.String() + " by the consumer."
		}
		m.events = append(m.events, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: Subsystem, Name: e.String() + "_total",
			Help: h, ConstLabels: o.ConstLabels,
		}, labels))
	}
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: Subsystem, Name: "handler_duration_seconds",
		Help:        "How long handlers ran, by outcome (ok or error).",
		ConstLabels: o.ConstLabels, Buckets: o.Buckets,
	}, append(labels[:len(labels):len(labels)], "outcome"))
	m.pauses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: Subsystem, Name: "pauses_total",
		Help:        "Times the consumer stopped taking deliveries because a dependency was unavailable.",
		ConstLabels: o.ConstLabels,
	}, []string{"consumer"})
	m.resumes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: Subsystem, Name: "resumes_total",
		Help:        "Times the consumer took deliveries again after a probe succeeded.",
		ConstLabels: o.ConstLabels,
	}, []string{"consumer"})
	m.paused = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: Subsystem, Name: "pause_duration_seconds",
		Help:        "How long the consumer stayed paused, from the pause to the probe that succeeded.",
		ConstLabels: o.ConstLabels,
		Buckets:     []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600},
	}, []string{"consumer"})
	m.poisoned = newPoisonCauses(o)
	m.batchSize = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: Subsystem, Name: "batch_size",
		Help:        "Batch consumers: the facts of each batch handed to the handler (after those poisoned for failing their checks).",
		ConstLabels: o.ConstLabels,
		Buckets:     []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000},
	}, []string{"consumer"})
	m.batchWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: Subsystem, Name: "batch_wait_seconds",
		Help:        "Batch consumers: how long each batch waited from its first fact until it closed, full or at its wait.",
		ConstLabels: o.ConstLabels,
		Buckets:     []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	}, []string{"consumer"})
	return m
}

// ObserveBatch implements [runtime.BatchMetrics].
func (m *Metrics) ObserveBatch(consumer string, size int, wait time.Duration) {
	m.batchSize.WithLabelValues(consumer).Observe(float64(size))
	m.batchWait.WithLabelValues(consumer).Observe(wait.Seconds())
}

// Paused implements [runtime.Metrics].
func (m *Metrics) Paused(consumer string) { m.pauses.WithLabelValues(consumer).Inc() }

// Resumed implements [runtime.Metrics].
func (m *Metrics) Resumed(consumer string, d time.Duration) {
	m.resumes.WithLabelValues(consumer).Inc()
	m.paused.WithLabelValues(consumer).Observe(d.Seconds())
}

// Count implements [runtime.Metrics].
func (m *Metrics) Count(consumer string, e runtime.Event, routingKey string) {
	if e < 0 || int(e) >= len(m.events) {
		return
	}
	m.events[e].WithLabelValues(consumer, routingKey).Inc()
}

// ObserveHandler implements [runtime.Metrics].
func (m *Metrics) ObserveHandler(consumer, routingKey string, d time.Duration, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.duration.WithLabelValues(consumer, routingKey, outcome).Observe(d.Seconds())
}

// Describe implements [prometheus.Collector].
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.events {
		c.Describe(ch)
	}
	m.duration.Describe(ch)
	m.pauses.Describe(ch)
	m.resumes.Describe(ch)
	m.paused.Describe(ch)
	m.poisoned.counter.Describe(ch)
	m.batchSize.Describe(ch)
	m.batchWait.Describe(ch)
}

// Collect implements [prometheus.Collector].
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.events {
		c.Collect(ch)
	}
	m.duration.Collect(ch)
	m.pauses.Collect(ch)
	m.resumes.Collect(ch)
	m.paused.Collect(ch)
	m.poisoned.counter.Collect(ch)
	m.batchSize.Collect(ch)
	m.batchWait.Collect(ch)
}
