package bench

import (
	"testing"

	"github.com/go-faster/jx"

	"github.com/warrenbus/warren/bench/benchevents"
	"github.com/warrenbus/warren/runtime/codec"
)

// BenchmarkCodec measures the generated codec of the benchmarks' fact
// alone, without a broker: decoding and checking its JSON in one pass,
// encoding it, and checking a value built in Go, as consuming and
// publishing do.
func BenchmarkCodec(b *testing.B) {
	o := order(7)
	data, err := o.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		d := jx.GetDecoder()
		for b.Loop() {
			var v benchevents.OrderPlaced
			d.ResetBytes(data)
			if err := codec.DecodeValue(d, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		e := jx.GetEncoder()
		for b.Loop() {
			e.Reset()
			codec.EncodeValue(e, &o)
		}
	})
	b.Run("validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := o.Validate(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestCodecRoundTrip checks that the fact the benchmarks use decodes to
// what was encoded and passes its own checks.
func TestCodecRoundTrip(t *testing.T) {
	o := order(7)
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	data, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var back benchevents.OrderPlaced
	if err := codec.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if again, err := back.MarshalJSON(); err != nil || string(again) != string(data) {
		t.Fatalf("round trip changed the JSON:\n%s\n%s", data, again)
	}
}
