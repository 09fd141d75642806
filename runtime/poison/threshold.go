package poison

import (
	"sync"
	"time"

	"github.com/warrenbus/warren/runtime"
)

// Alert says that one cause put many facts in a consumer's poison queue in
// a short time.
type Alert struct {
	Consumer string
	Group    string // the cause's id, as warren poison groups shows it
	Cause    Cause
	Count    int           // facts of the cause poisoned within Window
	Window   time.Duration // the threshold's window
	First    time.Time     // when the first of them was poisoned
	Last     time.Time     // when the one that crossed the threshold was
	Example  runtime.PoisonEvent
}

// Threshold returns a hook for [runtime.WithPoisonHook] that calls alert
// once n facts of one cause (see [CauseOf]) were poisoned within window,
// per consumer. It calls it once for a burst: again only after the count
// within the window fell below n. Times are the events' x-failed-at (now
// when missing). It is safe for concurrent use; alert runs on the
// delivery's goroutine, so keep it quick.
func Threshold(n int, window time.Duration, alert func(Alert)) func(runtime.PoisonEvent) {
	t := &threshold{n: max(n, 1), window: window, alert: alert, seen: map[string]*burst{}}
	return t.observe
}

type threshold struct {
	n      int
	window time.Duration
	alert  func(Alert)

	mu   sync.Mutex
	seen map[string]*burst // consumer + "\x00" + cause id
}

type burst struct {
	at    []time.Time // within the window, oldest first
	fired bool
}

func (t *threshold) observe(e runtime.PoisonEvent) {
	cause := CauseOf(Message{Failure: e.Failure, Headers: e.Headers})
	id := cause.ID()
	at := e.At
	if at.IsZero() {
		at = time.Now()
	}
	t.mu.Lock()
	key := e.Consumer + "\x00" + id
	b := t.seen[key]
	if b == nil {
		b = &burst{}
		t.seen[key] = b
	}
	b.at = append(b.at, at)
	cut := 0
	for cut < len(b.at) && at.Sub(b.at[cut]) >= t.window {
		cut++
	}
	b.at = b.at[cut:]
	if len(b.at) < t.n {
		b.fired = false
		if len(b.at) == 0 {
			delete(t.seen, key)
		}
		t.mu.Unlock()
		return
	}
	fire := !b.fired
	b.fired = true
	a := Alert{Consumer: e.Consumer, Group: id, Cause: cause, Count: len(b.at), Window: t.window, First: b.at[0], Last: at, Example: e}
	t.mu.Unlock()
	if fire {
		t.alert(a)
	}
}
