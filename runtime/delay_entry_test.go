package runtime

import (
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime/topology"
)

// A delayed fact enters the delay levels at its delay's highest 1 digit,
// the delay rounded up to a millisecond first, as its routing key is.
func TestDelayedFactEntersAtItsHighestDigit(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int
	}{
		{time.Microsecond, 0},
		{time.Millisecond, 0},
		{1500 * time.Microsecond, 1},
		{3 * time.Millisecond, 1},
		{4 * time.Millisecond, 2},
		{time.Minute, 15},
		{48 * time.Hour, 27},
		{topology.MaxDelay, topology.DelayLevels - 1},
	} {
		if got := entryLevel(c.d); got != c.want {
			t.Errorf("entryLevel(%s) = %d, want %d", c.d, got, c.want)
		}
	}
}
