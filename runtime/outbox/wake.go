package outbox

import (
	"context"
	"sync"
	"time"

	"github.com/warrenbus/warren/runtime/sqldb"
)

// relays are the running relays of this process by table, for the
// in-process wake-up of writers on SQLite.
var relays = struct {
	sync.Mutex
	byTable map[string]map[*Relay]struct{}
}{byTable: map[string]map[*Relay]struct{}{}}

func tableKey(d Dialect, t sqldb.Table) string { return d.String() + ":" + t.String() }

// register adds r to the running relays until the returned func is called.
func register(r *Relay) (unregister func()) {
	key := tableKey(r.cfg.Dialect, r.table)
	relays.Lock()
	defer relays.Unlock()
	if relays.byTable[key] == nil {
		relays.byTable[key] = map[*Relay]struct{}{}
	}
	relays.byTable[key][r] = struct{}{}
	return func() {
		relays.Lock()
		defer relays.Unlock()
		delete(relays.byTable[key], r)
		if len(relays.byTable[key]) == 0 {
			delete(relays.byTable, key)
		}
	}
}

// wakeRelays wakes the running relays of table t in this process. Two
// SQLite files with one table name share a key: a relay woken for the
// other file runs a round that finds nothing, which is harmless.
func wakeRelays(d Dialect, t sqldb.Table) {
	relays.Lock()
	defer relays.Unlock()
	for r := range relays.byTable[tableKey(d, t)] {
		r.wakeUp()
	}
}

// listenRetry bounds how often a relay tries to LISTEN again after its
// connection failed; the poll carries on meanwhile.
const listenRetry = time.Second

// listen wakes r whenever a row of its table commits, until ctx is done.
// Each (re)subscription wakes r once too, for rows that committed while
// nobody listened. Failures are quiet: polling covers them, and the
// database's outage is logged by the rounds.
func (r *Relay) listen(ctx context.Context, l sqldb.Listener) {
	for ctx.Err() == nil {
		sub, err := l.Listen(ctx, r.channel)
		if err != nil {
			r.log.Debug("outbox relay: LISTEN failed; polling meanwhile", "channel", r.channel, "err", err)
			t := time.NewTimer(min(listenRetry, r.cfg.PollInterval))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		r.log.Debug("outbox relay: listening for committed rows", "channel", r.channel)
		r.wakeUp()
		for {
			if err := sub.Wait(ctx); err != nil {
				if ctx.Err() == nil {
					r.log.Debug("outbox relay: listening connection lost; listening again", "channel", r.channel, "err", err)
				}
				break
			}
			r.wakeUp()
		}
		_ = sub.Close()
	}
}
