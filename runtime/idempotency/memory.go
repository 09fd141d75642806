package idempotency

import (
	"context"
	"sync"
	"time"
)

// MemoryConfig configures a [MemoryGuard].
type MemoryConfig struct {
	Now func() time.Time // clock that stamps claims and dates Prune's window; default time.Now
}

// MemoryGuard keeps claims in the process's memory, with the semantics of
// [SQLGuard] but no transaction: for tests, and for a single process whose
// handlers' effects are themselves in memory or idempotent. Claims do not
// survive a restart and are not shared between processes, so it cannot
// deduplicate across replicas.
//
// A claim is pending while fn runs. A duplicate that arrives meanwhile waits
// for it to settle: it is a duplicate if fn succeeded, and claims the message
// itself if fn failed. A MemoryGuard is safe for concurrent use; its zero
// value is not usable, use [NewMemoryGuard].
type MemoryGuard struct {
	now    func() time.Time
	mu     sync.Mutex
	claims map[claimKey]*memoryClaim
}

type claimKey struct{ consumer, messageID string }

type memoryClaim struct {
	at      time.Time
	settled chan struct{} // closed once fn has returned and the claim is kept or dropped
	kept    bool          // written before settled is closed
}

// NewMemoryGuard returns an empty memory guard.
func NewMemoryGuard(cfg MemoryConfig) *MemoryGuard {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &MemoryGuard{now: cfg.Now, claims: make(map[claimKey]*memoryClaim)}
}

// Run claims (consumer, messageID) and, if the claim is new, calls fn; the
// claim is kept only if fn returns nil and ctx is still live. duplicate is
// true, and fn is not called, when the pair was claimed and kept before.
// fn's error is returned as it is; if fn panics, the claim is dropped and
// the panic goes on. The only other errors are [ErrNoKey] and ctx's, when it
// ends before a claim could be made or kept. [Tx] finds no transaction in
// fn's context.
func (g *MemoryGuard) Run(ctx context.Context, consumer, messageID string, fn func(ctx context.Context) error) (duplicate bool, err error) {
	if err := checkKey(consumer, messageID); err != nil {
		return false, err
	}
	c, dup, err := g.claim(ctx, consumer, messageID)
	if err != nil || dup {
		return dup, err
	}
	key := claimKey{consumer, messageID}
	kept := false
	defer func() { g.settle(key, c, kept) }() // also when fn panics
	if err := fn(ctx); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, claimError(ctx, "keep claim", consumer, messageID, err)
	}
	kept = true
	return false, nil
}

// claim makes the pending claim of (consumer, messageID), waiting for one
// pending in another call; dup reports a claim kept before.
func (g *MemoryGuard) claim(ctx context.Context, consumer, messageID string) (c *memoryClaim, dup bool, err error) {
	key := claimKey{consumer, messageID}
	for c == nil {
		if err := ctx.Err(); err != nil {
			return nil, false, claimError(ctx, "claim", consumer, messageID, err)
		}
		g.mu.Lock()
		other, ok := g.claims[key]
		if !ok {
			c = &memoryClaim{at: g.now(), settled: make(chan struct{})}
			g.claims[key] = c
		}
		g.mu.Unlock()
		if ok {
			select {
			case <-other.settled:
				if other.kept {
					return nil, true, nil
				}
			case <-ctx.Done():
				return nil, false, claimError(ctx, "wait for pending claim", consumer, messageID, ctx.Err())
			}
		}
	}
	return c, false, nil
}

func (g *MemoryGuard) settle(key claimKey, c *memoryClaim, kept bool) {
	g.mu.Lock()
	c.kept = kept
	if !kept {
		delete(g.claims, key)
	}
	g.mu.Unlock()
	close(c.settled)
}

// Prune deletes kept claims made more than olderThan ago (DefaultRetention
// when olderThan is zero or negative) and returns how many it deleted.
// Pending claims are never deleted.
func (g *MemoryGuard) Prune(ctx context.Context, olderThan time.Duration) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	cutoff := g.now().Add(-retention(olderThan))
	g.mu.Lock()
	defer g.mu.Unlock()
	var n int64
	for key, c := range g.claims {
		if c.kept && c.at.Before(cutoff) {
			delete(g.claims, key)
			n++
		}
	}
	return n, nil
}
