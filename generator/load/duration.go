package load

import (
	"fmt"
	"math"
	"regexp"
	"time"
)

// durationSyntax is what time.ParseDuration reads, less the sign: a text
// of this form that it still refuses is too long for a time.Duration,
// which holds about 292 years. Saying "expected a duration" of
// "100000000h" would send its author looking for a typo that is not there.
var durationSyntax = regexp.MustCompile(`^(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)

// longestDuration is the longest duration warren reads.
const longestDuration = time.Duration(math.MaxInt64)

// badDuration says what was expected of v, a manifest value that
// time.ParseDuration refused, where a duration such as example goes: a
// duration no longer than the longest, counted in whole units of unit (the
// field's own granularity), when v is one but too long, else a duration at
// all.
func badDuration(v any, example string, unit time.Duration) string {
	if s, ok := v.(string); ok && durationSyntax.MatchString(s) {
		return fmt.Sprintf("expected a duration of at most %q (about 292 years), got %s", longestDuration.Truncate(unit).String(), describe(v))
	}
	return fmt.Sprintf("expected a duration such as %q, got %s", example, describe(v))
}
