package golden_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/go-faster/jx"

	"github.com/warrenbus/warren/runtime/codec"
)

// BenchmarkValidate measures, per golden fact and on the same bytes (its
// first valid sample), the reference validator (the embedded schema, as
// Fact.Validate runs it) beside the generated decoding, which fills the
// Go value and checks it in one pass, and beside Validate on a value
// already decoded.
//
//	go test ./golden -run '^$' -bench Validate -benchmem
func BenchmarkValidate(b *testing.B) {
	samples := samplesOf(b)
	keys := make([]string, 0, len(samples))
	for k := range samples {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		f := facts[key]
		var sample []byte
		for _, s := range samples[key] {
			if f.desc.Validate(s) == nil && f.generated(s) == nil && len(s) > len(sample) {
				sample = s // the largest valid one
			}
		}
		if sample == nil {
			continue
		}
		name := strings.ReplaceAll(key, "/", ":")
		b.Run(name+"/reference", func(b *testing.B) {
			b.SetBytes(int64(len(sample)))
			b.ReportAllocs()
			for b.Loop() {
				if err := f.desc.Validate(sample); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/generated", func(b *testing.B) {
			b.SetBytes(int64(len(sample)))
			b.ReportAllocs()
			d := jx.GetDecoder()
			for b.Loop() {
				d.ResetBytes(sample)
				if err := codec.DecodeValue(d, f.new()); err != nil {
					b.Fatal(err)
				}
			}
		})
		v := f.new()
		if err := f.generated(sample); err != nil {
			b.Fatal(err)
		}
		_ = codec.Unmarshal(sample, v)
		b.Run(name+"/Validate", func(b *testing.B) {
			b.ReportAllocs()
			val := v.(codec.Validator)
			for b.Loop() {
				if err := val.Validate(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
