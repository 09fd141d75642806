package runtime

import (
	"time"
)

// Health is a snapshot of what a [Conn] or a [Consumer] is doing, for
// health checks and dashboards. See [HealthHandler] for the HTTP form.
type Health struct {
	// Connected reports a live connection to the broker. False while the
	// Conn reconnects, and after Close.
	Connected bool
	// URL is the address of the live connection, password redacted.
	URL string
	// Blocked reports that the broker blocked publishing on the connection
	// (connection.blocked: a memory or disk alarm). Publishes wait, bounded
	// by their ctx, until it unblocks; consuming goes on.
	Blocked       bool
	BlockedReason string
	// Paused reports, for a consumer, that it stopped taking deliveries
	// because a dependency is unavailable, and probes until it is back
	// (see [OutagePolicy]).
	Paused bool
	// Running reports, for a consumer, that its Run is running.
	Running bool
	// LastError is the last connection error, or for a consumer the last
	// outage of a dependency or channel loss, passwords redacted; nil when
	// there was none.
	LastError error
	// LastErrorAt is when LastError happened.
	LastErrorAt time.Time
}

// lastError is an error and when it happened, kept for Health.
type lastError struct {
	err error
	at  time.Time
}

func (l *lastError) set(err error) {
	if err != nil {
		l.err, l.at = err, time.Now()
	}
}

// Health reports whether c is connected and whether the broker blocks its
// publishing, and the last connection error.
func (c *Conn) Health() Health {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := Health{Connected: c.sess != nil && c.ctx.Err() == nil, Blocked: c.blocked, BlockedReason: c.blockedReason,
		LastError: c.redact(c.last.err), LastErrorAt: c.last.at}
	if c.sess != nil {
		h.URL = c.sess.url
	}
	return h
}
