package codec

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/go-faster/jx"
)

// WriteTime writes a time as time.Time's MarshalJSON does, for every
// fraction and zone, and allocates nothing.
func TestWriteTimeMatchesEncodingJSON(t *testing.T) {
	plus530 := time.FixedZone("", 5*3600+30*60)
	times := []time.Time{
		time.Date(2026, 12, 6, 23, 5, 0, 0, time.UTC),
		time.Date(2026, 12, 6, 23, 5, 0, 120_000_000, time.UTC),
		time.Date(2026, 12, 6, 23, 5, 0, 123_456_789, plus530),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.FixedZone("", -12*3600)),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Unix(0, 0).UTC(),
	}
	e := jx.GetEncoder()
	for _, tm := range times {
		want, err := json.Marshal(tm)
		if err != nil {
			t.Fatal(err)
		}
		e.Reset()
		WriteTime(e, tm)
		if string(e.Bytes()) != string(want) {
			t.Errorf("WriteTime(%v) = %s, want %s", tm, e.Bytes(), want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { e.Reset(); WriteTime(e, times[2]) }); n != 0 {
		t.Errorf("WriteTime allocates %v times, want 0", n)
	}
}
