package outbox

import (
	"errors"
	"log/slog"
	"strings"
	"time"
)

// outage tracks one thing the relay depends on (the database, the
// broker) so that its being down is logged once when it starts and once
// when it ends, with counts, rather than once per poll.
type outage struct {
	log    *slog.Logger
	what   string // "database" or "broker"
	down   bool
	since  time.Time
	rounds int // rounds that failed for it
	held   int // facts not published for it, summed over those rounds
}

// fail records a round that failed for the outage; only the first of an
// outage is logged.
func (o *outage) fail(err error, held int) {
	o.rounds++
	o.held += held
	if o.down {
		o.log.Debug("outbox relay: "+o.what+" still unavailable", "err", err)
		return
	}
	o.down, o.since = true, time.Now()
	o.log.Error("outbox relay: "+o.what+" unavailable; retrying quietly until it is back", "err", err)
}

// ok records a round that succeeded for it; the first after an outage
// logs the outage's end.
func (o *outage) ok(published int) {
	if !o.down {
		return
	}
	o.log.Warn("outbox relay: "+o.what+" available again",
		"down_for", time.Since(o.since).Round(time.Millisecond), "failed_rounds", o.rounds, "held_back", o.held, "published_now", published)
	*o = outage{log: o.log, what: o.what}
}

// observe logs what a round did, keeping outages quiet.
func (r *Relay) observe(b batchResult, err error) {
	if errors.Is(err, errStore) {
		if busy(err) {
			// SQLite: a writer kept the lock past BusyTimeout; the next
			// round takes its rows. Not an outage.
			r.log.Debug("outbox relay: database busy; trying again next round", "err", err)
			return
		}
		r.storeDown.fail(err, b.claimed)
		return
	}
	if b.claimedAt.IsZero() && b.unavailableErr != nil {
		// Nothing claimed: the broker could not take a publish when the
		// round had its turn (and did not come back while it waited).
		if !b.brokerBack {
			r.brokerDown.fail(b.unavailableErr, 0)
		}
		return
	}
	r.storeDown.ok(b.published)
	switch {
	case b.unavailable > 0 && b.published == 0:
		r.brokerDown.fail(b.unavailableErr, b.unavailable)
	case b.published > 0 || b.claimed > 0 && b.unavailable == 0:
		r.brokerDown.ok(b.published)
	}
	if err != nil {
		r.logFailures(b)
	}
}

// busy reports whether err is SQLite's "database is locked".
func busy(err error) bool {
	return strings.Contains(err.Error(), "database is locked") || strings.Contains(err.Error(), "SQLITE_BUSY")
}
