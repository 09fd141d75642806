package topology

import (
	"fmt"
	"strconv"
	"time"
)

// WorkQueue returns the name of consumer's work queue: the consumer name.
func WorkQueue(consumer string) string { return consumer }

// PoisonQueue returns the name of consumer's poison queue, "<consumer>.poison".
func PoisonQueue(consumer string) string { return consumer + ".poison" }

// RetryQueue returns the name of consumer's delay queue for one delay,
// "<consumer>.retry.<delay>", with the delay written by [FormatDelay].
func RetryQueue(consumer string, delay time.Duration) string {
	return consumer + ".retry." + FormatDelay(delay)
}

// FormatDelay writes d as a whole number of the largest unit among h, m, s
// and ms that divides it exactly: 20ms, 1500ms, 4s, 90s, 1m, 2h. Unlike
// [time.Duration.String] it never mixes units or uses fractions, so a queue
// name stays short and a ladder step has exactly one spelling. A delay that
// is not a positive whole number of milliseconds has no queue name; Build
// rejects it, and FormatDelay falls back to the nanosecond count.
func FormatDelay(d time.Duration) string {
	units := []struct {
		size time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}}
	if d > 0 {
		for _, u := range units {
			if d%u.size == 0 {
				return strconv.FormatInt(int64(d/u.size), 10) + u.name
			}
		}
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}

func checkDelay(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("delay %s: must be positive", d)
	}
	if d%time.Millisecond != 0 {
		return fmt.Errorf("delay %s: must be a whole number of milliseconds (queue TTLs are in ms)", d)
	}
	return nil
}
