package codec_test

import (
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime/codec"
)

// A date-time that the format date-time accepts but Go's RFC 3339 parser
// does not (lower-case t and z, which RFC 3339 allows; a leap second)
// decodes, whether the format is asserted or not: a valid fact is never
// refused by its generated type.
func TestTimeReadsWhatTheFormatAccepts(t *testing.T) {
	asserted := &codec.String{Format: codec.FormatOf("date-time"), MaxLength: -1}
	for _, tt := range []struct {
		text string
		want time.Time
	}{
		{`"2026-12-07t10:00:00z"`, time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)},
		{`"2026-12-07t10:00:00.5+01:00"`, time.Date(2026, 12, 7, 9, 0, 0, 500_000_000, time.UTC)},
		{`"2016-12-31T23:59:60Z"`, time.Date(2017, 1, 1, 0, 0, 0, 0, time.UTC)},
		{`"1990-12-31T15:59:60-08:00"`, time.Date(1991, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		got, err := codec.Time(dec(tt.text))
		if err != nil || !got.Equal(tt.want) {
			t.Errorf("Time(%s) = %v, %v; want %v", tt.text, got, err, tt.want)
		}
		got, err = asserted.Time(dec(tt.text))
		if err != nil || !got.Equal(tt.want) {
			t.Errorf("String{date-time}.Time(%s) = %v, %v; want %v", tt.text, got, err, tt.want)
		}
	}
	for _, text := range []string{`"2026-12-07 10:00:00Z"`, `"2026-12-07T10:00:61Z"`, `"2026-12-07T10:00:00"`, `"2026-12-07x10:00:00z"`} {
		if got, err := codec.Time(dec(text)); err == nil {
			t.Errorf("Time(%s) = %v, want an error", text, got)
		}
	}
}
