package catalogueevents

import (
	"testing"

	"github.com/go-faster/jx"

	"github.com/warrenbus/warren/runtime/codec"
)

// BenchmarkValidateOrderPlaced measures the reference validator on an
// order.placed payload beside the generated one-pass decoding of the
// same bytes and Validate on the decoded value.
func BenchmarkValidateOrderPlaced(b *testing.B) {
	sample := []byte(orderJSON)
	b.Run("reference", func(b *testing.B) {
		b.SetBytes(int64(len(sample)))
		b.ReportAllocs()
		for b.Loop() {
			if err := FactOrderPlaced.Validate(sample); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("generated", func(b *testing.B) {
		b.SetBytes(int64(len(sample)))
		b.ReportAllocs()
		d := jx.GetDecoder()
		for b.Loop() {
			d.ResetBytes(sample)
			var o OrderPlaced
			if err := codec.DecodeValue(d, &o); err != nil {
				b.Fatal(err)
			}
		}
	})
	var o OrderPlaced
	if err := o.UnmarshalJSON(sample); err != nil {
		b.Fatal(err)
	}
	b.Run("Validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := o.Validate(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
